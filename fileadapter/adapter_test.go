package fileadapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/concord-ctx/concord/runtime"
)

// tempRoot returns a symlink-resolved temp dir (macOS /tmp is a symlink).
func tempRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hints collects Notify calls.
type hints struct {
	mu  sync.Mutex
	ids map[string]int
}

func (h *hints) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids[id]++
}

func (h *hints) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[id]
}

func newAdapter(t *testing.T, cfg Config) (*Adapter, *hints) {
	t.Helper()
	h := &hints{ids: map[string]int{}}
	a, err := New(cfg, h.notify)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, h
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNormalize(t *testing.T) {
	base := tempRoot(t)
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(root, "a.txt"), "a\n")
	write(t, filepath.Join(root, "dir with space", "b c.txt"), "b\n")
	write(t, filepath.Join(outside, "secret.txt"), "s\n")
	write(t, filepath.Join(base, "root2", "x.txt"), "x\n")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(base, "rootlink")
	if err := os.Symlink(root, rootLink); err != nil {
		t.Fatal(err)
	}
	a, _ := newAdapter(t, Config{Roots: []string{rootLink}, Mode: ModeHooks})
	uriOf := func(p string) string { return pathURI(p) }
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"plain path", filepath.Join(root, "a.txt"), uriOf(filepath.Join(root, "a.txt")), nil},
		{"file uri", "file://" + filepath.Join(root, "a.txt"), uriOf(filepath.Join(root, "a.txt")), nil},
		{"localhost uri", "file://localhost" + filepath.Join(root, "a.txt"), uriOf(filepath.Join(root, "a.txt")), nil},
		{"percent-encoded", "file://" + strings.ReplaceAll(filepath.Join(root, "dir with space", "b c.txt"), " ", "%20"), uriOf(filepath.Join(root, "dir with space", "b c.txt")), nil},
		{"unclean path", root + "/./sub/../a.txt", uriOf(filepath.Join(root, "a.txt")), nil},
		{"via symlinked root", filepath.Join(rootLink, "a.txt"), uriOf(filepath.Join(root, "a.txt")), nil},
		{"symlink inside", filepath.Join(root, "link.txt"), uriOf(filepath.Join(root, "a.txt")), nil},
		{"not yet existing", filepath.Join(root, "new.txt"), uriOf(filepath.Join(root, "new.txt")), nil},
		{"missing dirs", filepath.Join(root, "x", "y", "z.txt"), uriOf(filepath.Join(root, "x", "y", "z.txt")), nil},
		{"outside", filepath.Join(outside, "secret.txt"), "", runtime.ErrOutsideRoots},
		{"dot-dot escape", root + "/../outside/secret.txt", "", runtime.ErrOutsideRoots},
		{"prefix sibling", filepath.Join(base, "root2", "x.txt"), "", runtime.ErrOutsideRoots},
		{"symlink escape", filepath.Join(root, "escape.txt"), "", runtime.ErrOutsideRoots},
		{"symlinked dir escape, missing file", filepath.Join(root, "escdir", "new.txt"), "", runtime.ErrOutsideRoots},
		{"relative", "a.txt", "", runtime.ErrInvalidURI},
		{"remote host", "file://host/etc/passwd", "", runtime.ErrInvalidURI},
		{"empty", "", "", runtime.ErrInvalidURI},
		{"bad escape", "file:///a%zz", "", runtime.ErrInvalidURI},
		{"raw # in a file uri", "file://" + filepath.Join(root, "a.txt") + "#b.txt", "", runtime.ErrInvalidURI},
		{"raw ? in a file uri", "file://" + filepath.Join(root, "a.txt") + "?x=1", "", runtime.ErrInvalidURI},
		{"empty query", "file://" + filepath.Join(root, "a.txt") + "?", "", runtime.ErrInvalidURI},
		{"empty fragment", "file://" + filepath.Join(root, "a.txt") + "#", "", runtime.ErrInvalidURI},
		{"encoded # and ?", "file://" + filepath.Join(root, "a%23b%3F.txt"), uriOf(filepath.Join(root, "a#b?.txt")), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Normalize(tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %q, %v; want %v", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if again, err := a.Normalize(got); err != nil || again != got {
				t.Fatalf("not idempotent: %q -> %q, %v", got, again, err)
			}
		})
	}
	if d := a.Display(uriOf(filepath.Join(root, "dir with space", "b c.txt"))); d != filepath.Join(root, "dir with space", "b c.txt") {
		t.Fatalf("display %q", d)
	}
}

func TestRead(t *testing.T) {
	root := tempRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks, MaxBytes: 64})
	ok := filepath.Join(root, "ok.txt")
	write(t, ok, "hello\r\nworld\n")
	write(t, filepath.Join(root, "bin.dat"), "abc\x00def")
	write(t, filepath.Join(root, "big.txt"), strings.Repeat("x", 65))
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := a.Read(ctx, pathURI(ok))
	sum := sha256.Sum256([]byte("hello\r\nworld\n"))
	if err != nil || c.Text != "hello\r\nworld\n" || c.Version != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("read %+v %v", c, err)
	}
	for name, want := range map[string]error{
		"bin.dat": runtime.ErrBinary, "big.txt": runtime.ErrTooLarge, "missing.txt": runtime.ErrNotFound, "dir": runtime.ErrUnreadable,
		"fifo": runtime.ErrUnreadable,
	} {
		if _, err := a.Read(ctx, pathURI(filepath.Join(root, name))); !errors.Is(err, want) {
			t.Errorf("%s: err %v, want %v", name, err, want)
		}
	}
	// Bytes that are not UTF-8 (Latin-1) read as U+FFFD each, as JSON
	// carries them; the version is still the raw bytes' hash.
	latin := filepath.Join(root, "latin1.txt")
	write(t, latin, "caf\xe9\n\xff\xfeok\n")
	c, err = a.Read(ctx, pathURI(latin))
	sum = sha256.Sum256([]byte("caf\xe9\n\xff\xfeok\n"))
	if err != nil || c.Text != "caf\uFFFD\n\uFFFD\uFFFDok\n" || c.Version != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("latin-1 read %+q %v", c, err)
	}
	// A NUL byte after the first 8 KiB is not a binary marker.
	a2, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	late := filepath.Join(root, "late.txt")
	write(t, late, strings.Repeat("y", 9000)+"\x00")
	if _, err := a2.Read(ctx, pathURI(late)); err != nil {
		t.Fatalf("late NUL: %v", err)
	}
	s1, err := a.Stamp(ctx, pathURI(ok))
	if err != nil || s1 == "" {
		t.Fatalf("stamp %q %v", s1, err)
	}
	write(t, ok, "changed size\n")
	if s2, _ := a.Stamp(ctx, pathURI(ok)); s2 == s1 {
		t.Fatalf("stamp did not move: %q", s2)
	}
	if _, err := a.Stamp(ctx, pathURI(filepath.Join(root, "missing.txt"))); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("stamp missing: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	root := tempRoot(t)
	write(t, filepath.Join(root, "file.txt"), "x")
	for name, cfg := range map[string]Config{
		"no roots":      {},
		"relative root": {Roots: []string{"rel"}},
		"missing root":  {Roots: []string{filepath.Join(root, "nope")}},
		"file root":     {Roots: []string{filepath.Join(root, "file.txt")}},
		"bad mode":      {Roots: []string{root}, Mode: "inotify"},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The message names the root, not lstat's first missing component.
	missing := filepath.Join(root, "nope", "deeper")
	if _, err := New(Config{Roots: []string{missing}}, nil); err == nil || !strings.Contains(err.Error(), strconv.Quote(missing)) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
	for mode, want := range map[string]string{"": ModeFsnotify, ModeAuto: ModeFsnotify, ModeFsnotify: ModeFsnotify, ModePoll: ModePoll, ModeHooks: ModeHooks} {
		a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: mode})
		if a.Mode() != want {
			t.Errorf("mode %q: effective %q, want %q", mode, a.Mode(), want)
		}
	}
}

// TestWatchEvents drives real fsnotify events through the parent-directory
// watch: in-place writes, atomic save by rename, delete, re-create, rename away.
func TestWatchEvents(t *testing.T) {
	for _, mode := range []string{ModeFsnotify, ModePoll} {
		t.Run(mode, func(t *testing.T) {
			root := tempRoot(t)
			a, h := newAdapter(t, Config{Roots: []string{root}, Mode: mode, PollInterval: 10 * time.Millisecond})
			p := filepath.Join(root, "src", "main.go")
			write(t, p, "package main\n")
			id, err := a.Normalize(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Watch(id); err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(root, "src", "other.go")
			steps := []struct {
				name string
				do   func()
			}{
				{"write in place", func() { write(t, p, "package main\n\nfunc main() {}\n") }},
				{"atomic save by rename", func() {
					tmp := filepath.Join(root, "src", ".main.go.swp")
					write(t, tmp, "package main // saved atomically\n")
					if err := os.Rename(tmp, p); err != nil {
						t.Fatal(err)
					}
				}},
				{"write after the rename", func() { write(t, p, "package main // once more, longer\n") }},
				{"delete", func() {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
				}},
				{"create", func() { write(t, p, "package main // back\n") }},
				{"rename away", func() {
					if err := os.Rename(p, other); err != nil {
						t.Fatal(err)
					}
				}},
			}
			for _, st := range steps {
				before := h.count(id)
				st.do()
				waitFor(t, st.name+" hint", func() bool { return h.count(id) > before })
			}
			if n := h.count(pathURI(other)); n != 0 {
				t.Fatalf("hinted an unwatched file %d times", n)
			}
		})
	}
}

func TestWatchRefcount(t *testing.T) {
	root := tempRoot(t)
	a, h := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	p := filepath.Join(root, "f.txt")
	write(t, p, "1\n")
	id := pathURI(p)
	for i := 0; i < 2; i++ {
		if err := a.Watch(id); err != nil {
			t.Fatal(err)
		}
	}
	a.Unwatch(id)
	if a.Watched() != 1 {
		t.Fatalf("watched %d after one unwatch", a.Watched())
	}
	write(t, p, "22\n")
	waitFor(t, "hint while still referenced", func() bool { return h.count(id) > 0 })
	a.Unwatch(id)
	a.Unwatch(id) // extra unwatch is harmless
	if a.Watched() != 0 {
		t.Fatalf("watched %d after last unwatch", a.Watched())
	}
	a.mu.Lock()
	dirs := len(a.dirs)
	a.mu.Unlock()
	if dirs != 0 {
		t.Fatalf("directory watch kept: %d", dirs)
	}
}

func TestDebounceCollapsesBursts(t *testing.T) {
	root := tempRoot(t)
	a, h := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify, Debounce: time.Hour})
	p := filepath.Join(root, "f.txt")
	write(t, p, "0\n")
	id := pathURI(p)
	if err := a.Watch(id); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		write(t, p, strings.Repeat("x", i)+"\n")
	}
	waitFor(t, "a pending debounce timer", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.timers[id] != nil // keyed by source id
	})
	a.mu.Lock()
	n := len(a.timers)
	a.mu.Unlock()
	if n != 1 || h.count(id) != 0 {
		t.Fatalf("timers %d, hints %d: want one pending timer and no hint yet", n, h.count(id))
	}
	// With a short debounce the burst ends in a hint.
	a2, h2 := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify, Debounce: 20 * time.Millisecond})
	if err := a2.Watch(id); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		write(t, p, strings.Repeat("y", i)+"\n")
	}
	waitFor(t, "debounced hint", func() bool { return h2.count(id) > 0 })
}

// TestWatchLimitFallsBackToPolling: when fsnotify refuses a watch (ENOSPC,
// the inotify limit), that directory is polled instead.
func TestWatchLimitFallsBackToPolling(t *testing.T) {
	root := tempRoot(t)
	a, h := newAdapter(t, Config{Roots: []string{root}, Mode: ModeAuto, PollInterval: 10 * time.Millisecond})
	a.addWatch = func(string) error { return syscall.ENOSPC }
	p := filepath.Join(root, "f.txt")
	write(t, p, "1\n")
	id := pathURI(p)
	if err := a.Watch(id); err != nil {
		t.Fatal(err)
	}
	if !a.Polled(id) || a.Mode() != ModeFsnotify {
		t.Fatalf("polled %v mode %s", a.Polled(id), a.Mode())
	}
	write(t, p, "22\n")
	waitFor(t, "hint from polling", func() bool { return h.count(id) > 0 })
}

// TestOverflowRescans: an event overflow (or any watcher error) hints every
// watched file, since events may have been lost.
func TestOverflowRescans(t *testing.T) {
	root := tempRoot(t)
	a, h := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify})
	var ids []string
	// Write everything before watching, so the writes themselves are not
	// events; a late real event can still add a hint, so each check counts
	// the hints an error adds (at least one per watched file).
	for _, n := range []string{"a.txt", "sub/b.txt", "c.txt"} {
		p := filepath.Join(root, n)
		write(t, p, n)
		ids = append(ids, pathURI(p))
	}
	for _, id := range ids {
		if err := a.Watch(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{fsnotify.ErrEventOverflow, errors.New("some watcher error")} {
		before := make(map[string]int, len(ids))
		for _, id := range ids {
			before[id] = h.count(id)
		}
		a.onError(err)
		for _, id := range ids {
			if h.count(id) <= before[id] {
				t.Fatalf("%s not hinted after %v (%d hints before and after)", id, err, before[id])
			}
		}
	}
}

// TestDirectoryRemovedAndRecreated: the watched parent directory itself goes
// away (its watch with it); the file is hinted, then polled until it returns.
func TestDirectoryRemovedAndRecreated(t *testing.T) {
	root := tempRoot(t)
	a, h := newAdapter(t, Config{Roots: []string{root}, Mode: ModeFsnotify, PollInterval: 10 * time.Millisecond})
	p := filepath.Join(root, "pkg", "f.go")
	write(t, p, "package pkg\n")
	id := pathURI(p)
	if err := a.Watch(id); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "pkg")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hint on removal", func() bool { return h.count(id) > 0 })
	waitFor(t, "fallback to polling", func() bool { return a.Polled(id) })
	n := h.count(id)
	write(t, p, "package pkg // back\n")
	waitFor(t, "hint on re-creation", func() bool { return h.count(id) > n })
}

func TestHooksModeAndClose(t *testing.T) {
	root := tempRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	id := pathURI(filepath.Join(root, "f.txt"))
	if err := a.Watch(id); err != nil || a.Watched() != 1 || a.Polled(id) {
		t.Fatalf("hooks watch: %v watched=%d", err, a.Watched())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Watch(id); err == nil {
		t.Fatal("watch after close succeeded")
	}
}

func FuzzNormalize(f *testing.F) {
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Config{Roots: []string{root}, Mode: ModeHooks}, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer a.Close()
	// Files that exist take Normalize's fast path (plainPath); the rest
	// resolve by EvalSymlinks.
	for _, n := range []string{"a.txt", "b c", "d/e.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, n)), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, n), []byte("x\n"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "d"), filepath.Join(root, "l")); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{root + "/a.txt", "file://" + root + "/b%20c", root + "/d/e.txt", root + "/l/e.txt", root + "/d/../a.txt", "file:///etc/passwd", "../x", "file://h/x", root + "/../x", "file:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		id, err := a.Normalize(uri)
		if err != nil {
			if !errors.Is(err, runtime.ErrOutsideRoots) && !errors.Is(err, runtime.ErrInvalidURI) {
				t.Fatalf("%q: unexpected error class %v", uri, err)
			}
			return
		}
		p, err := Path(id)
		if err != nil || !a.inside(p) || !strings.HasPrefix(id, "file://") {
			t.Fatalf("%q -> %q (%v) not inside roots", uri, id, err)
		}
		if again, err := a.Normalize(id); err != nil || again != id {
			t.Fatalf("%q -> %q -> %q, %v: not idempotent", uri, id, again, err)
		}
	})
}
