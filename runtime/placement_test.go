package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
)

// fakeClock is a settable clock for cache-expiry tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// placed is what one sync asked a binding to do: views in place, errata at
// the tail.
type placed struct {
	inplace []string // "anchor status"
	errata  []string
	flushed bool
}

func placedOf(t *testing.T, r protocol.SyncResult) placed {
	t.Helper()
	p := placed{flushed: r.Flushed}
	for _, v := range r.Blocks {
		switch v.Placement {
		case "":
			if v.Erratum != "" {
				t.Fatalf("in-place view with an erratum: %+v", v)
			}
			p.inplace = append(p.inplace, v.Anchor+" "+string(v.Status))
		case PlacementTail:
			if v.Erratum != "" { // "": its statement sits on an earlier view's line (grouped)
				p.errata = append(p.errata, v.Erratum)
			}
		default:
			t.Fatalf("placement %q", v.Placement)
		}
	}
	return p
}

func TestPlacement(t *testing.T) {
	ls := numbered(10)
	inserted := append([]string{"// a", "// b"}, ls...)
	edited := slices.Clone(ls)
	edited[3] = "func f4() { return 42 }"
	twoEdits := slices.Clone(ls)
	twoEdits[2], twoEdits[4] = "func f3() { return value3 + other9 }", "func f5() { return value5 + other9 }"
	const read = "call_1"
	type step func(h *harness, clk *fakeClock)
	write := func(c string) step { return func(h *harness, _ *fakeClock) { h.mem.set(fid, c) } }
	ownEdit := func(c, anchor string) step {
		return func(h *harness, _ *fakeClock) {
			h.mem.set(fid, c)
			if _, err := h.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: fid, Agent: "main", Anchor: anchor}); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	wait := func(d time.Duration) step { return func(_ *harness, clk *fakeClock) { clk.t = clk.t.Add(d) } }
	sent := func(h *harness, _ *fakeClock) { h.sync("main", 1) } // the read was in a model call
	reread := func(h *harness, _ *fakeClock) {
		h.observe("main", 2, "call_2", protocol.Source{URI: fid, Range: rng(1, 10), Text: span(ls, 1, 10)})
	}
	// The agent's edit lands on disk and a watcher applies it before the
	// binding reports it (another agent's read verifies the source first).
	watcherFirst := func(h *harness, _ *fakeClock) {
		h.mem.set(fid, text(edited))
		h.observe("other", 1, "o_1", protocol.Source{URI: fid, Range: rng(1, 1), Text: ls[0]})
		if _, err := h.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: fid, Agent: "main", Anchor: "call_7"}); err != nil {
			h.t.Fatal(err)
		}
	}

	// readNow observes lines a-b of the file as it is now (an edit's
	// snippet, a newer view).
	readNow := func(anchor string, a, b int) step {
		return func(h *harness, _ *fakeClock) {
			h.mem.mu.Lock()
			cur := h.mem.files[fid]
			h.mem.mu.Unlock()
			h.observe("main", 2, anchor, protocol.Source{URI: fid, Range: rng(a, b), Text: span(strings.Split(strings.TrimSuffix(cur, "\n"), "\n"), a, b)})
		}
	}
	movedThenEdited := append([]string{"// a", "// b"}, edited...)
	const pointer = "[concord] Outdated in /proj/main.go: call_1 (lines 3-5) was read again in call_2."

	tests := []struct {
		name      string
		placement string
		steps     []step
		want      placed
		rebuilt   bool
	}{
		// Issue 19: a read's lines change, then a newer read of them
		// supersedes it before the next sync; the stale copy needs the pointer.
		{"tail: lines changed, then read again: the pointer", PlacementTail, []step{sent, ownEdit(text(edited), "call_7"), readNow("call_2", 1, 9)},
			placed{errata: []string{pointer}}, false},
		{"auto: lines changed, then read again: the pointer", PlacementAuto, []step{sent, ownEdit(text(edited), "call_7"), readNow("call_2", 1, 9)},
			placed{errata: []string{pointer}}, false},
		{"auto: lines moved, then read again at their new place: the pointer", PlacementAuto, []step{sent, write(text(inserted)), readNow("call_2", 1, 9)},
			placed{errata: []string{pointer}}, false},
		{"auto: read again, the copy still true: nothing", PlacementAuto, []step{sent, readNow("call_2", 1, 9)},
			placed{}, false},
		// "moved with your edit, text unchanged" must not stand once the text
		// changes, even when a newer read supersedes the call.
		{"auto: 'text unchanged' falsified, then read again: the pointer", PlacementAuto, []step{sent, ownEdit(text(inserted), "call_7"), sent, ownEdit(text(movedThenEdited), "call_8"), readNow("call_2", 4, 8)},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) was read again in call_2."}}, false},
		{"tail: 'text unchanged' falsified, then read again: the pointer", PlacementTail, []step{sent, ownEdit(text(inserted), "call_7"), sent, ownEdit(text(movedThenEdited), "call_8"), readNow("call_2", 4, 8)},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) was read again in call_2."}}, false},
		// A "deleted" erratum is withdrawn when the file comes back as it was.
		{"auto: deleted, then back unchanged: current again", PlacementAuto, []step{sent, func(h *harness, _ *fakeClock) { h.mem.remove(fid) }, sent, write(text(ls))},
			placed{errata: []string{"[concord] The output of call_1 is current again."}}, false},
		{"tail: deleted, then back unchanged: current again", PlacementTail, []step{sent, func(h *harness, _ *fakeClock) { h.mem.remove(fid) }, sent, write(text(ls))},
			placed{errata: []string{"[concord] The output of call_1 is current again."}}, false},
		{"inplace rewrites a sent message", PlacementInplace, []step{sent, write(text(inserted))},
			placed{inplace: []string{"call_1 patched"}}, false},
		{"tail: a move is one line", PlacementTail, []step{sent, write(text(inserted))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) is now at lines 5-7."}}, false},
		{"auto: a sent message goes to the tail", PlacementAuto, []step{sent, write(text(inserted))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) is now at lines 5-7."}}, false},
		{"auto: a message never sent is rewritten in place", PlacementAuto, []step{write(text(inserted))},
			placed{inplace: []string{"call_1 patched"}}, false},
		{"tail: even a message never sent keeps its text", PlacementTail, []step{write(text(inserted))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) is now at lines 5-7."}}, false},
		{"own edit: a pointer to the edit", PlacementAuto, []step{sent, ownEdit(text(edited), "call_7")},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed by your edit in call_7."}}, false},
		{"own edit reported after the watcher applied it", PlacementAuto, []step{sent, watcherFirst},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed by your edit in call_7."}}, false},
		{"two own edits: the last one named", PlacementAuto, []step{sent, ownEdit(text(edited), "call_7"), ownEdit(text(append([]string{"// a"}, edited...)), "call_8")},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed by your edits (the last in call_8)."}}, false},
		{"a warning stays true: the next change adds nothing", PlacementAuto, []step{sent, ownEdit(text(edited), "call_7"), sent, write(text(append([]string{"// a"}, edited...)))},
			placed{}, false},
		{"own edit that only moved the lines: no lines named", PlacementAuto, []step{sent, ownEdit(text(inserted), "call_7")},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) moved with your edit in call_7, text unchanged."}}, false},
		{"own moves: the next move adds nothing", PlacementAuto, []step{sent, ownEdit(text(inserted), "call_7"), sent, ownEdit(text(append([]string{"// c"}, inserted...)), "call_8")},
			placed{}, false},
		{"own move then an outside change of the text: the changed lines", PlacementAuto, []step{sent, ownEdit(text(inserted), "call_7"), sent, write(text(append([]string{"// a", "// b"}, edited...)))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed, now lines 5-7:\n+6: func f4() { return 42 }"}}, false},
		{"outside moves: numbers once, then only that it moved", PlacementAuto, []step{sent, write(text(inserted)), sent, write(text(append([]string{"// c"}, inserted...)))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) moved, text unchanged."}}, false},
		{"two changes apart: the lines between are not repeated", PlacementAuto, []step{sent, write(text(twoEdits))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed:\n+3: func f3() { return value3 + other9 }\n+5: func f5() { return value5 + other9 }"}}, false},
		{"own edits after an erratum: a pointer to the last, not the whole change again", PlacementAuto, []step{sent, write(text(edited)), sent, ownEdit(text(append([]string{"// a"}, edited...)), "call_8")},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed again by your edit in call_8."}}, false},
		{"... and the next own edit adds nothing", PlacementAuto, []step{sent, write(text(edited)), sent, ownEdit(text(append([]string{"// a"}, edited...)), "call_8"), sent, ownEdit(text(append([]string{"// a", "// b"}, edited...)), "call_9")},
			placed{}, false},
		{"a superseded read whose lines change points to the newer read", PlacementAuto, []step{sent, reread, write(text(edited))},
			placed{inplace: []string{"call_2 patched"}, errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) was read again in call_2."}}, false},
		{"outside change: the changed lines", PlacementAuto, []step{sent, write(text(edited))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed:\n+4: func f4() { return 42 }"}}, false},
		{"own edit then an outside change: the changed lines", PlacementAuto, []step{sent, ownEdit(text(edited), "call_7"), write(text(append([]string{"// a"}, edited...)))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed, now lines 4-6:\n+5: func f4() { return 42 }"}}, false},
		{"a large change asks for a re-read", PlacementAuto, []step{sent, write(text(append(ls[:2:2], append([]string{strings.Repeat("x", 900)}, ls[3:]...)...)))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed. Re-read /proj/main.go lines 3-5 before relying on it."}}, false},
		{"deleted: the notice, naming the call", PlacementAuto, []step{sent, func(h *harness, _ *fakeClock) { h.mem.remove(fid) }},
			placed{errata: []string{"[concord] About the output of call_1: /proj/main.go was deleted after that read; the content shown earlier (lines 3-5) is no longer accurate. Re-read /proj/main.go lines 3-5 (check whether it still exists) before relying on it."}}, false},
		{"deleted, then back with other text: the deletion warning ends", PlacementAuto, []step{sent, func(h *harness, _ *fakeClock) { h.mem.remove(fid) }, sent, write(text(edited))},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) changed:\n+4: func f4() { return 42 }"}}, false},
		{"auto: supersession alone rewrites nothing", PlacementAuto, []step{sent, reread},
			placed{}, false},
		{"tail: supersession alone rewrites nothing", PlacementTail, []step{sent, reread},
			placed{}, false},
		{"inplace: supersession rewrites", PlacementInplace, []step{sent, reread},
			placed{inplace: []string{"call_1 superseded"}}, false},
		{"auto: a read superseded before it was sent becomes the pointer", PlacementAuto, []step{reread},
			placed{inplace: []string{"call_1 superseded"}}, false},
		{"auto: an expired cache flushes in place", PlacementAuto, []step{sent, write(text(inserted)), wait(6 * time.Minute)},
			placed{inplace: []string{"call_1 patched"}, flushed: true}, false},
		{"auto: a warm cache does not", PlacementAuto, []step{sent, write(text(inserted)), wait(4 * time.Minute)},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) is now at lines 5-7."}}, false},
		{"tail ignores the cache clock", PlacementTail, []step{sent, write(text(inserted)), wait(time.Hour)},
			placed{errata: []string{"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) is now at lines 5-7."}}, false},
		{"tail: a rebuilt prefix flushes", PlacementTail, []step{sent, write(text(inserted))},
			placed{inplace: []string{"call_1 patched"}, flushed: true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
			h := newHarness(t, Config{Options: protocol.InitializeParams{Placement: tc.placement}, Now: clk.now})
			h.mem.set(fid, text(ls))
			h.observe("main", 1, read, protocol.Source{URI: fid, Range: rng(3, 5), Text: span(ls, 3, 5)})
			for _, s := range tc.steps {
				s(h, clk)
			}
			r, err := h.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: 3, PrefixRebuilt: tc.rebuilt})
			if err != nil {
				t.Fatal(err)
			}
			got := placedOf(t, r)
			if !slices.Equal(got.inplace, tc.want.inplace) || !slices.Equal(got.errata, tc.want.errata) || got.flushed != tc.want.flushed {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// TestErrataSticky: errata are delivered once per change; a second change
// before the next sync replaces the first; a deferred message is flushed
// in place with every other one, and a change back makes the last erratum
// say the copy is current again.
func TestErrataSticky(t *testing.T) {
	ls := numbered(10)
	clk := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	h := newHarness(t, Config{Options: protocol.InitializeParams{Placement: PlacementAuto}, Now: clk.now})
	h.mem.set(fid, text(ls))
	h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(3, 5), Text: span(ls, 3, 5)})
	h.observe("main", 1, "call_2", protocol.Source{URI: fid, Range: rng(8, 9), Text: span(ls, 8, 9)})
	h.sync("main", 1)

	h.mem.set(fid, text(append([]string{"// a"}, ls...)))
	h.mem.set(fid, text(append([]string{"// a", "// b"}, ls...)))
	p := placedOf(t, h.sync("main", 2))
	want := []string{ // one line per source
		"[concord] Outdated in /proj/main.go: call_1 (lines 3-5) is now at lines 5-7; call_2 (lines 8-9) is now at lines 10-11.",
	}
	if !slices.Equal(p.errata, want) || len(p.inplace) != 0 {
		t.Fatalf("first sync: %#v", p)
	}
	if p := placedOf(t, h.sync("main", 3)); len(p.errata)+len(p.inplace) != 0 {
		t.Fatalf("an erratum was delivered twice: %#v", p)
	}
	h.mem.set(fid, text(ls))
	p = placedOf(t, h.sync("main", 4))
	want = []string{"[concord] The output of call_1 is current again.", "[concord] The output of call_2 is current again."}
	if !slices.Equal(p.errata, want) {
		t.Fatalf("back to the original: %#v", p)
	}
	h.mem.set(fid, text(append([]string{"// c"}, ls...)))
	h.sync("main", 5)
	clk.t = clk.t.Add(10 * time.Minute)
	p = placedOf(t, h.sync("main", 6))
	if !p.flushed || !slices.Equal(p.inplace, []string{"call_1 patched", "call_2 patched"}) || len(p.errata) != 0 {
		t.Fatalf("expired cache: %#v", p)
	}
	if st := h.m.Stats(); st.Reconciliations["errata"] != 6 || st.Reconciliations["flushes"] != 1 {
		t.Fatalf("stats %v", st.Reconciliations)
	}
}

// TestRenderErrata: one line per source, calls with the same statement
// listed together, changed lines and notices on lines of their own, each
// line on the first view it speaks for.
func TestRenderErrata(t *testing.T) {
	moved := func(a, shown, now string) clause {
		return clause{anchor: a, path: "/p/a.go", shown: shown, pred: "is now at " + now}
	}
	own := func(a, path, shown string) clause {
		return clause{anchor: a, path: path, shown: shown, pred: "changed by your edit in e1"}
	}
	tests := []struct {
		name   string
		cs     []clause
		owner  []int
		nviews int
		want   []string
	}{
		{"one clause", []clause{moved("c1", "lines 1-2", "lines 3-4")}, []int{0}, 1,
			[]string{"[concord] Outdated in /p/a.go: c1 (lines 1-2) is now at lines 3-4."}},
		{"two calls, one source", []clause{moved("c1", "lines 1-2", "lines 3-4"), moved("c2", "line 9", "line 11")}, []int{0, 1}, 2,
			[]string{"[concord] Outdated in /p/a.go: c1 (lines 1-2) is now at lines 3-4; c2 (line 9) is now at line 11.", ""}},
		{"the same statement lists the calls", []clause{own("c1", "/p/a.go", "lines 1-2"), own("c2", "/p/a.go", ""), own("c3", "/p/b.go", "line 4")}, []int{0, 1, 2}, 3,
			[]string{"[concord] Outdated in /p/a.go: c1 (lines 1-2), c2 changed by your edit in e1.", "", "[concord] Outdated in /p/b.go: c3 (line 4) changed by your edit in e1."}},
		{"changed lines and notices stand alone", []clause{
			{anchor: "c1", path: "/p/a.go", shown: "line 4", pred: "changed:", body: "+4: x", alone: true},
			{anchor: "c2", raw: "[concord] The output of c2 is current again."},
			moved("c3", "line 7", "line 8"),
			{anchor: "c3", path: "/p/b.go", pred: "changed. Re-read /p/b.go before relying on it.", alone: true},
		}, []int{0, 1, 2, 2}, 3,
			[]string{"[concord] Outdated in /p/a.go: c1 (line 4) changed:\n+4: x", "[concord] The output of c2 is current again.",
				"[concord] Outdated in /p/a.go: c3 (line 7) is now at line 8.\n[concord] Outdated in /p/b.go: c3 changed. Re-read /p/b.go before relying on it."}},
		{"a grep block's sources on two lines", []clause{own("g1", "/p/a.go", "line 3"), own("g1", "/p/b.go", "line 5"), own("c2", "/p/b.go", "lines 1-9")}, []int{0, 0, 1}, 2,
			[]string{"[concord] Outdated in /p/a.go: g1 (line 3) changed by your edit in e1.\n[concord] Outdated in /p/b.go: g1 (line 5), c2 (lines 1-9) changed by your edit in e1.", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderErrata(tc.cs, tc.owner, tc.nviews); !slices.Equal(got, tc.want) {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestPricedPlacement: with cache prices (auto), a repair of a message the
// model has seen goes in place when the rewrite costs less than its
// erratum: a large read that drifted, at the end of the prompt, becomes
// the short notice; anything further back, a patch that keeps the copy's
// size, or a prompt of unknown size keeps the erratum.
func TestPricedPlacement(t *testing.T) {
	ls := numbered(40)
	anthropic := &CachePrice{Write: 1.25, Read: 0.1}
	rewritten := make([]string, len(ls))
	for i := range rewritten {
		rewritten[i] = "// rewritten " + strings.Repeat("z", i)
	}
	edited := slices.Clone(ls)
	edited[3] = "func f4() { return 42 }"
	const notice = "[concord] About the output of call_1: "
	tests := []struct {
		name      string
		placement string
		price     *CachePrice
		behind    int  // prompt characters after the read (-1: promptChars not reported)
		noteFirst bool // an erratum about the read was sent before the change
		firstRead bool // the read is the agent's first observation (its earlier syncs still count)
		change    []string
		want      string // "call_1 <status>" in place, or the erratum's first words
	}{
		{"drift at the end of the prompt: the notice in place", PlacementAuto, anthropic, 0, false, false, rewritten, "call_1 invalid"},
		{"the agent's first read: placed after the prompt its earlier syncs reported", PlacementAuto, anthropic, 0, false, true, rewritten, "call_1 invalid"},
		{"drift far back in the prompt: the erratum", PlacementAuto, anthropic, 50000, false, false, rewritten, notice},
		{"unknown prompt size: the erratum", PlacementAuto, anthropic, -1, false, false, rewritten, notice},
		{"no price: the erratum", PlacementAuto, nil, 0, false, false, rewritten, notice},
		{"tail ignores the price", PlacementTail, anthropic, 0, false, false, rewritten, notice},
		{"a patch keeps the copy's size: the erratum", PlacementAuto, anthropic, 0, false, false, edited, "[concord] Outdated in /proj/main.go: call_1 changed:"},
		{"an erratum already sent: never priced in place", PlacementAuto, anthropic, 0, true, false, rewritten, notice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Options: protocol.InitializeParams{Placement: tc.placement, Cache: &protocol.CacheParams{Price: tc.price}}})
			h.mem.set(fid, text(ls))
			prompt := 1000 // what the runtime reports; grows with each call
			syncAt := func(turn int) protocol.SyncResult {
				chars := prompt
				if tc.behind < 0 {
					chars = 0
				}
				r, err := h.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: turn, PromptChars: chars})
				if err != nil {
					t.Fatal(err)
				}
				prompt += 20
				return r
			}
			if !tc.firstRead {
				h.mem.set("mem://proj/other.go", "x\n")
				h.observe("main", 0, "o_0", protocol.Source{URI: "mem://proj/other.go", Text: "x"})
			}
			syncAt(0) // the server learns where the read starts
			h.observe("main", 1, "call_1", protocol.Source{URI: fid, Text: text(ls)})
			prompt += len(text(ls)) + max(tc.behind, 0)
			syncAt(1)
			if tc.noteFirst {
				h.mem.set(fid, text(append([]string{"// a"}, ls...)))
				if p := placedOf(t, syncAt(2)); len(p.errata) != 1 {
					t.Fatalf("the move: %#v", p)
				}
			}
			h.mem.set(fid, text(tc.change))
			p := placedOf(t, syncAt(3))
			got := strings.Join(p.inplace, ",")
			if len(p.inplace) == 0 && len(p.errata) == 1 {
				got = p.errata[0]
			}
			if !strings.HasPrefix(got, tc.want) || len(p.inplace)+len(p.errata) != 1 {
				t.Fatalf("got %#v, want %q", p, tc.want)
			}
			if n := h.m.Stats().Reconciliations["pricedRewrites"]; (n == 1) != strings.HasPrefix(tc.want, "call_1 ") {
				t.Fatalf("pricedRewrites = %d", n)
			}
		})
	}
}

// TestErrataInsertionVsReplacement (issue 19): ten lines inserted after
// line 5 of a whole-file read, and lines 6-15 replaced by the same ten
// lines, must not give the same erratum: the first says where the lines
// went in and that the file grew.
func TestErrataInsertionVsReplacement(t *testing.T) {
	ls := numbered(60)
	var added []string
	for i := range 10 {
		added = append(added, fmt.Sprintf("Inserted %d", i+1))
	}
	inserted := slices.Concat(ls[:5], added, ls[5:])
	replaced := slices.Concat(ls[:5], added, ls[15:])
	body := ""
	for i, a := range added {
		body += fmt.Sprintf("\n+%d: %s", 6+i, a)
	}
	for _, p := range []string{PlacementTail, PlacementAuto} {
		for _, tc := range []struct {
			name    string
			content []string
			want    string
		}{
			{"insertion", inserted, "[concord] Outdated in /proj/main.go: call_1 changed, now 70 lines:\n(inserted after line 5)" + body},
			{"replacement", replaced, "[concord] Outdated in /proj/main.go: call_1 changed:" + body},
		} {
			t.Run(p+" "+tc.name, func(t *testing.T) {
				h := newHarness(t, Config{Options: protocol.InitializeParams{Placement: p}})
				h.mem.set(fid, text(ls))
				h.observe("main", 1, "call_1", protocol.Source{URI: fid, Text: text(ls)})
				h.sync("main", 1)
				h.mem.set(fid, text(tc.content))
				got := placedOf(t, h.sync("main", 2))
				if len(got.errata) != 1 || got.errata[0] != tc.want {
					t.Fatalf("errata %q\nwant %q", got.errata, tc.want)
				}
			})
		}
	}
}
