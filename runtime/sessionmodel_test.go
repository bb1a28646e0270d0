package runtime

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// TestEditHeavySessionModel replays a model of real edit-heavy coding
// sessions (issue 19's measurement): an agent views ranges of a few files,
// edits them with its own edit tool (the write, its sourceChanged, then the
// edit's snippet of the lines around the change: a newer read of lines it
// read before), views again, and now and then another writer changes a
// file. Before every model call (a sync) the invariant checker looks at
// every read the agent holds; here a read that shows stale text with no
// true correction in force is counted (read x call exposures, and distinct
// reads), not fatal. It must be zero under every placement.
//
// CONCORD_SESSIONS=500 runs more sessions; the counts are logged.
func TestEditHeavySessionModel(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 30
	}
	if v, err := strconv.Atoi(os.Getenv("CONCORD_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	for _, p := range placements {
		t.Run(p, func(t *testing.T) {
			var exposures, calls int
			reads, sessions := map[string]bool{}, map[int]bool{}
			for i := range n {
				rnd := rand.New(rand.NewPCG(uint64(i), 19))
				e, c := runSessionModel(t, rnd, p, func(anchor string) {
					reads[fmt.Sprint(i, "/", anchor)] = true
					sessions[i] = true
				})
				exposures, calls = exposures+e, calls+c
			}
			t.Logf("placement %s: %d sessions, %d model calls: %d stale reads with no true correction in %d sessions, %d read x call exposures",
				p, n, calls, len(reads), len(sessions), exposures)
			if exposures > 0 {
				t.Errorf("%d read x call exposures of stale text with no true correction (%d reads)", exposures, len(reads))
			}
		})
	}
}

var anchorOf = regexp.MustCompile(`anchor (\S+?):`)

// runSessionModel runs one session and returns the violations and syncs.
func runSessionModel(t *testing.T, rnd *rand.Rand, placement string, stale func(anchor string)) (int, int) {
	clk := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	cfg := Config{Options: protocol.InitializeParams{Placement: placement}, Now: clk.now}
	if placement == placementAutoPriced {
		cfg.Options.Placement, cfg.Options.Cache = PlacementAuto, &protocol.CacheParams{Price: &CachePrice{Write: 1.25, Read: 0.1}}
	}
	h := newHarness(t, cfg)
	r := &invRun{t: t, h: h, s: &script{}, content: map[string]string{}, hist: map[string][]string{}, seen: map[string]bool{}, placement: placement, clk: clk}
	violations := 0
	r.tally = func(v string) {
		violations++
		if m := anchorOf.FindStringSubmatch(v); m != nil {
			stale(m[1])
		}
	}
	nfiles := 1 + rnd.IntN(3)
	for i := range nfiles {
		ls := make([]string, 40+rnd.IntN(160))
		for j := range ls {
			ls[j] = fmt.Sprintf("    line %d of module %d: value = %d", j+1, i, rnd.IntN(1000))
		}
		r.set(fmt.Sprintf("mem://m%d.py", i), text(ls))
		r.srcs = append(r.srcs, fmt.Sprintf("mem://m%d.py", i))
	}
	ag := &invAgent{name: "main", turn: 1, anchors: map[string]*heldBlock{}}
	r.agents = []*invAgent{ag}
	calls := 30 + rnd.IntN(31)
	lines := func(id string) []string { return locator.SplitLines(r.content[id]) }
	window := func(id string, center, half int) protocol.Source {
		ls := lines(id)
		a, b := max(1, center-half), min(len(ls), center+half)
		return protocol.Source{URI: id, Range: rng(a, b), Text: strings.Join(ls[a-1:b], "\n")}
	}
	for range calls {
		id := r.srcs[rnd.IntN(len(r.srcs))]
		n := len(lines(id))
		switch k := rnd.IntN(100); {
		case k < 35: // a view of a range (the editor's view_range, cat -n | sed -n)
			r.register(ag, "", []protocol.Source{window(id, 1+rnd.IntN(n), 5+rnd.IntN(25))})
		case k < 75: // the agent's own edit, then its snippet
			ls := lines(id)
			at := rnd.IntN(n)
			switch rnd.IntN(3) {
			case 0:
				ls[at] = ls[at] + " # edited"
			case 1:
				ls = append(ls[:at+1], append([]string{"    inserted()", "    inserted_too()"}, ls[at+1:]...)...)
			default:
				ls = append(ls[:at], ls[min(len(ls), at+1+rnd.IntN(3)):]...)
			}
			if len(ls) == 0 {
				ls = []string{"pass"}
			}
			r.set(id, text(ls))
			ag.next++
			anchor := fmt.Sprintf("call_%d", ag.next)
			if _, err := h.m.SourceChanged(t.Context(), protocol.SourceChangedParams{URI: id, Agent: ag.name, Anchor: anchor}); err != nil {
				t.Fatal(err)
			}
			r.register(ag, anchor, []protocol.Source{window(id, min(at+1, len(ls)), 4)})
		case k < 85: // a view of the whole file
			r.register(ag, "", []protocol.Source{{URI: id, Text: r.content[id]}})
		case k < 92: // someone else writes the file
			ls := lines(id)
			ls[rnd.IntN(len(ls))] = "    changed outside"
			r.set(id, text(ls))
		default: // a command: nothing read
		}
		ag.turn++
		r.sync(ag, false)
	}
	return violations, calls
}
