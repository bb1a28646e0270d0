package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// typeScript writes bindings/ts/src/wire.ts from the schema document.
func typeScript(doc *Document) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n", header)
	fmt.Fprintf(&b, "//\n// %s: types and constants only.\n", doc.Title)
	for i, c := range doc.Consts {
		if i == 0 || c.Group != doc.Consts[i-1].Group {
			b.WriteByte('\n')
			tsHeading(&b, c.Group)
		}
		tsDoc(&b, "", c.Description)
		v, err := tsLiteral(c.Value)
		if err != nil {
			return nil, fmt.Errorf("const %s: %w", c.Name, err)
		}
		fmt.Fprintf(&b, "export const %s = %s\n", c.Name, v)
	}
	for _, d := range doc.Defs {
		b.WriteByte('\n')
		tsDoc(&b, "", d.Schema.Description)
		if d.Schema.Enum != nil {
			fmt.Fprintf(&b, "export type %s = %s\n", d.Name, tsUnion(d.Schema.Enum))
			continue
		}
		fmt.Fprintf(&b, "export interface %s {\n", d.Name)
		req := set(d.Schema.Required)
		for _, p := range *d.Schema.Properties {
			tsDoc(&b, "  ", p.Schema.Description)
			opt := "?"
			if req[p.Name] {
				opt = ""
			}
			fmt.Fprintf(&b, "  %s%s: %s\n", tsKey(p.Name), opt, tsType(p.Schema))
		}
		b.WriteString("}\n")
	}
	return b.Bytes(), nil
}

// tsType is the TypeScript type of a schema node.
func tsType(s *Schema) string {
	switch {
	case s.Ref != "":
		return refName(s.Ref)
	case s.Type == "string":
		return "string"
	case s.Type == "integer", s.Type == "number":
		return "number"
	case s.Type == "boolean":
		return "boolean"
	case s.Type == "array":
		return tsType(s.Items) + "[]"
	case s.Type == "object" && s.AdditionalProperties != nil:
		if s.PropertyNames != nil {
			// Not every value of the enum need be a key.
			return fmt.Sprintf("Partial<Record<%s, %s>>", tsType(s.PropertyNames), tsType(s.AdditionalProperties))
		}
		return fmt.Sprintf("Record<string, %s>", tsType(s.AdditionalProperties))
	}
	return "unknown"
}

func refName(ref string) string {
	return strings.TrimPrefix(ref, "#/$defs/")
}

func tsUnion(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	return strings.Join(quoted, " | ")
}

func tsLiteral(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", fmt.Errorf("unsupported constant type %T", v)
}

// tsKey quotes a property name that is not an identifier ($/… style).
func tsKey(name string) string {
	if isIdent(name) {
		return name
	}
	return strconv.Quote(name)
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// tsDoc writes a JSDoc comment (nothing for an empty text).
func tsDoc(b *bytes.Buffer, indent, text string) {
	if text == "" {
		return
	}
	text = strings.ReplaceAll(text, "*/", "*\\/")
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, text)
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		fmt.Fprintf(b, "%s%s\n", indent, strings.TrimRight(" * "+l, " "))
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// tsHeading writes a const group's doc as line comments: a heading, not the
// JSDoc of its first constant.
func tsHeading(b *bytes.Buffer, text string) {
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		fmt.Fprintf(b, "%s\n", strings.TrimRight("// "+l, " "))
	}
}
