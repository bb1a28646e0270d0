package runtime

import (
	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"

	"context"
	"crypto/sha256"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
)

// benchWorld is 1,000 sources of 100 lines with 10 five-line blocks each.
type benchWorld struct {
	mem   *memStore
	ids   []string
	texts [][]string
	obs   []protocol.ObserveParams
	m     *Manager
}

func newBenchWorld(b *testing.B, files, blocksPerFile int) *benchWorld {
	b.Helper()
	w := &benchWorld{}
	var fa *fakeAdapter
	w.mem, fa = newMem()
	for f := 0; f < files; f++ {
		id := fmt.Sprintf("mem://proj/pkg%d/file%d.go", f%37, f)
		ls := make([]string, 100)
		for i := range ls {
			ls[i] = fmt.Sprintf("\tx%d := compute(%d, %q) // file %d", i, i*f, "arg", f)
		}
		w.mem.set(id, text(ls))
		w.ids = append(w.ids, id)
		w.texts = append(w.texts, ls)
		for k := 0; k < blocksPerFile; k++ {
			s := 1 + k*10
			w.obs = append(w.obs, protocol.ObserveParams{Agent: fmt.Sprintf("agent-%d", f%4), Turn: 1, Anchor: fmt.Sprintf("call_%d_%d", f, k),
				Sources: []protocol.Source{{URI: id, Range: &protocol.Range{Start: s, End: s + 4}, Text: span(ls, s, s+4)}}})
		}
	}
	w.m = New(Config{})
	w.m.AddAdapter(fa)
	b.Cleanup(func() { w.m.Close() })
	return w
}

func (w *benchWorld) register(b *testing.B) {
	ctx := context.Background()
	for _, o := range w.obs {
		if _, err := w.m.Observe(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegister: 10,000 blocks over 1,000 files, per op.
func BenchmarkRegister(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := newBenchWorld(b, 1000, 10)
		b.StartTimer()
		w.register(b)
		b.StopTimer()
		w.m.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/block")
}

// BenchmarkSyncUnchanged: the verify pass over 250 sources (one agent's
// share of 1,000 files, 2,500 blocks) when nothing changed.
func BenchmarkSyncUnchanged(b *testing.B) {
	w := newBenchWorld(b, 1000, 10)
	w.register(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.m.Sync(ctx, protocol.SyncParams{Agent: "agent-0", Turn: 2}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncOneFileChanged: one file of the agent's changed locally
// (one block patched) since the previous sync.
func BenchmarkSyncOneFileChanged(b *testing.B) {
	for _, p := range []string{PlacementInplace, PlacementTail, PlacementAuto} {
		b.Run(p, func(b *testing.B) {
			w := newBenchWorld(b, 1000, 10)
			w.m.placement = p
			w.register(b)
			ctx := context.Background()
			ls := append([]string(nil), w.texts[0]...)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The same line changes each time: under tail and auto
				// every sync after the first carries an erratum (hunk).
				ls[2] = fmt.Sprintf("\tx2 := compute(%d, \"arg\") // file 0", i+1)
				w.mem.set(w.ids[0], text(ls))
				r, err := w.m.Sync(ctx, protocol.SyncParams{Agent: "agent-0", Turn: 2})
				if err != nil || len(r.Blocks) != 1 {
					b.Fatalf("%v %d", err, len(r.Blocks))
				}
			}
		})
	}
}

// bigFile is ~1 MB: 20,000 lines of ~52 bytes, with 1,000 five-line blocks.
func bigFile() []string {
	ls := make([]string, 20000)
	for i := range ls {
		ls[i] = fmt.Sprintf("line %05d: the quick brown fox jumps over %05d", i, i*7)
	}
	return ls
}

// BenchmarkReconcile1MB: one edit of a 1 MB file touching all 1,000 blocks
// on it: a token changed inside every block (1,000 local edits through the
// diff), or a line inserted at the top (1,000 moved spans).
func BenchmarkReconcile1MB(b *testing.B) {
	for _, kind := range []string{"edit-in-every-block", "insert-at-top"} {
		b.Run(kind, func(b *testing.B) {
			var fa *fakeAdapter
			mem, fa := newMem()
			m := New(Config{})
			m.AddAdapter(fa)
			defer m.Close()
			base := bigFile()
			const id = "mem://proj/big.txt"
			mem.set(id, text(base))
			ctx := context.Background()
			for k := 0; k < 1000; k++ {
				s := 1 + k*20
				if _, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: fmt.Sprint(k),
					Sources: []protocol.Source{{URI: id, Range: &protocol.Range{Start: s, End: s + 4}, Text: span(base, s, s+4)}}}); err != nil {
					b.Fatal(err)
				}
			}
			var alt []string
			if kind == "insert-at-top" {
				alt = append([]string{"// header"}, base...)
			} else {
				alt = append([]string(nil), base...)
				for k := 0; k < 1000; k++ {
					alt[k*20+2] = strings.Replace(alt[k*20+2], "quick", "slow", 1)
				}
			}
			texts := []string{text(alt), text(base)}
			b.SetBytes(int64(len(texts[0])))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mem.set(id, texts[i%2])
				r, err := m.SourceChanged(ctx, protocol.SourceChangedParams{URI: id})
				if err != nil || len(r.Blocks) != 1000 {
					b.Fatalf("%v: %d blocks changed", err, len(r.Blocks))
				}
			}
		})
	}
}

// BenchmarkMemoryPerBlock measures the heap the manager holds per block
// beyond its payload (the payload strings exist before the measurement and
// are kept alive) and beyond the sources' text.
func BenchmarkMemoryPerBlock(b *testing.B) {
	for i := 0; i < b.N; i++ {
		w := newBenchWorld(b, 1000, 10)
		ctx := context.Background()
		// Sources known first (one block per file), so their text is not counted.
		for f := 0; f < 1000; f++ {
			if _, err := w.m.Observe(ctx, w.obs[f*10]); err != nil {
				b.Fatal(err)
			}
		}
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		n := 0
		for f := 0; f < 1000; f++ {
			for k := 1; k < 10; k++ {
				if _, err := w.m.Observe(ctx, w.obs[f*10+k]); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		goruntime.KeepAlive(w.obs)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "B/block")
		w.m.Close()
	}
}

// BenchmarkObserveGrepBlock: one observation with n sources, each one line of
// the same file (a grep with many hits); the cost per hit must stay flat.
func BenchmarkObserveGrepBlock(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("hits=%d", n), func(b *testing.B) {
			lines := numbered(n)
			refs := make([]protocol.Source, n)
			for i := range refs {
				refs[i] = protocol.Source{URI: fid, Range: rng(i+1, i+1), Text: lines[i]}
			}
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				h := newHarness(b, Config{})
				h.mem.set(fid, text(lines))
				b.StartTimer()
				if _, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "grep", Kind: protocol.Snapshot, Sources: refs}); err != nil {
					b.Fatal(err)
				}
				// A one-token edit: every hit's link goes through reconciliation.
				h.mem.set(fid, text(oneTokenEdited(lines, n/2)))
				if _, err := h.m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/hit")
		})
	}
}

// manyLinksWorld is one file of 60,000 lines and agents x perAgent
// one-line reads of distinct lines (issue 23's 50,000 links on one file).
func manyLinksWorld(b *testing.B, agents, perAgent int) (*Manager, *memStore, []string, []protocol.ObserveParams) {
	b.Helper()
	mem, fa := newMem()
	ls := make([]string, 60000)
	for i := range ls {
		ls[i] = fmt.Sprintf("row %05d: value %d", i+1, i*7)
	}
	mem.set(fid, text(ls))
	var obs []protocol.ObserveParams
	for k := range perAgent {
		for a := range agents {
			line := 1 + (a*perAgent+k)%len(ls)
			obs = append(obs, protocol.ObserveParams{Agent: fmt.Sprintf("agent-%d", a), Turn: 1, Anchor: fmt.Sprintf("call_%d", k),
				Sources: []protocol.Source{{URI: fid, Range: &protocol.Range{Start: line, End: line}, Text: ls[line-1]}}})
		}
	}
	m := New(Config{})
	m.AddAdapter(fa)
	b.Cleanup(func() { m.Close() })
	return m, mem, ls, obs
}

// BenchmarkObserveManyLinks: registering 10,000 one-line reads of one file
// by 10 agents, per observation (supersession looks for older reads of the
// same agent on the source at each one).
func BenchmarkObserveManyLinks(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m, _, _, obs := manyLinksWorld(b, 10, 1000)
		ctx := context.Background()
		b.StartTimer()
		for _, o := range obs {
			if _, err := m.Observe(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/observe")
}

// BenchmarkFirstSyncManyLinks: the first sync after a one-line edit in the
// middle of a file that 20,000 one-line reads (20 agents) link.
func BenchmarkFirstSyncManyLinks(b *testing.B) {
	firstSyncAfterEdit(b, 20)
}

// BenchmarkFirstSyncLinksScaling: BenchmarkFirstSyncManyLinks at 1,000
// and 50,000 one-line reads of the file (issue 23: the cost must stay flat
// in the links), beside its floor, "read-hash-diff": the fake adapter's
// read of the edited file (a join and a SHA-256) and the split into lines
// and the common ends that any reconciliation of it needs.
func BenchmarkFirstSyncLinksScaling(b *testing.B) {
	for _, agents := range []int{1, 50} {
		b.Run(fmt.Sprintf("links=%d", agents*1000), func(b *testing.B) {
			firstSyncAfterEdit(b, agents)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(agents*1000), "ns/link")
		})
	}
	b.Run("read-hash-diff", func(b *testing.B) {
		_, _, ls, _ := manyLinksWorld(b, 1, 1)
		cur := append([]string(nil), ls...)
		old := locator.SplitLines(text(ls))
		for i := 0; i < b.N; i++ {
			cur[30000] = fmt.Sprintf("row edited %d", i)
			t := text(cur)
			sum := sha256.Sum256([]byte(t))
			_ = sum
			nw := locator.SplitLines(t)
			commonEnds(old, nw)
		}
	})
}

// firstSyncAfterEdit times the first sync after a one-line edit in the
// middle of a file that agents × 1,000 one-line reads link.
func firstSyncAfterEdit(b *testing.B, agents int) {
	m, mem, ls, obs := manyLinksWorld(b, agents, 1000)
	ctx := context.Background()
	for _, o := range obs {
		if _, err := m.Observe(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	cur := append([]string(nil), ls...)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur[30000] = fmt.Sprintf("row edited %d", i)
		mem.set(fid, text(cur))
		if _, err := m.Sync(ctx, protocol.SyncParams{Agent: "agent-0", Turn: 2}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReleaseRereadChain: an agent re-read one span 200 times (each
// read superseding the one before) and nine others 100 times each, with no
// sync between (the audit trail keeps every superseded block a sync has
// not reported); then the newest read of the first span leaves the
// context (a condenser's release), so the 199 older reads of that span
// are orphaned one after another. It measured the walk from a block to
// the blocks it superseded, which scanned the whole audit trail per block
// (and built each block's id per entry), quadratic in a chain.
func BenchmarkReleaseRereadChain(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		w := newBenchWorld(b, 1, 10)
		w.register(b)
		var last string
		for i := range 1100 {
			k := 0
			if i >= 200 {
				k = 1 + (i-200)%9
			}
			o := w.obs[k]
			o.Turn, o.Anchor = 2+i, fmt.Sprintf("reread_%d", i)
			if _, err := w.m.Observe(ctx, o); err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				last = o.Anchor
			}
		}
		b.StartTimer()
		if _, err := w.m.Release(ctx, protocol.ReleaseParams{Agent: w.obs[0].Agent, Anchors: []string{last}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		w.m.Close()
		b.StartTimer()
	}
}

// BenchmarkSyncAfterRereads: a quiet sync (nothing changed) of an agent
// that re-read its ten spans 2,000 times, syncing after every tenth read,
// under the default placement: the audit trail is full (1,024 superseded
// reads). A sync looked at every superseded read for a pointer to its
// newer read, walking each one's chain of re-reads; only those a sync's
// changes reach can need one.
func BenchmarkSyncAfterRereads(b *testing.B) {
	ctx := context.Background()
	w := newBenchWorld(b, 1, 10)
	w.register(b)
	agent := w.obs[0].Agent
	for i := range 2000 {
		o := w.obs[i%len(w.obs)]
		o.Agent, o.Turn, o.Anchor = agent, 2+i/10, fmt.Sprintf("reread_%d", i)
		if _, err := w.m.Observe(ctx, o); err != nil {
			b.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := w.m.Sync(ctx, protocol.SyncParams{Agent: agent, Turn: 2 + i/10}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := w.m.Sync(ctx, protocol.SyncParams{Agent: agent, Turn: 300}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRereadOneFile: an agent that re-reads one file (whole, as a
// hook runtime's read tool does) and syncs after each read, under tail
// placement: each read supersedes the one before, a chain as long as the
// session. Per op, one read and its sync, after 1,000 earlier reads: the
// cost must not grow with the chain (the pointers pass walks each chain
// once per sync).
func BenchmarkRereadOneFile(b *testing.B) {
	mem, fa := newMem()
	const id = "mem://proj/config.yaml"
	ls := []string{"name: demo", "port: 8080", "debug: false"}
	mem.set(id, text(ls))
	m := New(Config{Options: protocol.InitializeParams{Placement: protocol.PlacementTail}})
	m.AddAdapter(fa)
	b.Cleanup(func() { m.Close() })
	ctx := context.Background()
	read := func(i int) {
		o := protocol.ObserveParams{Agent: "main", Turn: i, Anchor: fmt.Sprintf("read_%d", i),
			Sources: []protocol.Source{{URI: id, Text: text(ls)}}}
		if _, err := m.Observe(ctx, o); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Sync(ctx, protocol.SyncParams{Agent: "main"}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1000 {
		read(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		read(1000 + i)
	}
}
