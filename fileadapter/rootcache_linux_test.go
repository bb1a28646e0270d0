//go:build linux

package fileadapter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/concord-ctx/concord/runtime"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestRootHandleCache: the root's handle is kept across stamp batches, yet
// every stamp is the current root's: a root renamed away and made again
// is stamped anew (not through the old directory's handle), a root turned
// into a symlink to outside is refused as before, stamping does not grow
// the open descriptors, and Close closes the kept handle.
func TestRootHandleCache(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	out := filepath.Join(base, "out")
	for _, d := range []string{root, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	p := filepath.Join(root, "f.txt")
	id := pathURI(p)
	write(t, p, "one\n")
	ctx := context.Background()
	strip := func(s string) string { s, _, _ = strings.Cut(s, racySuffix); return s }
	stamp := func(what string) (string, error) {
		t.Helper()
		one, oneErr := a.Stamp(ctx, id)
		batch, errs := a.Stamps(ctx, []string{id})
		slow, slowErr := a.stampSlow(p)
		if (oneErr == nil) != (slowErr == nil) || (errs[0] == nil) != (slowErr == nil) || strip(one) != strip(slow) || strip(batch[0]) != strip(slow) {
			t.Fatalf("%s: one %q %v, batch %q %v, slow %q %v", what, one, oneErr, batch[0], errs[0], slow, slowErr)
		}
		return strip(one), oneErr
	}

	first, err := stamp("first")
	if err != nil {
		t.Fatal(err)
	}
	fds := openFDs(t)
	for range 50 {
		stamp("again")
	}
	if n := openFDs(t); n > fds {
		t.Errorf("open descriptors %d after 50 stamps, %d before", n, fds)
	}

	// Batches at once while the root is replaced under them: each takes a
	// handle and gives it back; a replaced handle is closed by its last
	// user, so nothing leaks and nothing in use is closed.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				a.Stamps(ctx, []string{id})
			}
		}()
	}
	for i := range 4 {
		away := filepath.Join(base, fmt.Sprintf("swap%d", i))
		if err := os.Rename(root, away); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, p, "one\n")
	}
	wg.Wait()
	a.Stamps(ctx, []string{id}) // the current root cached
	if n := openFDs(t); n > fds {
		t.Errorf("open descriptors %d after stamping through replaced roots, %d before", n, fds)
	}
	mid, err := stamp("after the swaps")
	if err != nil || mid == first {
		t.Fatalf("stamp after the root was swapped 4 times: %q %v (before %q)", mid, err, first)
	}

	// The root renamed away and made again, with a file of the same name.
	if err := os.Rename(root, filepath.Join(base, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, p, "two, longer\n")
	second, err := stamp("new root")
	if err != nil || second == mid {
		t.Fatalf("stamp after the root was replaced: %q %v (before %q)", second, err, mid)
	}

	// The root swapped for a symlink to outside: refused, as the slow path does.
	if err := os.Rename(root, filepath.Join(base, "old2")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(out, "f.txt"), "outside\n")
	if err := os.Symlink(out, root); err != nil {
		t.Fatal(err)
	}
	if _, err := stamp("symlinked root"); !errors.Is(err, runtime.ErrOutsideRoots) && !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("stamp through a root swapped for a symlink: %v, want refused", err)
	}

	if len(a.rootFDs.h) != 1 {
		t.Errorf("cached root handles: %v, want the root's", a.rootFDs.h)
	}
	a.Close()
	if len(a.rootFDs.h) != 0 {
		t.Errorf("cached root handles after Close: %v", a.rootFDs.h)
	}
}

// TestRootHandleInUseOutlivesReplacement: a batch that took a root's handle
// keeps it usable while another batch replaces it in the cache (the root
// was renamed away and made again); the last user closes it.
func TestRootHandleInUseOutlivesReplacement(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	w1 := a.newDirWalker()
	fd1, ok := w1.open(root)
	if !ok {
		t.Fatal("no handle for the root")
	}
	if err := os.Rename(root, filepath.Join(base, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	w2 := a.newDirWalker()
	fd2, ok := w2.open(root)
	if !ok || fd2 == fd1 {
		t.Fatalf("the replaced root's handle: %d %v (the old one %d)", fd2, ok, fd1)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd1, &st); err != nil {
		t.Fatalf("the first batch's handle was closed under it: %v", err)
	}
	w1.close()
	if err := unix.Fstat(fd1, &st); err == nil {
		t.Errorf("the retired handle is still open after its last user returned it")
	}
	w2.close()
	if err := unix.Fstat(fd2, &st); err != nil {
		t.Errorf("the cached handle was closed: %v", err)
	}
}

// TestNormalizeAgreesWithSlowPath: Normalize's fast path (plainPath, from
// the root's kept handle) gives every path the id and the error that
// EvalSymlinks' resolution gives: plain files at every depth, directories,
// symlinks inside and to outside (of a file and of a parent), missing
// files and directories, and a root swapped for another directory.
func TestNormalizeAgreesWithSlowPath(t *testing.T) {
	root := tempRoot(t)
	out := tempRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	for _, f := range []string{"top.txt", "a/b/c/deep.txt", "real/f.txt", "sp ace/é.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, f), "x\n")
	}
	write(t, filepath.Join(out, "sub/f.txt"), "outside\n")
	for _, l := range [][2]string{
		{filepath.Join(root, "real"), filepath.Join(root, "link")},
		{filepath.Join(root, "top.txt"), filepath.Join(root, "a/ln.txt")},
		{filepath.Join(out, "sub"), filepath.Join(root, "escape")},
		{filepath.Join(out, "sub/f.txt"), filepath.Join(root, "a/escape.txt")},
		{"missing-target", filepath.Join(root, "a/dangling")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"top.txt", "a/b/c/deep.txt", "a/b/c", "a", "real/f.txt", "sp ace/é.txt", "link/f.txt", "link",
		"a/ln.txt", "escape/f.txt", "escape", "a/escape.txt", "a/dangling", "missing.txt", "a/nodir/x.txt", ""}
	check := func(what string) {
		t.Helper()
		for _, n := range names {
			p := filepath.Join(root, n)
			for _, uri := range []string{p, pathURI(p)} {
				got, gotErr := a.Normalize(uri)
				want, wantErr := a.normalizeSlow(uri, p)
				if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
					t.Errorf("%s: %s: Normalize %q %v, slow path %q %v", what, uri, got, gotErr, want, wantErr)
				}
			}
		}
	}
	check("as made")
	if !a.plainPath(filepath.Join(root, "a/b/c/deep.txt")) || a.plainPath(filepath.Join(root, "link/f.txt")) || a.plainPath(filepath.Join(root, "missing.txt")) {
		t.Error("plainPath vouches for the wrong paths")
	}
	// The root renamed away and made again with only one file.
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "top.txt"), "new\n")
	check("root replaced")
}
