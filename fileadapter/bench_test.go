package fileadapter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStamp: the verify pass's per-source cost. "stat" is a bare
// os.Stat (what the stamp cost before the roots were enforced on every
// stamp); "stamp" is Stamp: the path's symlinks resolved and checked
// against the roots, then the stat with ctime.
func BenchmarkStamp(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(root, "a", "b", "c", "f.go")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("package c\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{Roots: []string{root}, Mode: ModeHooks}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	id := pathURI(p)
	b.Run("stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stamp", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := a.Stamp(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
