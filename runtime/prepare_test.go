package runtime

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

// TestPrepareAgreesWithLock: the session of TestSpanIndexAgreesWithScan (many
// overlapping reads of one file, inserted and deleted lines, releases) gives
// the same answer to every call whether changes are diffed and located
// before the manager lock is taken (prepare) or under it.
func TestPrepareAgreesWithLock(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ahead := runSpanSession(t, seed, 64, 8)
			prepareAhead = false
			t.Cleanup(func() { prepareAhead = true })
			under := runSpanSession(t, seed, 64, 8)
			prepareAhead = true
			if len(ahead) != len(under) {
				t.Fatalf("%d results prepared ahead, %d under the lock", len(ahead), len(under))
			}
			for i := range ahead {
				if !reflect.DeepEqual(ahead[i], under[i]) {
					t.Fatalf("call %d: prepared ahead %+v\nunder the lock %+v", i, ahead[i], under[i])
				}
			}
		})
	}
}

// TestPrepareLocatesOverlappingSpans: prepare judges exactly the distinct
// ranges the change overlaps (a span before it stays, one after it moves,
// without the diff), and a preparation made against another text is not
// used.
func TestPrepareLocatesOverlappingSpans(t *testing.T) {
	h := newHarness(t, Config{})
	ls := numbered(100)
	h.mem.set(fid, text(ls))
	for i, r := range [][2]int{{1, 5}, {40, 45}, {42, 50}, {42, 50}, {90, 95}} {
		h.observe(fmt.Sprintf("a%d", i%2), 1, fmt.Sprintf("c%d", i), protocol.Source{URI: fid, Range: rng(r[0], r[1]), Text: span(ls, r[0], r[1])})
	}
	edited := append([]string{}, ls...)
	edited[43] += " // edited"
	edited = append(edited[:60:60], append([]string{"inserted"}, edited[60:]...)...)
	src := h.m.ix.known(fid)
	c := Content{Text: text(edited), Version: "v2"}
	p := h.m.prepare(src, c, nil)
	if p == nil || p.edit == nil {
		t.Fatal("nothing prepared")
	}
	want := map[Range]bool{{Start: 40, End: 45}: true, {Start: 42, End: 50}: true}
	if len(p.memo) != len(want) {
		t.Fatalf("judged %v, want the ranges %v", p.memo, want)
	}
	for r := range p.memo {
		if !want[r] {
			t.Errorf("judged %v, which the change does not overlap", r)
		}
	}
	h.m.mu.Lock()
	fits := p.fits(src)
	saved := src.text
	src.text = strings.Clone(saved) // an equal text in other memory: not the one prepared against
	stale := p.fits(src)
	src.text = saved
	h.m.mu.Unlock()
	if !fits || stale {
		t.Fatalf("fits on its base: %v (want true); on another copy: %v (want false)", fits, stale)
	}
}

// TestReadServesEarlierSyncs: a read that began after a sync's verify pass
// did has seen every change that sync must show, so the sync takes it
// instead of reading again; a read that began before the pass does not
// serve it.
func TestReadServesEarlierSyncs(t *testing.T) {
	h := newHarness(t, Config{})
	ls := numbered(20)
	h.mem.set(fid, text(ls))
	h.observe("a", 1, "c1", protocol.Source{URI: fid, Range: rng(2, 4), Text: span(ls, 2, 4)})
	h.observe("b", 1, "c2", protocol.Source{URI: fid, Range: rng(2, 4), Text: span(ls, 2, 4)})
	src := h.m.ix.known(fid)
	ls[2] += " // edited"
	h.mem.set(fid, text(ls))

	since := h.m.reads.Load() // agent b's pass begins here
	if got := h.sync("a", 2); len(got.Blocks) != 1 || got.Blocks[0].Status != protocol.Patched {
		t.Fatalf("agent a's sync: %+v", got.Blocks)
	}
	reads := h.mem.reads.Load()
	if err := h.m.verifyRead(t.Context(), src, "moved", since); err != nil {
		t.Fatal(err)
	}
	if n := h.mem.reads.Load() - reads; n != 0 {
		t.Fatalf("%d reads after a's newer read, want 0", n)
	}
	if err := h.m.verifyRead(t.Context(), src, "moved", h.m.reads.Load()); err != nil {
		t.Fatal(err)
	}
	if n := h.mem.reads.Load() - reads; n != 1 {
		t.Fatalf("%d reads for a pass that began after the last read, want 1", n)
	}
	if got := h.sync("b", 2); len(got.Blocks) != 1 || got.Blocks[0].Status != protocol.Patched {
		t.Fatalf("agent b's sync: %+v", got.Blocks)
	}
}
