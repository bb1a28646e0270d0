package runtime

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

// TestValidateObservation: the rules of observe's params that JSON types
// cannot express, each error naming the wire field. (Wrong JSON types are
// the decoder's: rpc/decode_test.go.)
func TestValidateObservation(t *testing.T) {
	src := `"uri":"file:///r/a.go","text":"x"`
	tests := []struct {
		name   string
		params string
		field  string // "" = valid
	}{
		{"valid", `{"agent":"main","sources":[{` + src + `}]}`, ""},
		{"valid event without sources", `{"agent":"main","kind":"event"}`, ""},
		{"empty params", `{}`, "agent"},
		{"missing agent", `{"sources":[{` + src + `}]}`, "agent"},
		{"negative turn", `{"agent":"a","turn":-1,"sources":[{` + src + `}]}`, "turn"},
		{"no sources", `{"agent":"a"}`, "sources"},
		{"second uri missing", `{"agent":"a","sources":[{` + src + `},{"text":""}]}`, "sources[1].uri"},
		{"relative uri", `{"agent":"a","sources":[{"uri":"a.go","text":""}]}`, "sources[0].uri"},
		{"plain path", `{"agent":"a","sources":[{"uri":"/r/a.go","text":""}]}`, "sources[0].uri"},
		{"event source checked too", `{"agent":"a","kind":"event","sources":[{"uri":"a.go"}]}`, "sources[0].uri"},
		{"range zero start", `{"agent":"a","sources":[{` + src + `,"range":{"start":0,"end":2}}]}`, "sources[0].range.start"},
		{"range end absent", `{"agent":"a","sources":[{` + src + `,"range":{"start":2}}]}`, "sources[0].range.end"},
		{"range inverted", `{"agent":"a","sources":[{` + src + `,"range":{"start":5,"end":2}}]}`, "sources[0].range.end"},
		{"bad kind", `{"agent":"a","kind":"read","sources":[{` + src + `}]}`, "kind"},
		{"bad policy action", `{"agent":"a","policy":{"local":"explode"},"sources":[{` + src + `}]}`, "policy.local"},
		{"negative policy age", `{"agent":"a","policy":{"maxAgeTurns":-1},"sources":[{` + src + `}]}`, "policy.maxAgeTurns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o protocol.ObserveParams
			if err := json.Unmarshal([]byte(tt.params), &o); err != nil {
				t.Fatal(err)
			}
			err := validateObservation(&o)
			var fe *FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.field == "":
			case !errors.As(err, &fe) || !errors.Is(err, ErrInvalidParams):
				t.Fatalf("err = %v, want a field error naming %q", err, tt.field)
			case fe.Field != tt.field:
				t.Fatalf("field = %q (%v), want %q", fe.Field, err, tt.field)
			}
		})
	}
}

// TestLocatorParamsZeroKept: a threshold given as 0 is used as 0; only an
// omitted one takes the default (issue 10, bug 7: contextLines 0 and
// minSubstitutions 0 were silently replaced by the defaults).
func TestLocatorParamsZeroKept(t *testing.T) {
	for _, tc := range []struct {
		name       string
		json       string
		ctx, subst int
	}{
		{"omitted", `{}`, 3, 2},
		{"zero kept", `{"contextLines":0,"minSubstitutions":0}`, 0, 0},
		{"given", `{"contextLines":5,"minSubstitutions":1}`, 5, 1},
	} {
		var over Config
		if err := json.Unmarshal([]byte(tc.json), &over.Locator); err != nil {
			t.Fatal(err)
		}
		p := LocatorParams(over.Locator)
		if p.ContextLines != tc.ctx || p.MinSubstitutions != tc.subst {
			t.Errorf("%s: contextLines %d, minSubstitutions %d; want %d, %d", tc.name, p.ContextLines, p.MinSubstitutions, tc.ctx, tc.subst)
		}
		m := New(Config{Locator: over.Locator})
		if m.params != p {
			t.Errorf("%s: the manager uses %+v, want %+v", tc.name, m.params, p)
		}
		m.Close()
	}
}
