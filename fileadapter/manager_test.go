package fileadapter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

// env is a real Manager over the real file adapter and a temp root.
type env struct {
	t    *testing.T
	root string
	m    *runtime.Manager
	fa   *fileadapter.Adapter
}

func newEnv(t *testing.T, mode string) *env {
	t.Helper()
	return newEnvDebounce(t, mode, 0)
}

func newEnvDebounce(t *testing.T, mode string, debounce time.Duration) *env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, root: root, m: runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: runtime.PlacementInplace}})}
	e.fa, err = fileadapter.New(fileadapter.Config{Roots: []string{root}, Mode: mode, MaxBytes: 1 << 20,
		PollInterval: 10 * time.Millisecond, Debounce: debounce}, e.m.Hint)
	if err != nil {
		t.Fatal(err)
	}
	e.m.AddAdapter(e.fa)
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *env) path(n string) string { return filepath.Join(e.root, n) }

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) observe(name string, r *protocol.Range, text string) protocol.ObserveResult {
	e.t.Helper()
	o, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "call_" + name,
		Sources: []protocol.Source{{URI: "file://" + e.path(name), Range: r, Text: text}}})
	if err != nil {
		e.t.Fatalf("observe %s: %v", name, err)
	}
	return o
}

func (e *env) sync() protocol.SyncResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := e.m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2})
	if err != nil {
		e.t.Fatalf("sync: %v", err)
	}
	return r
}

// TestRootsHoldAfterObserve: a file, or one of its parent directories,
// replaced by a symlink to outside the roots after the read must never bring
// the outside text into the context: the block turns invalid with a notice,
// and sourceChanged on the path agrees (refused as outside the roots).
func TestRootsHoldAfterObserve(t *testing.T) {
	const inside = "alpha\nbeta\ngamma\n"
	const outside = "alpha\nbeta OUTSIDE\ngamma\n" // a local edit: today's code "patched" it in
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, e *env, out string)
	}{
		{"file", func(t *testing.T, e *env, out string) {
			if err := os.Remove(e.path("sub/f.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(out, "sub/f.txt"), e.path("sub/f.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"parent", func(t *testing.T, e *env, out string) {
			if err := os.RemoveAll(e.path("sub")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(out, "sub"), e.path("sub")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, mode := range []string{fileadapter.ModeHooks, fileadapter.ModePoll, fileadapter.ModeFsnotify} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				e := newEnv(t, mode)
				out, _ := filepath.EvalSymlinks(t.TempDir())
				writeFile(t, e.path("sub/f.txt"), inside)
				writeFile(t, filepath.Join(out, "sub/f.txt"), outside)
				if o := e.observe("sub/f.txt", &protocol.Range{Start: 1, End: 3}, "alpha\nbeta\ngamma"); o.Status != protocol.Valid {
					t.Fatalf("observe %+v", o)
				}
				tc.replace(t, e, out)
				r := e.sync()
				if len(r.Blocks) != 1 {
					t.Fatalf("sync %+v", r)
				}
				b := r.Blocks[0]
				if b.Status != protocol.Invalid || len(b.Sources) != 0 || !strings.Contains(b.Notice, "outside the workspace roots") {
					t.Fatalf("block %+v, want invalid with an outside-the-roots notice", b)
				}
				for _, s := range b.Sources {
					if strings.Contains(s.Text, "OUTSIDE") {
						t.Fatalf("outside text reached the view: %+v", b)
					}
				}
				_, err := e.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: "file://" + e.path("sub/f.txt")})
				if !errors.Is(err, runtime.ErrOutsideRoots) {
					t.Fatalf("sourceChanged: %v, want ErrOutsideRoots", err)
				}
				if _, err := e.fa.Stamp(context.Background(), "file://"+e.path("sub/f.txt")); !errors.Is(err, runtime.ErrOutsideRoots) {
					t.Fatalf("stamp: %v, want ErrOutsideRoots", err)
				}
				if _, err := e.fa.Read(context.Background(), "file://"+e.path("sub/f.txt")); !errors.Is(err, runtime.ErrOutsideRoots) {
					t.Fatalf("read: %v, want ErrOutsideRoots", err)
				}
				// Full projection: still invalid, never the outside text.
				full, err := e.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: 3, Full: true})
				if err != nil || len(full.Blocks) != 1 || full.Blocks[0].Status != protocol.Invalid {
					t.Fatalf("full sync %+v %v", full, err)
				}
			})
		}
	}
}

// TestFIFOReplacingFileDoesNotHang: a file replaced by a FIFO (no writer)
// turns the block invalid; the sync returns.
func TestFIFOReplacingFileDoesNotHang(t *testing.T) {
	e := newEnv(t, fileadapter.ModeHooks)
	writeFile(t, e.path("f.txt"), "one\ntwo\n")
	e.observe("f.txt", nil, "one\ntwo")
	if err := os.Remove(e.path("f.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(e.path("f.txt"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan protocol.SyncResult, 1)
	go func() { done <- e.sync() }()
	select {
	case r := <-done:
		if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || !strings.Contains(r.Blocks[0].Notice, "could not be re-read") {
			t.Fatalf("sync %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sync hung on a FIFO")
	}
}

// TestRacilyCleanRewrite: a same-size in-place rewrite whose mtime was put
// back (touch -r, cp -p) keeps size, mtime and inode: the next sync must
// still see it, in hooks and poll modes, and in fsnotify mode while the
// watcher's debounce holds the event back.
func TestRacilyCleanRewrite(t *testing.T) {
	for _, mode := range []string{fileadapter.ModeHooks, fileadapter.ModePoll, fileadapter.ModeFsnotify} {
		t.Run(mode, func(t *testing.T) {
			e := newEnvDebounce(t, mode, time.Hour)
			p := e.path("f.txt")
			writeFile(t, p, "port: 8080\nname: demo\n")
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			e.observe("f.txt", &protocol.Range{Start: 1, End: 2}, "port: 8080\nname: demo")
			if r := e.sync(); len(r.Blocks) != 0 {
				t.Fatalf("first sync %+v", r)
			}
			// In place (same inode), same size, mtime restored.
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("9090"), 6); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			r := e.sync()
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Patched || r.Blocks[0].Sources[0].Text != "port: 9090\nname: demo" {
				t.Fatalf("sync after rewrite %+v", r)
			}
		})
	}
}

// TestListingSource: a listing observed with its canonical text turns
// invalid when entries appear or vanish, with a notice naming them
// (bounded), in every watch mode; fsnotify and poll also hint on their own.
func TestListingSource(t *testing.T) {
	for _, mode := range []string{fileadapter.ModeHooks, fileadapter.ModePoll, fileadapter.ModeFsnotify} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mode)
			hinted := make(chan struct{}, 100)
			e.m.Close()
			e.m = runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: runtime.PlacementInplace}, OnChange: func([]string) {
				select {
				case hinted <- struct{}{}:
				default:
				}
			}})
			var err error
			e.fa, err = fileadapter.New(fileadapter.Config{Roots: []string{e.root}, Mode: mode, PollInterval: 10 * time.Millisecond}, e.m.Hint)
			if err != nil {
				t.Fatal(err)
			}
			e.m.AddAdapter(e.fa)
			t.Cleanup(func() { e.m.Close() })
			for _, f := range []string{"old.txt", "src/a.go", "node_modules/x/y.js"} {
				writeFile(t, e.path(f), "x\n")
			}
			uri := "file://" + e.root + "?depth=0&ignore=node_modules"
			o, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "ls",
				Sources: []protocol.Source{{URI: uri, Text: "old.txt\nsrc/\nsrc/a.go"}}})
			if err != nil || o.Status != protocol.Valid {
				t.Fatalf("observe %+v %v", o, err)
			}
			if r := e.sync(); len(r.Blocks) != 0 {
				t.Fatalf("sync before any change %+v", r)
			}
			// A content change and a change under an ignored directory do
			// not change the listing.
			writeFile(t, e.path("src/a.go"), "package a\n")
			writeFile(t, e.path("node_modules/x/z.js"), "x\n")
			if r := e.sync(); len(r.Blocks) != 0 {
				t.Fatalf("sync after a content change %+v", r)
			}
			writeFile(t, e.path("a.txt"), "x\n")
			writeFile(t, e.path("src/b.go"), "x\n")
			if err := os.Remove(e.path("old.txt")); err != nil {
				t.Fatal(err)
			}
			if mode != fileadapter.ModeHooks {
				select {
				case <-hinted:
				case <-time.After(10 * time.Second):
					t.Fatal("no change notification from the watcher")
				}
			}
			r := e.sync()
			want := "[concord] the listing of " + e.root + " shown earlier is out of date: added a.txt, src/b.go; removed old.txt. List it again before relying on it."
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || r.Blocks[0].Notice != want {
				t.Fatalf("sync %+v\nwant notice %q", r, want)
			}
		})
	}
}

// TestListingNoticeBounded: many entries are named up to ten, then counted.
func TestListingNoticeBounded(t *testing.T) {
	e := newEnv(t, fileadapter.ModeHooks)
	writeFile(t, e.path("keep"), "")
	uri := "file://" + e.root
	if _, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "ls",
		Sources: []protocol.Source{{URI: uri + "?depth=1", Text: "keep"}}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		writeFile(t, e.path(fmt.Sprintf("f%02d", i)), "")
	}
	r := e.sync()
	if len(r.Blocks) != 1 || !strings.Contains(r.Blocks[0].Notice, "added f00, f01, f02, f03, f04, f05, f06, f07, f08, f09 and 15 more. List it again") {
		t.Fatalf("sync %+v", r)
	}
	if err := os.RemoveAll(e.root + "/keep"); err != nil {
		t.Fatal(err)
	}
}

// TestEmptiedThenWritten: a writer that truncates, then writes (most tools)
// can be read in between. The empty file turns the block invalid, and the
// content that follows repairs it (a local edit: patched) instead of leaving
// it invalid until the agent reads again.
func TestEmptiedThenWritten(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprint("whole=", whole), func(t *testing.T) {
			e := newEnv(t, fileadapter.ModeHooks)
			p := e.path("f.txt")
			writeFile(t, p, "alpha = 1\nbeta = 2\ngamma = 3\n")
			var r *protocol.Range
			if !whole {
				r = &protocol.Range{Start: 1, End: 3}
			}
			e.observe("f.txt", r, "alpha = 1\nbeta = 2\ngamma = 3")
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			s := e.sync()
			if len(s.Blocks) != 1 || s.Blocks[0].Status != protocol.Invalid || !strings.Contains(s.Blocks[0].Notice, "is empty since this read") {
				t.Fatalf("sync while empty %+v", s)
			}
			writeFile(t, p, "alpha = 1\nbeta = 20\ngamma = 3\n")
			s = e.sync()
			if len(s.Blocks) != 1 || s.Blocks[0].Status != protocol.Patched || s.Blocks[0].Sources[0].Text != "alpha = 1\nbeta = 20\ngamma = 3" {
				t.Fatalf("sync after the write %+v", s)
			}
		})
	}
}

// TestListingDirectoryDeleted: the listed directory itself goes away.
func TestListingDirectoryDeleted(t *testing.T) {
	e := newEnv(t, fileadapter.ModeHooks)
	writeFile(t, e.path("d/a.txt"), "")
	if _, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "ls",
		Sources: []protocol.Source{{URI: "file://" + e.path("d") + "?depth=1", Text: "a.txt"}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.path("d")); err != nil {
		t.Fatal(err)
	}
	r := e.sync()
	want := "[concord] the listing of " + e.path("d") + " shown earlier is out of date: the directory was deleted. List it again before relying on it."
	if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || r.Blocks[0].Notice != want {
		t.Fatalf("sync %+v", r)
	}
}
