package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
			field := wireField(reflect.TypeOf(v), te.Field)
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

// wireField drops from encoding/json's field path the names of embedded
// structs (a wire type that embeds a protocol type, observeWire), which the
// wire does not have: "sources.Source.uri" is "sources.uri".
func wireField(t reflect.Type, path string) string {
	if path == "" {
		return ""
	}
	var out []string
	for _, name := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			out = append(out, name)
			continue
		}
		if f, ok := t.FieldByName(name); ok && f.Anonymous {
			t = f.Type
			continue
		}
		out = append(out, name)
		if f, ok := jsonField(t, name); ok {
			t = f.Type
		}
	}
	return strings.Join(out, ".")
}

// jsonField finds t's field named name on the wire: its own fields first,
// as encoding/json has them shadow promoted ones, then the embedded ones'.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.Anonymous && (tag == name || tag == "" && f.Name == name) {
			return f, true
		}
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct {
			if g, ok := jsonField(f.Type, name); ok {
				return g, true
			}
		}
	}
	return reflect.StructField{}, false
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
