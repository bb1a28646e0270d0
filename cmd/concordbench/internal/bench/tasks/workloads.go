package tasks

import (
	"fmt"
	"slices"
)

// Workloads, in table order. hotpot, repeated, edits, concurrent and
// inflight are question tasks (HotpotQA format) with different race
// schedules; long is coding sessions.
var Workloads = []string{"hotpot", "repeated", "edits", "concurrent", "inflight", "compaction", "long"}

// DefaultWorkloads run when --workload is not given; see docs/bench.md for
// why these (they cover every code path and finish within a minute).
var DefaultWorkloads = []string{"hotpot", "repeated", "edits", "concurrent", "inflight", "compaction", "long"}

// ForWorkload turns question tasks into the named workload's tasks (long
// ignores them and generates n sessions from seed).
func ForWorkload(name string, base []Task, seed uint64, n int) ([]Task, error) {
	switch name {
	case "hotpot":
		return base, nil
	case "long":
		return Long(seed, n), nil
	case "repeated", "edits", "concurrent", "inflight", "compaction":
		out := make([]Task, 0, len(base))
		for _, t := range base {
			out = append(out, variant(t, name))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown workload %q (want one of %v)", name, Workloads)
}

// variant sets the race schedule and reads the mutated evidence first, so
// that more model calls follow the first stale read: the later changes of
// repeated, the recreate of edits and the in-flight write each need a
// call after them before the answer. inflight keeps only the first
// file's mutations: a write landing during the answering call could not be
// shown to any mode.
func variant(t Task, race string) Task {
	t.Race = race
	t.Evidence = slices.Clone(t.Evidence)
	mutated := func(f string) bool {
		return slices.ContainsFunc(t.Mutations, func(m Mutation) bool { return m.File == f })
	}
	slices.SortStableFunc(t.Evidence, func(a, b Evidence) int {
		ma, mb := mutated(a.File), mutated(b.File)
		switch {
		case ma && !mb:
			return -1
		case mb && !ma:
			return 1
		}
		return 0
	})
	if race == "inflight" && len(t.Evidence) > 0 {
		first := t.Evidence[0].File
		t.Mutations = slices.DeleteFunc(slices.Clone(t.Mutations), func(m Mutation) bool { return m.File != first })
	}
	return t
}
