package runtime

// The session's options (initialize's, protocol.InitializeParams) are
// checked by their Validate; what is resolved from them once is here: the
// locator thresholds with their defaults, and the operator's policy with
// initialize's laid over it.

import (
	"maps"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

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
	if over.Derived != "" {
		base.Derived = over.Derived
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
