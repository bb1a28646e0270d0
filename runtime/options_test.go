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

// TestMergePolicyDerived: initialize's derived rule lies over the
// operator's, field by field like the others, in every layer.
func TestMergePolicyDerived(t *testing.T) {
	base := protocol.PolicyConfig{Global: protocol.Policy{Derived: protocol.DerivedRange, Local: protocol.Refresh},
		ByType: map[string]protocol.Policy{"file": {Derived: protocol.DerivedRange}}}
	for _, tc := range []struct {
		name       string
		over       *protocol.PolicyConfig
		global, ty string
	}{
		{"none", nil, protocol.DerivedRange, protocol.DerivedRange},
		{"global", &protocol.PolicyConfig{Global: protocol.Policy{Derived: protocol.DerivedMentioned}}, protocol.DerivedMentioned, protocol.DerivedRange},
		{"other field", &protocol.PolicyConfig{Global: protocol.Policy{Local: protocol.Patch}}, protocol.DerivedRange, protocol.DerivedRange},
		{"by type", &protocol.PolicyConfig{ByType: map[string]protocol.Policy{"file": {Derived: protocol.DerivedMentioned}}}, protocol.DerivedRange, protocol.DerivedMentioned},
	} {
		got := MergePolicy(base, tc.over)
		if got.Global.Derived != tc.global || got.ByType["file"].Derived != tc.ty {
			t.Errorf("%s: global %q, file %q; want %q, %q", tc.name, got.Global.Derived, got.ByType["file"].Derived, tc.global, tc.ty)
		}
	}
}
