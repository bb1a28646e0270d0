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

// python writes bindings/python/concord_openhands/wire.py from the schema document.
func python(doc *Document) ([]byte, error) {
	var body bytes.Buffer
	used := map[string]bool{"TypedDict": true}
	for i, c := range doc.Consts {
		if i == 0 || c.Group != doc.Consts[i-1].Group {
			body.WriteByte('\n')
			pyComment(&body, "", c.Group)
		}
		pyComment(&body, "", c.Description)
		v, err := pyLiteral(c.Value)
		if err != nil {
			return nil, fmt.Errorf("const %s: %w", c.Name, err)
		}
		fmt.Fprintf(&body, "%s = %s\n", upperSnake(c.Name), v)
	}
	for _, d := range doc.Defs {
		body.WriteString("\n\n")
		if d.Schema.Enum != nil {
			pyComment(&body, "", d.Schema.Description)
			used["Literal"] = true
			fmt.Fprintf(&body, "%s = Literal[%s]\n", d.Name, strings.ReplaceAll(tsUnion(d.Schema.Enum), " | ", ", "))
			continue
		}
		pyTypedDict(&body, d, used)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", header)
	fmt.Fprintf(&b, "\"\"\"%s: types and constants only.\"\"\"\n\n", doc.Title)
	b.WriteString("import sys\n")
	var names []string
	for n := range used {
		if n != "NotRequired" && n != "Required" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "from typing import %s\n\n", strings.Join(names, ", "))
	// NotRequired/Required are Python 3.11+; the package still imports on 3.9
	// (its stdlib modules need no SDK), where the markers are dropped.
	b.WriteString(`if sys.version_info >= (3, 11):
    from typing import NotRequired, Required
else:

    class _Marker:
        def __class_getitem__(cls, item):
            return item

    NotRequired = Required = _Marker
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
	if classSyntax {
		fmt.Fprintf(b, "class %s(TypedDict%s):\n", d.Name, totalArg)
		pyDocstring(b, d.Schema.Description)
		for _, p := range props {
			pyComment(b, "    ", p.Schema.Description)
			fmt.Fprintf(b, "    %s: %s\n", p.Name, field(p))
		}
		if len(props) == 0 {
			b.WriteString("    pass\n")
		}
		return
	}
	// A key that is a Python keyword ("global") needs the functional syntax.
	pyComment(b, "", d.Schema.Description)
	fmt.Fprintf(b, "%s = TypedDict(\n    %q,\n    {\n", d.Name, d.Name)
	for _, p := range props {
		pyComment(b, "        ", p.Schema.Description)
		fmt.Fprintf(b, "        %q: %s,\n", p.Name, field(p))
	}
	fmt.Fprintf(b, "    }%s,\n)\n", strings.Replace(totalArg, ", ", ",\n    ", 1))
}

// pyType is the Python annotation of a schema node.
func pyType(s *Schema, used map[string]bool) string {
	switch {
	case s.Ref != "":
		return refName(s.Ref)
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

func pyComment(b *bytes.Buffer, indent, text string) {
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		fmt.Fprintf(b, "%s%s\n", indent, strings.TrimRight("# "+l, " "))
	}
}

func pyDocstring(b *bytes.Buffer, text string) {
	if text == "" {
		return
	}
	text = strings.ReplaceAll(text, `"""`, `\"\"\"`)
	if !strings.Contains(text, "\n") {
		fmt.Fprintf(b, "    \"\"\"%s\"\"\"\n\n", text)
		return
	}
	fmt.Fprintf(b, "    \"\"\"%s\n    \"\"\"\n\n", strings.ReplaceAll(text, "\n", "\n    "))
}
