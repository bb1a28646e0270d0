package runtime

// effective is a policy with every field resolved.
type effective struct {
	local, drift Action
	maxAge       int
}

// resolve merges the layers block > source > resource type > global, field
// by field; invalid actions are skipped like empty ones. Caller holds m.mu.
func (m *Manager) resolve(b *block, s *source) effective {
	layers := make([]*Policy, 0, 4)
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
	e := effective{local: Patch, drift: Suppress}
	var gotLocal, gotDrift, gotAge bool
	for _, p := range layers {
		if !gotLocal && validAction(p.Local) {
			e.local, gotLocal = p.Local, true
		}
		if !gotDrift && validAction(p.Drift) {
			e.drift, gotDrift = p.Drift, true
		}
		if !gotAge && p.MaxAgeTurns != nil && *p.MaxAgeTurns >= 0 {
			e.maxAge, gotAge = *p.MaxAgeTurns, true
		}
	}
	return e
}

func validAction(a Action) bool {
	switch a {
	case Patch, Refresh, Annotate, Suppress:
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
