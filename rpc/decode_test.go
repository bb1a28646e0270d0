package rpc

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/runtime"

	"github.com/concord-ctx/concord/protocol"
)

func raw(s string) *json.RawMessage { r := json.RawMessage(s); return &r }

// TestDecodeParamsField checks that params of the wrong JSON type name the
// field in wire notation, array indices and map keys included (the rules
// JSON types cannot express are the core's: runtime/validate_test.go).
func TestDecodeParamsField(t *testing.T) {
	src := `"uri":"file:///r/a.go","text":"x"`
	tests := []struct {
		name   string
		params string
		field  string // "" = valid
	}{
		{"valid", `{"agent":"main","sources":[{` + src + `}]}`, ""},
		{"array params", `[1]`, "params"},
		{"agent wrong type", `{"agent":5,"sources":[{` + src + `}]}`, "agent"},
		{"turn wrong type", `{"agent":"a","turn":"6","sources":[{` + src + `}]}`, "turn"},
		{"turn fractional", `{"agent":"a","turn":6.5,"sources":[{` + src + `}]}`, "turn"},
		{"sources not an array", `{"agent":"a","sources":{}}`, "sources"},
		{"second uri wrong type", `{"agent":"a","sources":[{` + src + `},{"uri":5,"text":""}]}`, "sources[1].uri"},
		{"range start wrong type", `{"agent":"a","sources":[{` + src + `,"range":{"start":"1","end":2}}]}`, "sources[0].range.start"},
		{"policy age wrong type", `{"agent":"a","policy":{"maxAgeTurns":"3"},"sources":[{` + src + `}]}`, "policy.maxAgeTurns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p protocol.ObserveParams
			var r *json.RawMessage
			if tt.params != "" {
				r = raw(tt.params)
			}
			err := decodeParams(r, &p)
			var fe *fieldError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.field == "":
			case !errors.As(err, &fe):
				t.Fatalf("err = %v, want a field error naming %q", err, tt.field)
			case fe.Field != tt.field:
				t.Fatalf("field = %q (%v), want %q", fe.Field, err, tt.field)
			}
		})
	}
}

func TestDecodeInitializeMapField(t *testing.T) {
	var p protocol.InitializeParams
	err := decodeParams(raw(`{"protocolVersion":1,"roots":["/r"],"policy":{"byType":{"res":{"maxAgeTurns":"x"}}}}`), &p)
	var fe *fieldError
	if !errors.As(err, &fe) || fe.Field != "policy.byType.res.maxAgeTurns" {
		t.Fatalf("err = %v, want field policy.byType.res.maxAgeTurns", err)
	}
	if err := decodeParams(raw(`{"protocolVersion":1,"roots":["rel"]}`), &p); err != nil {
		t.Fatal(err)
	}
	err = p.Validate()
	if !errors.As(err, &fe) || fe.Field != "roots[0]" {
		t.Fatalf("err = %v, want field roots[0]", err)
	}
}

// FuzzObserveParams: decoding arbitrary params never panics, and either
// yields params or a field error naming a field.
func FuzzObserveParams(f *testing.F) {
	for _, seed := range []string{
		`{"agent":"main","turn":6,"anchor":"call_1","sources":[{"uri":"file:///r/a","range":{"start":1,"end":3},"text":"a\nb\nc"}]}`,
		`{"agent":"a","sources":[{"uri":5}]}`,
		`{"agent":"a","policy":{"local":"x"},"sources":[]}`,
		`{"sources":[{"range":{"start":"1"}}]}`,
		`[]`, `null`, `{"agent":"a","kind":"event"}`,
	} {
		f.Add([]byte(seed))
	}
	// What the server decodes (observeWire, which sees an absent text) and
	// the protocol type must agree: the same field named in an error, the
	// same params when both decode.
	f.Fuzz(func(t *testing.T, in []byte) {
		var p protocol.ObserveParams
		var w observeWire
		r := json.RawMessage(in)
		err := decodeParams(&r, &p)
		werr := decodeParams(&r, &w)
		if (err == nil) != (werr == nil) {
			t.Fatalf("protocol type: %v; wire type: %v", err, werr)
		}
		if err == nil {
			got, cerr := w.params()
			if cerr == nil && !reflect.DeepEqual(got, p) {
				t.Fatalf("wire type decodes %+v, protocol type %+v", got, p)
			}
			return
		}
		var fe, wfe *fieldError
		if !errors.As(err, &fe) || fe.Field == "" || !errors.As(werr, &wfe) {
			t.Fatalf("error %v / %v is not a field error", err, werr)
		}
		if fe.Field != wfe.Field {
			t.Fatalf("protocol type names %q, wire type %q", fe.Field, wfe.Field)
		}
	})
}

// TestMergePolicy: initialize's policy lays over the --policy file field by
// field, per layer and key.
func TestMergePolicy(t *testing.T) {
	base, err := ParsePolicy([]byte(`{"global":{"local":"patch","drift":"annotate","maxAgeTurns":5},"byType":{"res":{"maxAgeTurns":10,"drift":"refresh"}},"bySource":{"file:///r/gen.go":{"local":"suppress"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var over protocol.PolicyConfig
	if err := json.Unmarshal([]byte(`{"global":{"drift":"suppress"},"byType":{"res":{"maxAgeTurns":3},"mcp":{"local":"refresh"}}}`), &over); err != nil {
		t.Fatal(err)
	}
	got := runtime.MergePolicy(base, &over)
	js, _ := json.Marshal(got)
	want := `{"global":{"local":"patch","drift":"suppress","maxAgeTurns":5},"byType":{"mcp":{"local":"refresh"},"res":{"drift":"refresh","maxAgeTurns":3}},"bySource":{"file:///r/gen.go":{"local":"suppress"}}}`
	if string(js) != want {
		t.Errorf("merged\n got %s\nwant %s", js, want)
	}
	// The base is not modified.
	if js, _ := json.Marshal(base); !strings.Contains(string(js), `"res":{"drift":"refresh","maxAgeTurns":10}`) {
		t.Errorf("base changed: %s", js)
	}
	if _, err := ParsePolicy([]byte(`{"bySource":{"file:///x":{"drift":"nope"}}}`)); err == nil || !strings.Contains(err.Error(), "policy.bySource.file:///x.drift") {
		t.Errorf("bad policy file: err = %v", err)
	}
}

// TestParsePolicyNamesFields: a --policy file's errors name fields as
// initialize's policy does, wrong types and malformed JSON included.
func TestParsePolicyNamesFields(t *testing.T) {
	for in, want := range map[string]string{
		`{"global":{"local":"zap"}}`:             "policy.global.local",
		`{"global":{"local":5}}`:                 "policy.global.local",
		`{"byType":{"res":{"maxAgeTurns":"x"}}}`: "policy.byType.res.maxAgeTurns",
		`{bad`:                                   "policy",
		`[1]`:                                    "policy",
	} {
		_, err := ParsePolicy([]byte(in))
		var fe *fieldError
		if !errors.As(err, &fe) || fe.Field != want {
			t.Errorf("%s: err %v, want field %s", in, err, want)
		}
	}
}
