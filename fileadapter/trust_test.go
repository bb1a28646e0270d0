//go:build linux

package fileadapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

// trustRoot is a temp root on a file system whose stamps may be trusted
// (the test is about trusted stamps; elsewhere it has nothing to test).
func trustRoot(t *testing.T) string {
	t.Helper()
	root := tempRoot(t)
	if id := identify(root); !id.ok || !id.local {
		t.Skipf("%s is not on a local file system inotify fully sees: no trusted stamps to test", root)
	}
	return root
}

// watchRead watches and reads each file, as the runtime does after an observe.
func watchRead(t *testing.T, a *Adapter, ps ...string) []string {
	t.Helper()
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = pathURI(p)
		if err := a.Watch(ids[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Read(context.Background(), ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func mustStamp(t *testing.T, a *Adapter, id string) string {
	t.Helper()
	st, err := a.Stamp(context.Background(), id)
	if err != nil {
		t.Fatalf("stamp %s: %v", id, err)
	}
	return st
}

// clockAhead judges racily clean stamps by a clock an hour ahead, so files
// just written are not racily clean and their stamps may be cached (the
// racy rule is tested on its own in TestRacyStampNeverCached). Each write
// of these tests then changes the file's size or inode: a same-size write
// in the same timestamp tick is what the racy rule exists for.
func clockAhead(a *Adapter) {
	a.now = func() time.Time { return time.Now().Add(time.Hour) }
}

// fillers writes, watches and reads n files in their own directory, so a
// batch with them reaches the threshold whatever else it holds.
func fillers(t *testing.T, a *Adapter, root string, n int) []string {
	t.Helper()
	ps := make([]string, n)
	for i := range ps {
		ps[i] = filepath.Join(root, "fill", fmt.Sprintf("f%03d.txt", i))
		write(t, ps[i], fmt.Sprintf("filler %d\n", i))
	}
	return watchRead(t, a, ps...)
}

// servable reports whether p's stamp may come from its cache now (the
// watcher vouches for it).
func servable(a *Adapter, p string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.trustedDirOf(a.marks[p], filepath.Dir(p))
	return ok
}

// cachedStamp is p's cached stamp ("": none).
func cachedStamp(a *Adapter, p string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.marks[p]; m != nil {
		return m.stamp
	}
	return ""
}

// stamps is Stamps that fails the test on an error, with the number of
// stamps it served from the cache.
func stamps(t *testing.T, a *Adapter, ids []string) ([]string, int) {
	t.Helper()
	n := a.cacheHits.Load()
	st, errs := a.Stamps(context.Background(), ids)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("stamps %s: %v", ids[i], err)
		}
	}
	return st, int(a.cacheHits.Load() - n)
}

func stripRacy(s string) string { s, _, _ = strings.Cut(s, racySuffix); return s }

// TestTrustedOnlyWhereTheWatcherSeesAll: which files' stamps may come from
// the cache in a batch above the threshold. Everything the watcher cannot
// vouch for is stat'ed every time; every stamp is the stat stamp.
func TestTrustedOnlyWhereTheWatcherSeesAll(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string
		prepare func(t *testing.T, a *Adapter, root, p string) // after the file is written
		want    bool
	}{
		{"watched and read", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) { watchRead(t, a, p) }, true},
		{"auto mode", ModeAuto, func(t *testing.T, a *Adapter, root, p string) { watchRead(t, a, p) }, true},
		{"not watched", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) {}, false},
		{"poll mode", ModePoll, func(t *testing.T, a *Adapter, root, p string) { watchRead(t, a, p) }, false},
		{"hooks mode", ModeHooks, func(t *testing.T, a *Adapter, root, p string) { watchRead(t, a, p) }, false},
		{"polled directory", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) {
			a.addWatch = func(string) error { return syscall.ENOSPC }
			watchRead(t, a, p)
			if !a.Polled(pathURI(p)) {
				t.Fatal("directory not polled")
			}
		}, false},
		{"second link made before the read", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) {
			if err := os.Link(p, filepath.Join(root, "other", "hard.txt")); err != nil {
				t.Fatal(err)
			}
			watchRead(t, a, p)
		}, false},
		{"second link seen by a later read", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) {
			id := watchRead(t, a, p)[0]
			if !servable(a, p) {
				t.Fatal("not trusted before the link")
			}
			if err := os.Link(p, filepath.Join(root, "other", "hard.txt")); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Read(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"read failed", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) {
			a.maxBytes = 1 // the read below fails: too large
			if err := a.Watch(pathURI(p)); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Read(context.Background(), pathURI(p)); err == nil {
				t.Fatal("read of a file over MaxBytes succeeded")
			}
		}, false},
		{"no barrier", ModeFsnotify, func(t *testing.T, a *Adapter, root, p string) {
			watchRead(t, a, p)
			if err := os.RemoveAll(a.barrier.dir); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := trustRoot(t)
			p := filepath.Join(root, "pkg", "f.txt")
			write(t, p, "alpha\n")
			write(t, filepath.Join(root, "other", "keep.txt"), "x\n")
			a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: tc.mode})
			clockAhead(a)
			ids := fillers(t, a, root, a.trustMin)
			tc.prepare(t, a, root, p)
			id := pathURI(p)
			ids = append([]string{id}, ids...)
			stamps(t, a, ids) // fills the cache
			before := a.cacheHits.Load()
			got, _ := stamps(t, a, ids[:1]) // below the threshold: never served
			if a.cacheHits.Load() != before {
				t.Fatal("a batch below the threshold served a cached stamp")
			}
			one := mustStamp(t, a, id)
			batch, served := stamps(t, a, ids)
			fillersServed := tc.mode != ModePoll && tc.mode != ModeHooks && tc.name != "no barrier"
			wantServed := 0
			if fillersServed {
				wantServed = a.trustMin
			}
			if tc.want {
				wantServed++
			}
			if served != wantServed {
				t.Fatalf("served %d stamps of %d from the cache, want %d", served, len(ids), wantServed)
			}
			slow, err := a.stampSlow(p)
			if err != nil || one != batch[0] || got[0] != one || slow != one {
				t.Fatalf("stamps %q (Stamp) %q (small Stamps) %q (large Stamps) %q (stat, %v): want one stat stamp", one, got[0], batch[0], slow, err)
			}
		})
	}
}

// TestStampAndStampsAgree: the runtime compares stamps taken by Stamp (a
// hint, an observe) with stamps taken by Stamps (a sync): for an unchanged
// file they are the same stat stamp whatever the batch size, from the cache
// or not.
func TestStampAndStampsAgree(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	clockAhead(a)
	var ps []string
	for i := range 2 * a.trustMin {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%d.txt", i))
		write(t, p, fmt.Sprintf("file %d\n", i))
		ps = append(ps, p)
	}
	trusted := len(ps) - 4
	ids := watchRead(t, a, ps[:trusted]...)
	for _, p := range ps[trusted:] { // not watched: stat'ed every time
		ids = append(ids, pathURI(p))
	}
	ps = append(ps, filepath.Join(root, "missing.txt"))
	ids = append(ids, pathURI(ps[len(ps)-1]))
	want := make([]string, len(ids))
	for i, p := range ps {
		want[i], _ = a.stampSlow(p)
	}
	for _, n := range []int{1, 2, a.trustMin - 1, a.trustMin, len(ids)} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for round := range 2 {
				got, errs := a.Stamps(context.Background(), ids[:n])
				for i, id := range ids[:n] {
					one, err := a.Stamp(context.Background(), id)
					if (err == nil) != (errs[i] == nil) {
						t.Fatalf("%s: errors %v (Stamp) %v (Stamps)", id, err, errs[i])
					}
					if one != got[i] || got[i] != want[i] {
						t.Fatalf("round %d, %s: Stamp %q, Stamps %q, stat %q", round, id, one, got[i], want[i])
					}
				}
			}
			// Every Stamp above refreshed the cache: a large batch now serves
			// every trusted file from it.
			before := a.cacheHits.Load()
			got, _ := a.Stamps(context.Background(), ids[:n])
			served := int(a.cacheHits.Load() - before)
			if n >= a.trustMin && served != min(n, trusted) || n < a.trustMin && served != 0 {
				t.Fatalf("batch of %d served %d cached stamps", n, served)
			}
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("%s: cached %q, stat %q", ids[i], got[i], want[i])
				}
			}
		})
	}
}

// TestBarrierSeesTheLastWrite: a write made just before a large Stamps is
// never missed: the barrier waits for every event queued before it, so the
// file's mark has moved and its cached stamp is not served. Without the
// barrier this fails within a few rounds (the event is still in the
// kernel's queue or in fsnotify's goroutine when the cache is consulted).
func TestBarrierSeesTheLastWrite(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	clockAhead(a)
	p := filepath.Join(root, "pkg", "f.txt")
	write(t, p, "v\n")
	ids := append(watchRead(t, a, p), fillers(t, a, root, a.trustMin)...)
	stamps(t, a, ids) // fills the cache
	for i := range 300 {
		prev, served := stamps(t, a, ids)
		if served < a.trustMin {
			t.Fatalf("round %d: %d stamps served from the cache, want at least %d", i, served, a.trustMin)
		}
		// Each write a new size: the stat stamp always moves.
		write(t, p, strings.Repeat("v", i+2)+"\n")
		var one string
		if i%2 == 0 {
			one = mustStamp(t, a, ids[0]) // refreshes the cache first
		}
		next, _ := stamps(t, a, ids)
		if next[0] == prev[0] {
			t.Fatalf("round %d: stamp unchanged after a write: %q", i, next[0])
		}
		if one != "" && one != next[0] {
			t.Fatalf("round %d: Stamp %q, Stamps %q", i, one, next[0])
		}
		for k := 1; k < len(ids); k++ {
			if next[k] != prev[k] {
				t.Fatalf("round %d: untouched %s's stamp moved: %q -> %q", i, ids[k], prev[k], next[k])
			}
		}
		// The runtime re-reads on the moved stamp: trust holds after it.
		if _, err := a.Read(context.Background(), ids[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBigBatchSeesEveryChange: each kind of change between two large
// batches moves the file's stamp, to the stat stamp Stamp gives.
func TestBigBatchSeesEveryChange(t *testing.T) {
	later := time.Now().Add(time.Minute)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
	}{
		{"append", func(t *testing.T, p string) { appendText(t, p, "more\n") }},
		{"rewrite", func(t *testing.T, p string) { write(t, p, "a longer text\n") }},
		{"truncate", func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"atomic replace", func(t *testing.T, p string) {
			tmp := p + ".tmp"
			write(t, tmp, "alpha\n") // same text, another inode
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"chmod", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"touch", func(t *testing.T, p string) {
			if err := os.Chtimes(p, later, later); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := trustRoot(t)
			a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
			clockAhead(a)
			p := filepath.Join(root, "pkg", "f.txt")
			write(t, p, "alpha\n")
			ids := append(watchRead(t, a, p), fillers(t, a, root, a.trustMin)...)
			stamps(t, a, ids)
			before, served := stamps(t, a, ids)
			if served != len(ids) || cachedStamp(a, p) != before[0] {
				t.Fatalf("served %d of %d before the change", served, len(ids))
			}
			tc.change(t, p)
			after, errs := a.Stamps(context.Background(), ids)
			one, err := a.Stamp(context.Background(), ids[0])
			if (errs[0] == nil) != (err == nil) || after[0] != one || (err == nil && after[0] == before[0]) {
				t.Fatalf("stamp %q -> %q (%v); Stamp %q (%v)", before[0], after[0], errs[0], one, err)
			}
		})
	}
}

// TestLinkedWhileUntrusted: a file given a second link from another
// directory loses its trust at its next read; written through that link
// (no event in its own directory) and unlinked again, it is trusted again
// at the next read, and its stamp from before the link is not served.
func TestLinkedWhileUntrusted(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	clockAhead(a)
	p := filepath.Join(root, "pkg", "f.txt")
	write(t, p, "alpha\n")
	write(t, filepath.Join(root, "other", "keep.txt"), "x\n")
	ids := append(watchRead(t, a, p), fillers(t, a, root, a.trustMin)...)
	stamps(t, a, ids)
	before, served := stamps(t, a, ids)
	if served != len(ids) {
		t.Fatalf("served %d of %d", served, len(ids))
	}
	hard := filepath.Join(root, "other", "hard.txt")
	if err := os.Link(p, hard); err != nil {
		t.Fatal(err)
	}
	read := func() {
		if _, err := a.Read(context.Background(), ids[0]); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if servable(a, p) {
		t.Fatal("trusted with two links")
	}
	appendText(t, hard, "through the link\n")
	if err := os.Remove(hard); err != nil {
		t.Fatal(err)
	}
	read()
	if !servable(a, p) {
		t.Fatal("not trusted again with one link")
	}
	after, served := stamps(t, a, ids)
	if one := mustStamp(t, a, ids[0]); after[0] == before[0] || after[0] != one || served != len(ids)-1 {
		t.Fatalf("stamp %q -> %q, Stamp %q, served %d of %d: want the new stat stamp, not the cached one", before[0], after[0], one, served, len(ids))
	}
}

// TestRacyStampNeverCached: a racily clean file is stat'ed by every batch,
// however large, and its stamp (unique to its call) is never cached, while
// the other files of the batch are served from the cache.
func TestRacyStampNeverCached(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	clockAhead(a)
	p := filepath.Join(root, "pkg", "f.txt")
	write(t, p, "alpha\n")
	// Times ahead of the adapter's clock: racily clean by it.
	soon := a.now().Add(time.Minute)
	if err := os.Chtimes(p, soon, soon); err != nil {
		t.Fatal(err)
	}
	ids := append(watchRead(t, a, p), fillers(t, a, root, a.trustMin)...)
	stamps(t, a, ids) // caches the others
	prev := mustStamp(t, a, ids[0])
	for i := range 3 {
		st, served := stamps(t, a, ids)
		if served != a.trustMin || !strings.Contains(st[0], racySuffix) || st[0] == prev || cachedStamp(a, p) != "" {
			t.Fatalf("round %d: served %d (want the %d others), stamp %q after %q, cached %q: want a new racy stamp, nothing cached",
				i, served, a.trustMin, st[0], prev, cachedStamp(a, p))
		}
		if stripRacy(st[0]) != stripRacy(prev) {
			t.Fatalf("round %d: stat stamp moved: %q -> %q", i, prev, st[0])
		}
		prev = st[0]
	}
}

// countingAdapter is the real adapter, counting the runtime's reads.
type countingAdapter struct {
	*Adapter
	reads atomic.Int64
}

func (c *countingAdapter) Read(ctx context.Context, id string) (runtime.Content, error) {
	c.reads.Add(1)
	return c.Adapter.Read(ctx, id)
}

// trustEnv is a manager over a real adapter in fsnotify mode, its clock
// ahead (clockAhead), with enough filler files observed that each sync's
// Stamps is above the threshold.
type trustEnv struct {
	t       *testing.T
	root    string
	a       *countingAdapter
	m       *runtime.Manager
	turn    int
	sources int // observed files
}

func newTrustEnv(t *testing.T) *trustEnv {
	t.Helper()
	root := trustRoot(t)
	m := runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: runtime.PlacementInplace}})
	fa, err := New(Config{Roots: []string{root}, Mode: ModeFsnotify, PollInterval: 10 * time.Millisecond}, m.Hint)
	if err != nil {
		t.Fatal(err)
	}
	clockAhead(fa)
	e := &trustEnv{t: t, root: root, a: &countingAdapter{Adapter: fa}, m: m, turn: 1}
	m.AddAdapter(e.a)
	t.Cleanup(func() { m.Close() })
	for i := range fa.trustMin {
		p := filepath.Join(root, "fill", fmt.Sprintf("f%03d.txt", i))
		text := fmt.Sprintf("filler %d", i)
		write(t, p, text+"\n")
		e.observe(p, text, 1)
	}
	return e
}

func (e *trustEnv) observe(p string, text string, lines int) {
	e.t.Helper()
	if _, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: e.turn, Anchor: "call_" + filepath.Base(p),
		Sources: []protocol.Source{{URI: pathURI(p), Range: &protocol.Range{Start: 1, End: lines}, Text: text}}}); err != nil {
		e.t.Fatal(err)
	}
	e.sources++
}

func (e *trustEnv) sync() protocol.SyncResult {
	e.t.Helper()
	e.turn++
	r, err := e.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: e.turn})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// settle syncs until a sync reads nothing and takes every stamp from the
// cache (an observe's events may still move a mark once).
func (e *trustEnv) settle() {
	e.t.Helper()
	// Syncs until one reads nothing and takes every stamp from the cache:
	// the watches of directories just made are set up by the watcher's
	// goroutine, which a loaded machine (the whole suite at once) can keep
	// waiting for a while; a few seconds, not a few syncs, bound it.
	deadline := time.Now().Add(5 * time.Second)
	for try := 0; try < 5 || time.Now().Before(deadline); try++ {
		n, h := e.a.reads.Load(), e.a.cacheHits.Load()
		if r := e.sync(); len(r.Blocks) != 0 {
			e.t.Fatalf("settling: %+v", r.Blocks)
		}
		if e.a.reads.Load() == n && e.a.cacheHits.Load()-h == int64(e.sources) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatal("every sync reads or stats: the stamps never settle")
}

// TestQuietSyncSeesEveryChange: through the runtime, each write just before
// a sync shows in that sync's projection, while a quiet sync reads nothing.
func TestQuietSyncSeesEveryChange(t *testing.T) {
	e := newTrustEnv(t)
	p := filepath.Join(e.root, "pkg", "f.txt")
	write(t, p, "alpha\nv0\ngamma\n")
	e.observe(p, "alpha\nv0\ngamma", 3)
	e.settle()
	for i := range 100 {
		want := fmt.Sprintf("v%d", i+1)
		write(t, p, "alpha\n"+want+"\ngamma\n"+strings.Repeat("#\n", i)) // a new size each time
		r := e.sync()
		if len(r.Blocks) != 1 || len(r.Blocks[0].Sources) != 1 || !strings.Contains(r.Blocks[0].Sources[0].Text, want) {
			t.Fatalf("round %d: sync after writing %q: %+v", i, want, r.Blocks)
		}
	}
	n, h := e.a.reads.Load(), e.a.cacheHits.Load()
	for range 3 {
		if r := e.sync(); len(r.Blocks) != 0 {
			t.Fatalf("quiet sync: %+v", r.Blocks)
		}
	}
	// Every stamp comes from the cache; the one read allowed is the last
	// write's hint (debounced, it forces a read in the background).
	if reads, served := e.a.reads.Load()-n, e.a.cacheHits.Load()-h; reads > 1 || served != int64(3*e.sources) {
		t.Fatalf("quiet syncs read %d times, served %d of %d stamps from the cache", reads, served, 3*e.sources)
	}
}

// TestTouchReadsButChangesNothing: a touch is an event, so the next sync
// reads the file; the hash is the same, so nothing is dirty.
func TestTouchReadsButChangesNothing(t *testing.T) {
	e := newTrustEnv(t)
	p := filepath.Join(e.root, "f.txt")
	write(t, p, "alpha\nbeta\n")
	e.observe(p, "alpha\nbeta", 2)
	id := pathURI(p)
	e.settle()
	before := mustStamp(t, e.a.Adapter, id)
	c0, err := e.a.Adapter.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := e.a.reads.Load() // the hint's background read may come before the sync's
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if r := e.sync(); len(r.Blocks) != 0 {
		t.Fatalf("sync after a touch: %+v", r.Blocks)
	}
	if e.a.reads.Load() == n {
		t.Fatal("no read after a touch")
	}
	c1, err := e.a.Adapter.Read(context.Background(), id)
	if err != nil || c1.Version != c0.Version {
		t.Fatalf("version %q -> %q (%v)", c0.Version, c1.Version, err)
	}
	if after := mustStamp(t, e.a.Adapter, id); after == before || !servable(e.a.Adapter, p) {
		t.Fatalf("stamp %q -> %q (trusted %v): want a new stamp, still trusted", before, after, servable(e.a.Adapter, p))
	}
}

// TestAncestorReplaced: a renamed ancestor takes the watch with the old
// directory; the per-directory inode check sees another directory at the
// path, the change is seen and the directory is polled from then on.
func TestAncestorReplaced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, root string)
	}{
		{"renamed and made again", func(t *testing.T, root string) {
			if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "a.old")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(root, "a", "b", "f.txt"), "alpha\nNEW\n")
		}},
		{"swapped with a copy", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a.new", "b", "f.txt"), "alpha\nNEW\n")
			if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "a.old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(root, "a.new"), filepath.Join(root, "a")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTrustEnv(t)
			p := filepath.Join(e.root, "a", "b", "f.txt")
			write(t, p, "alpha\nbeta\n")
			e.observe(p, "alpha\nbeta", 2)
			id := pathURI(p)
			e.settle()
			tc.replace(t, e.root)
			r := e.sync()
			if len(r.Blocks) != 1 || len(r.Blocks[0].Sources) != 1 || !strings.Contains(r.Blocks[0].Sources[0].Text, "NEW") {
				t.Fatalf("sync after the ancestor was replaced: %+v", r.Blocks)
			}
			if !e.a.Polled(id) {
				t.Fatal("replaced directory not polled")
			}
			if servable(e.a.Adapter, p) {
				t.Fatal("a file in a replaced directory is still trusted")
			}
			// Polled, later changes are still seen.
			write(t, p, "alpha\nNEWER\n")
			waitFor(t, "the polled change", func() bool {
				r := e.sync()
				return len(r.Blocks) == 1 && len(r.Blocks[0].Sources) == 1 && strings.Contains(r.Blocks[0].Sources[0].Text, "NEWER")
			})
		})
	}
}

// TestAncestorSwappedAndBack: a stat taken while an ancestor is swapped
// with another tree stats the other tree's file; it must not be cached
// for the watched one, whose directory passes the inode check again once
// swapped back. The stat sees the other directory and polls it.
func TestAncestorSwappedAndBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stamp func(t *testing.T, a *Adapter, ids []string)
	}{
		{"Stamp", func(t *testing.T, a *Adapter, ids []string) { mustStamp(t, a, ids[0]) }},
		{"small Stamps", func(t *testing.T, a *Adapter, ids []string) { stamps(t, a, ids[:1]) }},
		{"large Stamps", func(t *testing.T, a *Adapter, ids []string) { stamps(t, a, ids) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := trustRoot(t)
			a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
			clockAhead(a)
			p := filepath.Join(root, "a", "b", "f.txt")
			write(t, p, "alpha\n")
			ids := append(watchRead(t, a, p), fillers(t, a, root, a.trustMin)...)
			stamps(t, a, ids)
			if _, served := stamps(t, a, ids); served != len(ids) {
				t.Fatalf("served %d of %d", served, len(ids))
			}
			write(t, filepath.Join(root, "a.new", "b", "f.txt"), "alpha\nthe other tree\n")
			swap := func(from, to string) {
				for _, r := range [][2]string{{"a", from}, {to, "a"}} {
					if err := os.Rename(filepath.Join(root, r[0]), filepath.Join(root, r[1])); err != nil {
						t.Fatal(err)
					}
				}
			}
			swap("a.old", "a.new")
			tc.stamp(t, a, ids)
			swap("a.new", "a.old")
			want, err := a.stampSlow(p)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := stamps(t, a, ids)
			if got[0] != want || servable(a, p) || !a.Polled(ids[0]) {
				t.Fatalf("stamp %q, stat %q (trusted %v, polled %v): want the stat, the directory polled", got[0], want, servable(a, p), a.Polled(ids[0]))
			}
		})
	}
}

// TestOverflowDropsTheCache: after an overflow or a watcher error (events
// may be lost) no cached stamp is served: every file is stat'ed again,
// then cached anew.
func TestOverflowDropsTheCache(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	clockAhead(a)
	var ps []string
	for i := range a.trustMin {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%d.txt", i))
		write(t, p, "x\n")
		ps = append(ps, p)
	}
	ids := watchRead(t, a, ps...)
	stamps(t, a, ids)
	for _, err := range []error{fsnotify.ErrEventOverflow, fmt.Errorf("some watcher error")} {
		before, served := stamps(t, a, ids)
		if served != len(ids) {
			t.Fatalf("%v: served %d of %d before", err, served, len(ids))
		}
		a.onError(err)
		after, served := stamps(t, a, ids)
		again, servedAgain := stamps(t, a, ids)
		if served != 0 || servedAgain != len(ids) {
			t.Fatalf("%v: served %d just after, %d next (want 0, then %d)", err, served, servedAgain, len(ids))
		}
		for i := range ids {
			if before[i] != after[i] || after[i] != again[i] {
				t.Fatalf("%v: %s: stamps %q, %q, %q of an unchanged file", err, ids[i], before[i], after[i], again[i])
			}
		}
	}
}

// TestBarrierReleasedByOverflow: a barrier whose own event is lost in an
// overflow is released by it (the epoch moved, so no trusted stamp can
// match an older one), not left to its timeout.
func TestBarrierReleasedByOverflow(t *testing.T) {
	b, err := newBarrier(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.wait(context.Background(), time.Hour) }()
	// No watcher: only the release can end the wait.
	waitFor(t, "the barrier to start", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.next == 1 })
	b.releaseAll()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- b.wait(ctx, time.Hour) }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("cancelled barrier: %v", err)
	}
	if err := b.wait(context.Background(), time.Millisecond); err != errBarrierTimeout {
		t.Fatalf("barrier with no event: %v, want the timeout", err)
	}
}

// TestCloseRemovesBarrierDir: the private directory goes with the adapter.
func TestCloseRemovesBarrierDir(t *testing.T) {
	a, err := New(Config{Roots: []string{tempRoot(t)}, Mode: ModeFsnotify}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.barrier == nil {
		t.Fatal("no barrier in fsnotify mode")
	}
	dir := a.barrier.dir
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("barrier dir after Close: %v", err)
	}
}

// TestWriteThroughNewHardLink: a second link made from another directory
// after the last read, then a write through it: no event reaches the
// watched directory (inotify reports both only to that other directory and
// to watches on the file itself). The link sweep finds the link count and
// drops the trust, so the change is seen within a sweep.
func TestWriteThroughNewHardLink(t *testing.T) {
	e := newTrustEnv(t)
	p := filepath.Join(e.root, "pkg", "f.txt")
	write(t, p, "alpha\nbeta\n")
	write(t, filepath.Join(e.root, "other", "keep.txt"), "x\n")
	e.observe(p, "alpha\nbeta", 2)
	e.settle()
	hard := filepath.Join(e.root, "other", "hard.txt")
	if err := os.Link(p, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hard, []byte("alpha\nLINKED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the write through the new link", func() bool {
		r := e.sync()
		return len(r.Blocks) == 1 && len(r.Blocks[0].Sources) == 1 && strings.Contains(r.Blocks[0].Sources[0].Text, "LINKED")
	})
	if servable(e.a.Adapter, p) {
		t.Fatal("a file with two links is still trusted")
	}
}

// appendText appends s to the file at p in place (same inode).
func appendText(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
