package queryadapter

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

	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/runtime"
)

// workspace is a temp root with files, and an adapter confined to it.
type workspace struct {
	root  string
	a     *Adapter
	hints chan string
}

func newWorkspace(t *testing.T, cfg Config, files map[string]string) *workspace {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &workspace{root: root, hints: make(chan string, 1024)}
	for rel, text := range files {
		w.write(t, rel, text)
	}
	cfg.Confine = func(p string) (string, error) {
		r, err := filepath.EvalSymlinks(p)
		if errors.Is(err, os.ErrNotExist) {
			r, err = p, nil
		}
		if err != nil {
			return "", err
		}
		if r != root && !strings.HasPrefix(r, root+"/") {
			return "", fmt.Errorf("%s: %w", r, runtime.ErrOutsideRoots)
		}
		return r, nil
	}
	a, err := New(cfg, func(id string) { w.hints <- id })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	w.a = a
	return w
}

func (w *workspace) write(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(w.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *workspace) id(t *testing.T, stages ...[]string) string {
	t.Helper()
	id, err := w.a.Normalize(query.Spec{Cwd: w.root, Stages: stages}.URI())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (w *workspace) read(t *testing.T, id string) string {
	t.Helper()
	c, err := w.a.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c.Text
}

// waitHint waits for a hint for id, then for the query to read want: the
// hint is the condition (fsnotify delivers it), never a sleep.
func (w *workspace) waitHint(t *testing.T, id, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second) // a hung watch fails instead of hanging the suite
	for {
		select {
		case h := <-w.hints:
			if h == id && w.read(t, id) == want {
				return
			}
		case <-deadline:
			t.Fatalf("no hint for %s that reads %q (now %q)", id, want, w.read(t, id))
		}
	}
}

// TestReadRunsThePipeline: the first stage over files, filters over its
// output, in the recorded directory, without a shell (a pattern with shell
// syntax is a pattern).
func TestReadRunsThePipeline(t *testing.T) {
	w := newWorkspace(t, Config{}, map[string]string{
		"src/a.py": "# TODO one\n", "src/pkg/b.py": "x = 1  # TODO $(touch pwned)\n", "src/c.txt": "none\n", "README": "TODO\n",
	})
	for _, tc := range []struct {
		stages [][]string
		want   string
	}{
		{[][]string{{"grep", "-rl", "TODO", "src"}, {"sort"}}, "src/a.py\nsrc/pkg/b.py"},
		{[][]string{{"grep", "-rlF", "$(touch pwned)", "src"}}, "src/pkg/b.py"},
		{[][]string{{"find", "src", "-name", "*.py"}, {"grep", "pkg"}}, "src/pkg/b.py"},
		{[][]string{{"ls", "-1", "src"}}, "a.py\nc.txt\npkg"},
		{[][]string{{"grep", "-c", "TODO", "README", "src/c.txt"}}, "README:1\nsrc/c.txt:0"},
		{[][]string{{"cat", "src/a.py", "README"}, {"grep", "-n", "TODO"}}, "1:# TODO one\n2:TODO"},
		{[][]string{{"grep", "-l", "nothing", "README"}}, ""}, // grep's exit 1 is an answer
	} {
		if got := w.read(t, w.id(t, tc.stages...)); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.stages, got, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.root, "pwned")); err == nil {
		t.Error("a pattern ran as a command")
	}
}

// TestWatchRecursive: a file created in a new subdirectory under a
// recursive query's scope, then changed, hints the query each time (real
// fsnotify events), and the re-run shows it.
func TestWatchRecursive(t *testing.T) {
	w := newWorkspace(t, Config{Watch: true}, map[string]string{"src/a.py": "TODO\n", "other/x.py": "TODO\n"})
	id := w.id(t, []string{"grep", "-rl", "TODO", "src"}, []string{"sort"})
	if got := w.read(t, id); got != "src/a.py" {
		t.Fatalf("first read %q", got)
	}
	if err := w.a.Watch(id); err != nil {
		t.Fatal(err)
	}
	w.write(t, "src/new/deep/b.py", "nothing yet\n")
	w.waitHint(t, id, "src/a.py")
	w.write(t, "src/new/deep/b.py", "TODO now\n")
	w.waitHint(t, id, "src/a.py\nsrc/new/deep/b.py")
	if err := os.Remove(filepath.Join(w.root, "src/a.py")); err != nil {
		t.Fatal(err)
	}
	w.waitHint(t, id, "src/new/deep/b.py")
	w.a.Unwatch(id)
	if n := len(w.a.w.dirs); n != 0 {
		t.Errorf("%d directories still watched after the last Unwatch", n)
	}
}

// TestWatchFileOperands: a non-recursive query over named files is hinted
// when one of them is rewritten.
func TestWatchFileOperands(t *testing.T) {
	w := newWorkspace(t, Config{Watch: true}, map[string]string{"a.txt": "key: 1\n", "b.txt": "none\n"})
	id := w.id(t, []string{"grep", "-l", "key", "a.txt", "b.txt"})
	if err := w.a.Watch(id); err != nil {
		t.Fatal(err)
	}
	w.write(t, "b.txt", "key: 2\n")
	w.waitHint(t, id, "a.txt\nb.txt")
}

// TestRefusals: commands off the allowlist and paths outside the roots
// are refused with the runtime's errors, before anything runs.
func TestRefusals(t *testing.T) {
	w := newWorkspace(t, Config{}, map[string]string{"a.txt": "x\n", "passwd": "root\n"})
	for _, tc := range []struct {
		uri  string
		want error
	}{
		{query.Spec{Cwd: w.root, Stages: [][]string{{"find", ".", "-exec", "touch", "pwned", ";"}}}.URI(), runtime.ErrInvalidURI},
		{query.Spec{Cwd: w.root, Stages: [][]string{{"grep", "-l", "root", "/etc/passwd"}}}.URI(), runtime.ErrOutsideRoots},
		{query.Spec{Cwd: w.root, Stages: [][]string{{"grep", "-rl", "x", "../.."}}}.URI(), runtime.ErrOutsideRoots},
		{query.Spec{Cwd: "/etc", Stages: [][]string{{"ls"}}}.URI(), runtime.ErrOutsideRoots},
		{"query:///w?run=ls&bogus=1", runtime.ErrInvalidURI},
	} {
		if _, err := w.a.Normalize(tc.uri); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.uri, err, tc.want)
		}
		if _, err := w.a.Read(context.Background(), tc.uri); !errors.Is(err, tc.want) {
			t.Errorf("read %s: %v, want %v", tc.uri, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.root, "pwned")); err == nil {
		t.Error("a refused query ran")
	}
	// A symlink pointed out of the roots after registration is refused at Read.
	link := filepath.Join(w.root, "link")
	if err := os.Symlink(w.root, link); err != nil {
		t.Fatal(err)
	}
	id := w.id(t, []string{"grep", "-l", "root", "link/passwd"})
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.Read(context.Background(), id); !errors.Is(err, runtime.ErrOutsideRoots) {
		t.Errorf("read through a re-pointed symlink: %v, want ErrOutsideRoots", err)
	}
}

// TestCapAndTimeout: output over the cap is ErrTooLarge; a query that does
// not finish (grep reading a FIFO nobody writes) is stopped by the timeout.
func TestCapAndTimeout(t *testing.T) {
	w := newWorkspace(t, Config{MaxBytes: 64, Timeout: 300 * time.Millisecond}, map[string]string{"big.txt": strings.Repeat("line of text\n", 100)})
	if _, err := w.a.Read(context.Background(), w.id(t, []string{"grep", "line", "big.txt"})); !errors.Is(err, runtime.ErrTooLarge) {
		t.Errorf("over the cap: %v, want ErrTooLarge", err)
	}
	if err := syscall.Mkfifo(filepath.Join(w.root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := w.a.Read(context.Background(), w.id(t, []string{"grep", "-l", "x", "fifo"})); !errors.Is(err, runtime.ErrUnreadable) {
		t.Errorf("a query that never ends: %v, want ErrUnreadable", err)
	}
}

// TestStampFollowsTheScope: the stamp is "" (re-run) right after a change
// in the scope (a same-tick change could keep a stat stamp) and when the
// scope has more entries than MaxStamp.
func TestStampFollowsTheScope(t *testing.T) {
	w := newWorkspace(t, Config{}, map[string]string{"src/a.py": "x\n"})
	id := w.id(t, []string{"grep", "-rl", "x", "src"})
	w.write(t, "src/b.py", "x\n")
	st2, err := w.a.Stamp(context.Background(), id)
	if err != nil || st2 != "" {
		t.Errorf("stamp right after a change: %q %v, want \"\" (re-run)", st2, err)
	}
	w2 := newWorkspace(t, Config{MaxStamp: 1}, map[string]string{"src/a.py": "x\n", "src/b.py": "y\n"})
	if st, err := w2.a.Stamp(context.Background(), w2.id(t, []string{"grep", "-rl", "x", "src"})); err != nil || st != "" {
		t.Errorf("stamp over MaxStamp entries: %q %v, want \"\"", st, err)
	}
}

// TestStampStable: with nothing recent, the stat stamp holds while the
// scope holds and moves when a file in it changes; over MaxStamp entries a
// fully watched scope is stamped by its fsnotify events.
func TestStampStable(t *testing.T) {
	w := newWorkspace(t, Config{Watch: true}, map[string]string{"src/a.py": "x\n", "src/sub/b.py": "y\n"})
	w.a.racy = -time.Nanosecond // every change counts as old: no "" for recent ones
	id := w.id(t, []string{"grep", "-rl", "x", "src"})
	ctx := context.Background()
	st1, err := w.a.Stamp(ctx, id)
	if err != nil || st1 == "" {
		t.Fatalf("stamp %q %v", st1, err)
	}
	if st, _ := w.a.Stamp(ctx, id); st != st1 {
		t.Errorf("stamp moved with nothing changed: %q -> %q", st1, st)
	}
	w.write(t, "src/sub/b.py", "y\nmore\n")
	if st, _ := w.a.Stamp(ctx, id); st == st1 || st == "" {
		t.Errorf("stamp after a change deep in the scope: %q (was %q)", st, st1)
	}

	big := newWorkspace(t, Config{Watch: true, MaxStamp: 1}, map[string]string{"src/a.py": "x\n", "src/sub/b.py": "y\n"})
	big.a.racy = -time.Nanosecond
	bid := big.id(t, []string{"grep", "-rl", "x", "src"}, []string{"sort"})
	if st, _ := big.a.Stamp(ctx, bid); st != "" {
		t.Errorf("over MaxStamp, not watched: %q, want \"\" (run it)", st)
	}
	if err := big.a.Watch(bid); err != nil {
		t.Fatal(err)
	}
	st2, _ := big.a.Stamp(ctx, bid)
	if !strings.HasPrefix(st2, "events:") {
		t.Fatalf("over MaxStamp, watched: %q, want an events stamp", st2)
	}
	big.write(t, "src/sub/c.py", "x\n")
	big.waitHint(t, bid, "src/a.py\nsrc/sub/c.py")
	if st, _ := big.a.Stamp(ctx, bid); st == st2 {
		t.Errorf("events stamp did not move after an event: %q", st)
	}
}
