package main

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// pyKeywords are the names a TypedDict key cannot have in class syntax.
var pyKeywords = set(strings.Fields(`False None True and as assert async await break class continue
	def del elif else except finally for from global if import in is lambda nonlocal not or pass
	raise return try while with yield`))

// python writes bindings/python/concord_openhands/wire.py from the schema
// document, compact: the bindings' subset, one-line docs.
func python(doc *Document) ([]byte, error) {
	var body bytes.Buffer
	used := map[string]bool{"TypedDict": true}
	for _, c := range doc.Consts {
		v, err := pyLiteral(c.Value)
		if err != nil {
			return nil, fmt.Errorf("const %s: %w", c.Name, err)
		}
		fmt.Fprintf(&body, "%s = %s%s\n", upperSnake(c.Name), v, pyTrailing(c.Description))
	}
	for _, d := range doc.Defs {
		if d.Schema.Enum != nil {
			used["Literal"] = true
			fmt.Fprintf(&body, "%s = Literal[%s]%s\n", d.Name, strings.ReplaceAll(tsUnion(d.Schema.Enum), " | ", ", "), pyTrailing(d.Schema.Description))
			continue
		}
		pyTypedDict(&body, d, used)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", header)
	fmt.Fprintf(&b, "\"\"\"%s: types and constants only (what the bindings use; all in protocol/schema.json).\"\"\"\n", doc.Title)
	var names []string
	for n := range used {
		if n != "NotRequired" && n != "Required" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "from typing import %s\n", strings.Join(names, ", "))
	// NotRequired/Required are Python 3.11+; the package still imports on 3.9
	// (its stdlib modules need no SDK), where the markers are dropped.
	b.WriteString(`try:
    from typing import NotRequired, Required
except ImportError:  # Python < 3.11: no markers
    NotRequired = Required = type("_Marker", (), {"__class_getitem__": classmethod(lambda cls, item: item)})
`)
	b.Write(body.Bytes())
	return b.Bytes(), nil
}

// pyTypedDict writes one object definition. Mostly optional fields make a
// total=False dict with Required[...] marks, else NotRequired[...] marks.
func pyTypedDict(b *bytes.Buffer, d Def, used map[string]bool) {
	req := set(d.Schema.Required)
	props := *d.Schema.Properties
	total := 2*len(d.Schema.Required) >= len(props)
	field := func(p Prop) string {
		t := pyType(p.Schema, used)
		switch {
		case total && !req[p.Name]:
			return "NotRequired[" + t + "]"
		case !total && req[p.Name]:
			return "Required[" + t + "]"
		}
		return t
	}
	totalArg := ""
	if !total {
		totalArg = ", total=False"
	}
	classSyntax := true
	for _, p := range props {
		if !isIdent(p.Name) || strings.Contains(p.Name, "$") || pyKeywords[p.Name] {
			classSyntax = false
		}
	}
	doc := pyTrailing(d.Schema.Description)
	if classSyntax {
		fields := make([]string, len(props))
		for i, p := range props {
			fields[i] = p.Name + ": " + field(p)
		}
		if len(props) == 0 {
			fields = []string{"pass"}
		}
		fmt.Fprintf(b, "class %s(TypedDict%s):%s\n", d.Name, totalArg, doc)
		for _, l := range pack(fields, "; ", 100) {
			fmt.Fprintf(b, "    %s\n", l)
		}
		return
	}
	// A key that is a Python keyword ("global") needs the functional syntax.
	fields := make([]string, len(props))
	for i, p := range props {
		fields[i] = fmt.Sprintf("%q: %s,", p.Name, field(p))
	}
	fmt.Fprintf(b, "%s = TypedDict(%q, {%s\n", d.Name, d.Name, doc)
	for _, l := range pack(fields, " ", 100) {
		fmt.Fprintf(b, "    %s\n", l)
	}
	fmt.Fprintf(b, "}%s)\n", totalArg)
}

// pyType is the Python annotation of a schema node.
func pyType(s *Schema, used map[string]bool) string {
	switch {
	case s.Ref != "":
		return refName(s.Ref)
	case len(s.AnyOf) > 0:
		alts := make([]string, len(s.AnyOf))
		for i, a := range s.AnyOf {
			alts[i] = pyType(a, used)
		}
		return strings.Join(alts, " | ")
	case s.Type == "string":
		return "str"
	case s.Type == "integer":
		return "int"
	case s.Type == "number":
		return "float"
	case s.Type == "boolean":
		return "bool"
	case s.Type == "array":
		return "list[" + pyType(s.Items, used) + "]"
	case s.Type == "object" && s.AdditionalProperties != nil:
		key := "str"
		if s.PropertyNames != nil {
			key = pyType(s.PropertyNames, used)
		}
		return "dict[" + key + ", " + pyType(s.AdditionalProperties, used) + "]"
	}
	used["Any"] = true
	return "Any"
}

func pyLiteral(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x), nil // a Go quoted string is a valid Python one for these texts
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", fmt.Errorf("unsupported constant type %T", v)
}

// upperSnake spells a Go constant name the Python way: CodeParseError -> CODE_PARSE_ERROR.
func upperSnake(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// pyTrailing is a one-line doc as a trailing comment ("" for none).
func pyTrailing(text string) string {
	if text = oneLine(text); text == "" {
		return ""
	}
	return "  # " + text
}
