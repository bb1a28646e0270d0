package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
	"github.com/concord-ctx/concord/protocol"
)

// TestPlacement runs concord under each placement on question tasks and
// long sessions (the acceptance, on a small sample): tail and auto
// recover every task inplace recovers, under both readers, without
// rewriting an earlier message; auto rewrites nothing for supersession
// alone, so its reuse is at least inplace's and it costs less on the long
// sessions. Errata reach the model at the tail, after the newest message.
func TestPlacement(t *testing.T) {
	wls := []Workload{{Name: "hotpot", Tasks: tasks.Synthetic(5, 6)}, {Name: "long", Tasks: tasks.Long(2, 3)}}
	sum := map[string]map[string]ModeResult{}
	for _, p := range []string{protocol.PlacementInplace, protocol.PlacementTail, protocol.PlacementAuto} {
		cfg := Config{Modes: []string{ModeConcord}, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t), MaxSteps: 100,
			Price: Prices["anthropic"], ConcordPlacement: p}
		rep, err := Run(context.Background(), cfg, wls)
		if err != nil {
			t.Fatal(err)
		}
		sum[p] = map[string]ModeResult{}
		for _, w := range rep.Workloads {
			m := w.Modes[0]
			for _, r := range m.Tasks {
				if r.Error != "" {
					t.Fatalf("%s %s %s: %s", p, w.Name, r.ID, r.Error)
				}
			}
			sum[p][w.Name] = m
		}
	}
	for _, w := range wls {
		in := sum[protocol.PlacementInplace][w.Name].Summary
		for _, p := range []string{protocol.PlacementTail, protocol.PlacementAuto} {
			m := sum[p][w.Name]
			s := m.Summary
			if s.Recovered < in.Recovered || s.RecoveredFirst < in.RecoveredFirst {
				t.Errorf("%s %s: recovered %d/%d, inplace %d/%d", w.Name, p, s.Recovered, s.RecoveredFirst, in.Recovered, in.RecoveredFirst)
			}
			if s.RewriteCalls != 0 {
				t.Errorf("%s %s: %d calls rewrote an earlier message", w.Name, p, s.RewriteCalls)
			}
			tail := 0
			for _, r := range m.Tasks {
				for _, st := range r.Trace {
					for _, v := range st.Views {
						if strings.HasPrefix(v.Shown, TailPrefix) {
							tail++
						}
					}
				}
			}
			if w.Name == "long" && tail == 0 {
				t.Errorf("%s %s: no erratum at the tail", w.Name, p)
			}
		}
		auto := sum[protocol.PlacementAuto][w.Name].Summary
		if auto.ReusePercent < in.ReusePercent {
			t.Errorf("%s: auto reuse %.1f%% < inplace %.1f%%", w.Name, auto.ReusePercent, in.ReusePercent)
		}
		if w.Name == "long" && auto.InputCost >= in.InputCost {
			t.Errorf("long: auto input cost %.0f >= inplace %.0f", auto.InputCost, in.InputCost)
		}
	}
}
