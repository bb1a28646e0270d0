package runtime

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

// TestSpanIndexAgreesWithScan: a session of many overlapping reads of one
// file by two agents, with edits (inserted and deleted lines, which move
// the ranges and make the index stale) and releases in between, gives the
// same answer to every call with supersede's span index as with the scan
// of every link: the same blocks superseded, the same projections.
func TestSpanIndexAgreesWithScan(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			scan := runSpanSession(t, seed, 1<<30, 8)
			indexed := runSpanSession(t, seed, 4, 2)
			if len(scan) != len(indexed) {
				t.Fatalf("%d results with the scan, %d with the index", len(scan), len(indexed))
			}
			superseded := 0
			for i := range scan {
				if !reflect.DeepEqual(scan[i], indexed[i]) {
					t.Fatalf("call %d: scan %+v\nindex %+v", i, scan[i], indexed[i])
				}
				if o, ok := scan[i].(protocol.ObserveResult); ok {
					superseded += len(o.Superseded)
				}
			}
			if superseded < 50 {
				t.Fatalf("only %d blocks superseded: the session does not exercise supersede", superseded)
			}
		})
	}
}

func runSpanSession(t *testing.T, seed uint64, least, after int) []any {
	t.Helper()
	oldMin, oldAfter := spanIndexMin, spanRebuildAfter
	spanIndexMin, spanRebuildAfter = least, after
	t.Cleanup(func() { spanIndexMin, spanRebuildAfter = oldMin, oldAfter })
	h := newHarness(t, Config{})
	r := rand.New(rand.NewPCG(seed, 9))
	ls := numbered(300)
	h.mem.set(fid, text(ls))
	const other = "mem://proj/other.go"
	ols := numbered(10)
	h.mem.set(other, text(ols))
	var out []any
	for i := range 600 {
		agent := fmt.Sprintf("a%d", r.IntN(2))
		switch k := r.IntN(20); {
		case k == 0 && len(ls) > 50: // delete a few lines
			at := r.IntN(len(ls) - 5)
			ls = append(ls[:at:at], ls[at+1+r.IntN(3):]...)
			h.mem.set(fid, text(ls))
			out = append(out, h.changed(fid))
		case k == 1: // insert a line
			at := r.IntN(len(ls))
			ls = append(ls[:at:at], append([]string{fmt.Sprintf("inserted %d", i)}, ls[at:]...)...)
			h.mem.set(fid, text(ls))
			out = append(out, h.changed(fid))
		case k == 2:
			out = append(out, h.sync(agent, i))
		case k == 3:
			res, err := h.m.Release(t.Context(), protocol.ReleaseParams{Agent: agent, Anchors: []string{fmt.Sprintf("c%d", r.IntN(i+1))}})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res)
		default:
			s := 1 + r.IntN(len(ls))
			e := min(len(ls), s+r.IntN(30))
			if k == 4 {
				s, e = 1, len(ls) // a read of the whole file
			}
			refs := []protocol.Source{{URI: fid, Range: rng(s, e), Text: span(ls, s, e)}}
			if k == 5 && e+40 < len(ls) { // two spans in one block
				refs = append(refs, protocol.Source{URI: fid, Range: rng(e+10, e+40), Text: span(ls, e+10, e+40)})
			}
			if k == 6 { // a whole read, and a span of another file in the same block
				refs = []protocol.Source{{URI: fid, Text: strings.Join(ls, "\n")}, {URI: other, Range: rng(2, 4), Text: span(ols, 2, 4)}}
			}
			out = append(out, h.observe(agent, i, fmt.Sprintf("c%d", i), refs...))
		}
	}
	for _, a := range []string{"a0", "a1"} {
		res, err := h.m.Sync(t.Context(), protocol.SyncParams{Agent: a, Turn: 1000, Full: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

// TestRereadsKeepIndexBounded: a session that reads the same lines again
// and again with no change to reconcile (each read superseding the last)
// keeps its per-source link lists near the live links: the superseded
// links, and the blocks they point to, are not kept alive by the index.
func TestRereadsKeepIndexBounded(t *testing.T) {
	h := newHarness(t, Config{AuditLimit: 8})
	ls := numbered(50)
	h.mem.set(fid, text(ls))
	for i := range 2000 {
		h.observe("a", i, fmt.Sprintf("c%d", i), protocol.Source{URI: fid, Range: rng(3, 9), Text: span(ls, 3, 9)})
	}
	src := h.m.ix.known(fid)
	ag := h.m.ix.agents["a"]
	if live := src.nlinks; live != 1 {
		t.Fatalf("%d live links, want 1 (each read supersedes the last)", live)
	}
	if n := len(src.order); n > 2*src.nlinks+16 {
		t.Errorf("source keeps %d links in order for %d live", n, src.nlinks)
	}
	if n := len(ag.bySrc[src]); n > 2*ag.srcRefs[src]+16 {
		t.Errorf("agent keeps %d links on the source for %d live", n, ag.srcRefs[src])
	}
}
