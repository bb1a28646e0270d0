package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// decodeParams decodes a request's params into v (the core validates). Every
// failure is a *fieldError naming the field in the wire's own notation
// ("sources[1].uri"), including wrong-typed fields. Absent or null params
// decode as {} so that validation names the first missing field. Unknown
// fields are ignored, for forward compatibility.
func decodeParams(raw *json.RawMessage, v any) error {
	data := []byte("{}")
	if raw != nil {
		if t := bytes.TrimSpace(*raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
			data = t
		}
	}
	if data[0] != '{' {
		return invalidField("params", "must be an object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "params"
			} else {
				field = locateField(data, field, te.Value)
			}
			return invalidField(field, "must be %s, not %s", jsonKind(te.Type.Kind().String(), te.Type.String()), te.Value)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return invalidField("params", "malformed JSON at byte %d", se.Offset)
		}
		var fe *fieldError
		if errors.As(err, &fe) {
			return fe
		}
		return invalidField("params", "%v", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// jsonKind names a Go type the way a JSON user thinks of it.
func jsonKind(kind, typ string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "ptr":
		return jsonKind(strings.TrimPrefix(typ, "*"), typ)
	}
	return typ
}

// locateField turns encoding/json's dotted field path, which omits array
// indices and map keys ("sources.uri"), into the exact wire path
// ("sources[1].uri") by finding the first value along that path whose JSON
// kind matches what the decoder complained about.
func locateField(data []byte, field, kind string) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return field
	}
	if p, ok := findPath(doc, strings.Split(field, "."), kind, ""); ok {
		return p
	}
	return field
}

func findPath(v any, names []string, kind, prefix string) (string, bool) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if p, ok := findPath(e, names, kind, fmt.Sprintf("%s[%d]", prefix, i)); ok {
				return p, true
			}
		}
		return "", false
	case map[string]any:
		if len(names) == 0 {
			return prefix, kind == "object"
		}
		if e, ok := x[names[0]]; ok {
			return findPath(e, names[1:], kind, join(prefix, names[0]))
		}
		// A map level (byType, bySource): its keys are not in the path.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := findPath(x[k], names, kind, join(prefix, k)); ok {
				return p, true
			}
		}
		return "", false
	}
	if len(names) != 0 {
		return "", false
	}
	base := func(k string) string { b, _, _ := strings.Cut(k, " "); return b }
	return prefix, base(valueKind(v)) == base(kind)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// valueKind mirrors UnmarshalTypeError.Value ("string", "number", "bool", …).
func valueKind(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err != nil {
			return "number " + string(x)
		}
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	case []any:
		return "array"
	}
	return "object"
}
