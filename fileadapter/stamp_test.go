package fileadapter

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/runtime"
)

// TestStampRacyAndCtime: a stamp taken within racyWindow of the file's last
// change is racy (unique per call), one taken later is stable, and a
// rewrite with the mtime put back still moves it (ctime).
func TestStampRacyAndCtime(t *testing.T) {
	p := filepath.Join(tempRoot(t), "f.txt")
	write(t, p, "abcd\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, racy, err := statStamp(p, now); err != nil || !racy {
		t.Fatalf("fresh ctime: racy=%v err=%v, want racy", racy, err)
	}
	s1, _ := stampNow(p)
	s2, _ := stampNow(p)
	if s1 == s2 || !strings.Contains(s1, racySuffix) {
		t.Fatalf("racy stamps %q %q: want distinct", s1, s2)
	}
	later := now.Add(racyWindow + time.Second)
	a, racy, _ := statStamp(p, later)
	b, _, _ := statStamp(p, later)
	if racy || a != b {
		t.Fatalf("settled stamps %q %q racy=%v", a, b, racy)
	}
	time.Sleep(20 * time.Millisecond) // past the coarse clock's tick
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("ABCD"), 0)
	f.Close()
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	c, _, _ := statStamp(p, later.Add(time.Second))
	if c == a {
		t.Fatalf("stamp unchanged after a rewrite with mtime restored: %q", c)
	}
}

// TestOpenRaces: what is swapped in between the checks and the open is
// caught after it: a FIFO (the open must not block) and a parent directory
// turned into a symlink to outside the roots.
func TestOpenRaces(t *testing.T) {
	t.Cleanup(func() { testHookBeforeOpen = nil })
	root := tempRoot(t)
	out := tempRoot(t)
	a, _ := newAdapter(t, Config{Roots: []string{root}, Mode: ModeHooks})
	for _, tc := range []struct {
		name string
		swap func(p string)
		want error
	}{
		{"fifo", func(p string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Error(err)
			}
		}, runtime.ErrUnreadable},
		{"parent", func(p string) {
			d := filepath.Dir(p)
			os.RemoveAll(d)
			write(t, filepath.Join(out, "d", "f.txt"), "outside\n")
			if err := os.Symlink(filepath.Join(out, "d"), d); err != nil {
				t.Error(err)
			}
		}, runtime.ErrOutsideRoots},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(root, tc.name, "d", "f.txt")
			write(t, p, "inside\n")
			testHookBeforeOpen = func(string) { testHookBeforeOpen = nil; tc.swap(p) }
			done := make(chan error, 1)
			go func() {
				_, err := a.Read(context.Background(), pathURI(p))
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("read: %v, want %v", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("read hung")
			}
		})
	}
}

// TestStampsAgreeWithSlowPath: the batch stamp (a directory handle, one
// fstatat per file) gives, for every kind of entry, the answer of the
// per-component lstat walk: the same stamp for a regular file, the same
// error for a missing one, and the roots still hold for a symlink (to
// inside: followed; to outside: refused), in a file or in a parent.
func TestStampsAgreeWithSlowPath(t *testing.T) {
	root := tempRoot(t)
	out := tempRoot(t)
	a, err := New(Config{Roots: []string{root}, Mode: ModeHooks}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	old := time.Now().Add(-time.Hour)
	mk := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(root, "top.txt"), "top\n")
	mk(filepath.Join(root, "a/b/c/deep.txt"), "deep\n")
	mk(filepath.Join(root, "a/b/c/sib.txt"), "sib\n")
	mk(filepath.Join(root, "a/b/fresh.txt"), "racy\n")
	os.Chtimes(filepath.Join(root, "a/b/fresh.txt"), time.Now(), time.Now())
	mk(filepath.Join(root, "real/f.txt"), "real\n")
	mk(filepath.Join(out, "sub/f.txt"), "outside\n")
	if err := os.Chmod(filepath.Join(root, "a/b/c/sib.txt"), 0o640|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{
		{filepath.Join(root, "real"), filepath.Join(root, "link")},             // parent symlink inside
		{filepath.Join(root, "top.txt"), filepath.Join(root, "a/ln.txt")},      // file symlink inside
		{filepath.Join(out, "sub"), filepath.Join(root, "escape")},             // parent symlink outside
		{filepath.Join(out, "sub/f.txt"), filepath.Join(root, "a/escape.txt")}, // file symlink outside
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "a/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{"top.txt", "a/b/c/deep.txt", "a/b/c/sib.txt", "a/b/fresh.txt", "link/f.txt", "a/ln.txt",
		"escape/f.txt", "a/escape.txt", "a/fifo", "a/b", "missing.txt", "a/nodir/x.txt", "a/b/c/deep.txt"}
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = pathURI(filepath.Join(root, n))
	}
	ids = append(ids, "file://"+root+"?glob=*.txt", "mem://x")
	ctx := context.Background()
	got, errs := a.Stamps(ctx, ids)
	strip := func(s string) string { s, _, _ = strings.Cut(s, racySuffix); return s }
	for i, id := range ids {
		one, oneErr := a.Stamp(ctx, id)
		var slow string
		var slowErr error
		if p, err := Path(id); err == nil && i < len(names) {
			slow, slowErr = a.stampSlow(p)
		} else {
			slow, slowErr = one, oneErr
		}
		if (errs[i] == nil) != (slowErr == nil) || (errs[i] != nil && errs[i].Error() != slowErr.Error()) ||
			(oneErr == nil) != (slowErr == nil) || (oneErr != nil && oneErr.Error() != slowErr.Error()) {
			t.Errorf("%s: errors batch %v, one %v, slow %v", id, errs[i], oneErr, slowErr)
			continue
		}
		if strip(got[i]) != strip(slow) || strip(one) != strip(slow) {
			t.Errorf("%s: stamps batch %q, one %q, slow %q", id, got[i], one, slow)
		}
		// ctime cannot be set back: every file here is racily clean, on both paths.
		if strings.Contains(got[i], racySuffix) != strings.Contains(slow, racySuffix) {
			t.Errorf("%s: racy mark batch %q slow %q", id, got[i], slow)
		}
	}
	for i, want := range map[int]error{6: runtime.ErrOutsideRoots, 7: runtime.ErrOutsideRoots, 10: runtime.ErrNotFound} {
		if !errors.Is(errs[i], want) {
			t.Errorf("%s: %v, want %v", ids[i], errs[i], want)
		}
	}
	if errs[0] != nil || got[0] == "" || strip(got[1]) != strip(got[12]) || !strings.Contains(strip(got[2]), ":20000640") {
		t.Errorf("plain files: %q %v; repeated id %q vs %q; setgid %q", got[0], errs[0], got[1], got[12], got[2])
	}
}
