package fileadapter

import (
	"context"
	"errors"
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
