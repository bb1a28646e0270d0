package runtime

import (
	"maps"
	"slices"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// effective is a policy with every field resolved.
type effective struct {
	local, drift protocol.Action
	driftSet     bool // a layer chose drift (else it is the default, Suppress)
	maxAge       int
}

// resolve merges the layers block > source > resource type > global, field
// by field; invalid actions are skipped like empty ones. Caller holds m.mu.
func (m *Manager) resolve(b *block, s *source) effective {
	layers := make([]*protocol.Policy, 0, 4)
	if b != nil && b.policy != nil {
		layers = append(layers, b.policy)
	}
	if s != nil {
		if p, ok := m.bySource[s.id]; ok {
			layers = append(layers, &p)
		}
		if p, ok := m.policy.ByType[s.scheme]; ok {
			layers = append(layers, &p)
		}
	}
	layers = append(layers, &m.policy.Global)
	e := effective{local: protocol.Patch, drift: protocol.Suppress}
	var gotLocal, gotAge bool
	for _, p := range layers {
		if !gotLocal && validAction(p.Local) {
			e.local, gotLocal = p.Local, true
		}
		if !e.driftSet && validAction(p.Drift) {
			e.drift, e.driftSet = p.Drift, true
		}
		if !gotAge && p.MaxAgeTurns != nil && *p.MaxAgeTurns >= 0 {
			e.maxAge, gotAge = *p.MaxAgeTurns, true
		}
	}
	return e
}

func validAction(a protocol.Action) bool {
	switch a {
	case protocol.Patch, protocol.Refresh, protocol.Annotate, protocol.Suppress:
		return true
	}
	return false
}

// maxAge is the smallest positive age limit among the block's links; 0 = off.
func (m *Manager) maxAge(b *block) int {
	n := 0
	for _, l := range b.links {
		if a := m.resolve(b, l.src).maxAge; a > 0 && (n == 0 || a < n) {
			n = a
		}
	}
	return n
}

// ValidatePolicy checks one policy layer; field names it on the wire
// ("policy", "policy.global").
func ValidatePolicy(field string, p *protocol.Policy) error {
	if p == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		a    protocol.Action
	}{{"local", p.Local}, {"drift", p.Drift}} {
		if f.a != "" && !validAction(f.a) {
			return fieldErr(field+"."+f.name, "must be patch, refresh, annotate or suppress, not %q", f.a)
		}
	}
	if p.MaxAgeTurns != nil && *p.MaxAgeTurns < 0 {
		return fieldErr(field+".maxAgeTurns", "must be >= 0")
	}
	return nil
}

// ValidatePolicyConfig checks every layer; field names the whole ("policy").
// Keys are visited in sorted order, so the error named is deterministic.
func ValidatePolicyConfig(field string, c *protocol.PolicyConfig) error {
	if c == nil {
		return nil
	}
	if err := ValidatePolicy(field+".global", &c.Global); err != nil {
		return err
	}
	for _, layer := range []struct {
		name string
		m    map[string]protocol.Policy
	}{{"byType", c.ByType}, {"bySource", c.BySource}} {
		for _, k := range slices.Sorted(maps.Keys(layer.m)) {
			p := layer.m[k]
			if err := ValidatePolicy(field+"."+layer.name+"."+k, &p); err != nil {
				return err
			}
		}
	}
	return nil
}

// MergePolicy lays over on base, field by field within each layer and key;
// the result shares no map with either.
func MergePolicy(base protocol.PolicyConfig, over *protocol.PolicyConfig) protocol.PolicyConfig {
	out := protocol.PolicyConfig{Global: base.Global, ByType: maps.Clone(base.ByType), BySource: maps.Clone(base.BySource)}
	if over == nil {
		return out
	}
	out.Global = mergeOne(out.Global, over.Global)
	out.ByType = mergeLayer(out.ByType, over.ByType)
	out.BySource = mergeLayer(out.BySource, over.BySource)
	return out
}

func mergeLayer(base, over map[string]protocol.Policy) map[string]protocol.Policy {
	for k, p := range over {
		if base == nil {
			base = map[string]protocol.Policy{}
		}
		base[k] = mergeOne(base[k], p)
	}
	return base
}

func mergeOne(base, over protocol.Policy) protocol.Policy {
	if over.Local != "" {
		base.Local = over.Local
	}
	if over.Drift != "" {
		base.Drift = over.Drift
	}
	if over.MaxAgeTurns != nil {
		n := *over.MaxAgeTurns
		base.MaxAgeTurns = &n
	}
	return base
}

// ValidateLocator checks initialize's locator thresholds; field names the
// whole ("locator").
func ValidateLocator(field string, l *protocol.LocatorParams) error {
	switch {
	case l == nil:
	case l.MinSimilarity != nil && (*l.MinSimilarity < 0 || *l.MinSimilarity > 1):
		return fieldErr(field+".minSimilarity", "must be between 0 and 1")
	case l.SubstitutionRatio != nil && (*l.SubstitutionRatio < 0 || *l.SubstitutionRatio > 1):
		return fieldErr(field+".substitutionRatio", "must be between 0 and 1")
	case l.MinSubstitutions != nil && *l.MinSubstitutions < 0:
		return fieldErr(field+".minSubstitutions", "must be >= 0")
	case l.ContextLines != nil && *l.ContextLines < 0:
		return fieldErr(field+".contextLines", "must be >= 0")
	}
	return nil
}

// LocatorParams resolves the thresholds, the one place defaults are filled
// in: an omitted field is locator.DefaultParams', a present one is taken as
// given (0 included: contextLines 0 keeps no context).
func LocatorParams(l *protocol.LocatorParams) locator.Params {
	p := locator.DefaultParams()
	if l == nil {
		return p
	}
	if l.MinSimilarity != nil {
		p.MinSimilarity = *l.MinSimilarity
	}
	if l.SubstitutionRatio != nil {
		p.SubstitutionRatio = *l.SubstitutionRatio
	}
	if l.MinSubstitutions != nil {
		p.MinSubstitutions = *l.MinSubstitutions
	}
	if l.ContextLines != nil {
		p.ContextLines = *l.ContextLines
	}
	return p
}
