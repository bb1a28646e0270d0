package runtime

import (
	"encoding/json"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

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
		var over protocol.InitializeParams
		if err := json.Unmarshal([]byte(tc.json), &over.Locator); err != nil {
			t.Fatal(err)
		}
		p := LocatorParams(over.Locator)
		if p.ContextLines != tc.ctx || p.MinSubstitutions != tc.subst {
			t.Errorf("%s: contextLines %d, minSubstitutions %d; want %d, %d", tc.name, p.ContextLines, p.MinSubstitutions, tc.ctx, tc.subst)
		}
		m := New(Config{Options: over})
		if m.params != p {
			t.Errorf("%s: the manager uses %+v, want %+v", tc.name, m.params, p)
		}
		m.Close()
	}
}
