package runtime

import (
	"maps"

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
		if p, ok := m.opts.Policy.ByType[s.scheme]; ok {
			layers = append(layers, &p)
		}
	}
	layers = append(layers, &m.opts.Policy.Global)
	e := effective{local: protocol.Patch, drift: protocol.Suppress}
	var gotLocal, gotAge bool
	for _, p := range layers {
		if !gotLocal && p.Local.Valid() {
			e.local, gotLocal = p.Local, true
		}
		if !e.driftSet && p.Drift.Valid() {
			e.drift, e.driftSet = p.Drift, true
		}
		if !gotAge && p.MaxAgeTurns != nil && *p.MaxAgeTurns >= 0 {
			e.maxAge, gotAge = *p.MaxAgeTurns, true
		}
	}
	return e
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
