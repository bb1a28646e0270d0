package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// typeScript writes bindings/ts/src/wire.ts from the schema document,
// compact: the bindings' subset, one-line docs.
func typeScript(doc *Document) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n", header)
	fmt.Fprintf(&b, "// %s: types and constants only (what the bindings use; all in protocol/schema.json).\n", doc.Title)
	for _, c := range doc.Consts {
		v, err := tsLiteral(c.Value)
		if err != nil {
			return nil, fmt.Errorf("const %s: %w", c.Name, err)
		}
		fmt.Fprintf(&b, "export const %s = %s%s\n", c.Name, v, tsTrailing(c.Description))
	}
	for _, d := range doc.Defs {
		if d.Schema.Enum != nil {
			fmt.Fprintf(&b, "export type %s = %s%s\n", d.Name, tsUnion(d.Schema.Enum), tsTrailing(d.Schema.Description))
			continue
		}
		req := set(d.Schema.Required)
		props := *d.Schema.Properties
		fields := make([]string, len(props))
		for i, p := range props {
			opt := "?"
			if req[p.Name] {
				opt = ""
			}
			fields[i] = fmt.Sprintf("%s%s: %s", tsKey(p.Name), opt, tsType(p.Schema))
		}
		if line := fmt.Sprintf("export interface %s { %s }", d.Name, strings.Join(fields, "; ")); len(line) <= 110 {
			fmt.Fprintf(&b, "%s%s\n", line, tsTrailing(d.Schema.Description))
			continue
		}
		fmt.Fprintf(&b, "export interface %s {%s\n", d.Name, tsTrailing(d.Schema.Description))
		for _, l := range pack(fields, "; ", 100) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		b.WriteString("}\n")
	}
	return b.Bytes(), nil
}

// tsTrailing is a one-line doc as a trailing comment ("" for none).
func tsTrailing(text string) string {
	if text = oneLine(text); text == "" {
		return ""
	}
	return " // " + text
}

// tsType is the TypeScript type of a schema node.
func tsType(s *Schema) string {
	switch {
	case s.Ref != "":
		return refName(s.Ref)
	case len(s.AnyOf) > 0:
		alts := make([]string, len(s.AnyOf))
		for i, a := range s.AnyOf {
			alts[i] = tsType(a)
		}
		return strings.Join(alts, " | ")
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

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
