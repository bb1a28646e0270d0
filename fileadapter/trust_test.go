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

func trustedStampOf(s string) bool { return strings.HasPrefix(s, trustPrefix) }

// TestTrustedOnlyWhereTheWatcherSeesAll: which files get a trusted stamp.
// Everything the watcher cannot vouch for keeps the stat stamp.
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
			if !trustedStampOf(mustStamp(t, a, id)) {
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
			tc.prepare(t, a, root, p)
			id := pathURI(p)
			one := mustStamp(t, a, id)
			batch, errs := a.Stamps(context.Background(), []string{id})
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			if trustedStampOf(one) != tc.want || trustedStampOf(batch[0]) != tc.want {
				t.Fatalf("stamps %q (Stamp) %q (Stamps): trusted %v, want %v", one, batch[0], !tc.want, tc.want)
			}
			if !tc.want {
				strip := func(s string) string { s, _, _ = strings.Cut(s, racySuffix); return s }
				slow, err := a.stampSlow(p)
				if err != nil || strip(slow) != strip(one) {
					t.Fatalf("untrusted stamp %q, stat stamp %q (%v): want the stat stamp", one, slow, err)
				}
			}
		})
	}
}

// TestStampAndStampsAgree: the runtime compares stamps taken by Stamp (a
// hint, an observe) with stamps taken by Stamps (a sync): for trusted
// files they are equal byte for byte, for the others equal but for the
// racy mark (every file here is racily clean: its ctime is new).
func TestStampAndStampsAgree(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	var ps []string
	for i := range 6 {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%d.txt", i))
		write(t, p, fmt.Sprintf("file %d\n", i))
		ps = append(ps, p)
	}
	ids := watchRead(t, a, ps[:4]...)                 // trusted
	ids = append(ids, pathURI(ps[4]), pathURI(ps[5])) // not watched: stat stamps
	ids = append(ids, pathURI(filepath.Join(root, "missing.txt")))
	got, errs := a.Stamps(context.Background(), ids)
	strip := func(s string) string { s, _, _ = strings.Cut(s, racySuffix); return s }
	for i, id := range ids {
		one, err := a.Stamp(context.Background(), id)
		if (err == nil) != (errs[i] == nil) {
			t.Fatalf("%s: errors %v (Stamp) %v (Stamps)", id, err, errs[i])
		}
		if trusted := i < 4; trusted != trustedStampOf(got[i]) || strip(one) != strip(got[i]) || (trusted && one != got[i]) {
			t.Errorf("%s: Stamp %q, Stamps %q (trusted: want %v)", id, one, got[i], trusted)
		}
	}
}

// TestBarrierSeesTheLastWrite: a write made just before a stamp is never
// missed: the barrier waits for every event queued before it. Without it
// this fails within a few rounds (the event is still in the kernel's queue
// or in fsnotify's goroutine when the stamp is taken).
func TestBarrierSeesTheLastWrite(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	p := filepath.Join(root, "pkg", "f.txt")
	write(t, p, "v0\n")
	q := filepath.Join(root, "pkg", "g.txt")
	write(t, q, "w0\n")
	ids := watchRead(t, a, p, q)
	for i := range 300 {
		prev, errs := a.Stamps(context.Background(), ids)
		if errs[0] != nil || !trustedStampOf(prev[0]) {
			t.Fatalf("round %d: stamp %q %v, want trusted", i, prev[0], errs[0])
		}
		write(t, p, fmt.Sprintf("v%d\n", i+1))
		var next string
		if i%2 == 0 {
			next = mustStamp(t, a, ids[0])
		} else {
			st, errs := a.Stamps(context.Background(), ids)
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			if st[1] != prev[1] {
				t.Fatalf("round %d: untouched file's stamp moved: %q -> %q", i, prev[1], st[1])
			}
			next = st[0]
		}
		if next == prev[0] {
			t.Fatalf("round %d: stamp unchanged after a write: %q", i, next)
		}
		// The runtime re-reads on the moved stamp: trust holds after it.
		if _, err := a.Read(context.Background(), ids[0]); err != nil {
			t.Fatal(err)
		}
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

// trustEnv is a manager over a real adapter in fsnotify mode.
type trustEnv struct {
	t    *testing.T
	root string
	a    *countingAdapter
	m    *runtime.Manager
	turn int
}

func newTrustEnv(t *testing.T) *trustEnv {
	t.Helper()
	root := trustRoot(t)
	m := runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: runtime.PlacementInplace}})
	fa, err := New(Config{Roots: []string{root}, Mode: ModeFsnotify, PollInterval: 10 * time.Millisecond}, m.Hint)
	if err != nil {
		t.Fatal(err)
	}
	e := &trustEnv{t: t, root: root, a: &countingAdapter{Adapter: fa}, m: m, turn: 1}
	m.AddAdapter(e.a)
	t.Cleanup(func() { m.Close() })
	return e
}

func (e *trustEnv) observe(p string, text string, lines int) {
	e.t.Helper()
	if _, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: e.turn, Anchor: "call_" + filepath.Base(p),
		Sources: []protocol.Source{{URI: pathURI(p), Range: &protocol.Range{Start: 1, End: lines}, Text: text}}}); err != nil {
		e.t.Fatal(err)
	}
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

// settle syncs until a sync reads nothing (the first syncs after an
// observe read once to move from the stat stamp to the trusted one).
func (e *trustEnv) settle(id string) {
	e.t.Helper()
	for range 5 {
		n := e.a.reads.Load()
		if r := e.sync(); len(r.Blocks) != 0 {
			e.t.Fatalf("settling: %+v", r.Blocks)
		}
		if e.a.reads.Load() == n {
			if !trustedStampOf(mustStamp(e.t, e.a.Adapter, id)) {
				e.t.Fatalf("settled on an untrusted stamp")
			}
			return
		}
	}
	e.t.Fatal("every sync reads: the stamp never settles")
}

// TestQuietSyncSeesEveryChange: through the runtime, each write just before
// a sync shows in that sync's projection, while a quiet sync reads nothing.
func TestQuietSyncSeesEveryChange(t *testing.T) {
	e := newTrustEnv(t)
	p := filepath.Join(e.root, "pkg", "f.txt")
	write(t, p, "alpha\nv0\ngamma\n")
	e.observe(p, "alpha\nv0\ngamma", 3)
	e.settle(pathURI(p))
	for i := range 100 {
		want := fmt.Sprintf("v%d", i+1)
		write(t, p, "alpha\n"+want+"\ngamma\n")
		r := e.sync()
		if len(r.Blocks) != 1 || len(r.Blocks[0].Sources) != 1 || !strings.Contains(r.Blocks[0].Sources[0].Text, want) {
			t.Fatalf("round %d: sync after writing %q: %+v", i, want, r.Blocks)
		}
	}
	n := e.a.reads.Load()
	for range 3 {
		if r := e.sync(); len(r.Blocks) != 0 {
			t.Fatalf("quiet sync: %+v", r.Blocks)
		}
	}
	if got := e.a.reads.Load() - n; got > 1 { // one read moves to the trusted stamp after the last write
		t.Fatalf("quiet syncs read %d times", got)
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
	e.settle(id)
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
	if after := mustStamp(t, e.a.Adapter, id); after == before || !trustedStampOf(after) {
		t.Fatalf("stamp %q -> %q: want a new trusted stamp", before, after)
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
			e.settle(id)
			tc.replace(t, e.root)
			r := e.sync()
			if len(r.Blocks) != 1 || len(r.Blocks[0].Sources) != 1 || !strings.Contains(r.Blocks[0].Sources[0].Text, "NEW") {
				t.Fatalf("sync after the ancestor was replaced: %+v", r.Blocks)
			}
			if !e.a.Polled(id) {
				t.Fatal("replaced directory not polled")
			}
			if st := mustStamp(t, e.a.Adapter, id); trustedStampOf(st) {
				t.Fatalf("stamp %q in a replaced directory: want a stat stamp", st)
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

// TestOverflowMovesEveryStamp: after an overflow (events lost) no trusted
// stamp equals one taken before it.
func TestOverflowMovesEveryStamp(t *testing.T) {
	root := trustRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	var ps []string
	for i := range 5 {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%d.txt", i))
		write(t, p, "x\n")
		ps = append(ps, p)
	}
	ids := watchRead(t, a, ps...)
	for _, err := range []error{fsnotify.ErrEventOverflow, fmt.Errorf("some watcher error")} {
		before, _ := a.Stamps(context.Background(), ids)
		a.onError(err)
		after, _ := a.Stamps(context.Background(), ids)
		for i := range ids {
			if !trustedStampOf(before[i]) || !trustedStampOf(after[i]) || before[i] == after[i] {
				t.Fatalf("%v: %s stamp %q -> %q: want two different trusted stamps", err, ids[i], before[i], after[i])
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
	id := pathURI(p)
	e.settle(id)
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
	if st := mustStamp(t, e.a.Adapter, id); trustedStampOf(st) {
		t.Fatalf("stamp %q of a file with two links: want a stat stamp", st)
	}
}
