package fileadapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
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
	// What every observe pays for its URI: the canonical id, checked
	// against the roots.
	b.Run("normalize", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Normalize(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkQuietSync: a sync of one agent's 1,000 watched files (10,000
// blocks, files three directories deep in 37 packages) when nothing changed,
// beside its reference, a serial os.Stat of the same 1,000 paths (issue 23:
// the sync should cost no more than the reference).
func BenchmarkQuietSync(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	m := runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: protocol.PlacementInplace}})
	a, err := New(Config{Roots: []string{root}, Mode: ModeFsnotify}, m.Hint)
	if err != nil {
		b.Fatal(err)
	}
	m.AddAdapter(a)
	defer m.Close()
	ctx := context.Background()
	var paths []string
	old := time.Now().Add(-time.Hour) // outside the racily clean window
	for f := range 1000 {
		p := filepath.Join(root, "src", fmt.Sprintf("pkg%02d", f%37), "internal", fmt.Sprintf("file%04d.go", f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		ls := make([]string, 100)
		for i := range ls {
			ls[i] = fmt.Sprintf("\tx%d := compute(%d) // file %d", i, i*f, f)
		}
		if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
		for k := range 10 {
			s := 1 + k*10
			if _, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: fmt.Sprintf("call_%d_%d", f, k),
				Sources: []protocol.Source{{URI: pathURI(p), Range: &protocol.Range{Start: s, End: s + 4}, Text: strings.Join(ls[s-1:s+4], "\n")}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Quiet means every file out of its racily clean window (a racily clean
	// file is read again by each sync): sync until the newest is out.
	for {
		if _, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 1}); err != nil {
			b.Fatal(err)
		}
		st, err := a.Stamp(ctx, pathURI(paths[len(paths)-1]))
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(st, racySuffix) {
			break
		}
	}
	if _, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 1}); err != nil {
		b.Fatal(err)
	}
	b.Run("stat-serial", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				if _, err := os.Stat(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("sync", func(b *testing.B) {
		hits := a.cacheHits.Load()
		for b.Loop() {
			r, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2})
			if err != nil || len(r.Blocks) != 0 {
				b.Fatalf("%v %d", err, len(r.Blocks))
			}
		}
		// How many of the 1,000 stamps came from the cache.
		b.ReportMetric(float64(a.cacheHits.Load()-hits)/float64(b.N), "cached/op")
	})
}

// BenchmarkStampWatched: Stamp of one watched, read file in fsnotify mode
// (what an observe or a hint's verify pays), beside a bare os.Stat: a
// stat through the directory handle and the cache's bookkeeping, no
// barrier.
func BenchmarkStampWatched(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(root, "a", "b", "f.go")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("package b\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{Roots: []string{root}, Mode: ModeFsnotify}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	id := pathURI(p)
	if err := a.Watch(id); err != nil {
		b.Fatal(err)
	}
	if _, err := a.Read(ctx, id); err != nil {
		b.Fatal(err)
	}
	b.Run("stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stamp", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Stamp(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStampsBatch picks trustBatchMin: a Stamps of n watched, read,
// unchanged files (8 per directory), either all stat'ed ("stat", the
// threshold out of reach) or served from the cache after one barrier and
// one inode check per directory ("cached", the threshold at 1). The
// threshold is the n from which "cached" is the cheaper.
func BenchmarkStampsBatch(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{Roots: []string{root}, Mode: ModeFsnotify}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	a.now = func() time.Time { return time.Now().Add(time.Hour) } // none racily clean
	ctx := context.Background()
	var ids []string
	for f := range 256 {
		p := filepath.Join(root, "src", fmt.Sprintf("pkg%02d", f/8), fmt.Sprintf("file%03d.go", f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		id := pathURI(p)
		if err := a.Watch(id); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Read(ctx, id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, n := range []int{8, 16, 32, 64, 128, 256} {
		for _, mode := range []struct {
			name string
			min  int
		}{{"stat", len(ids) + 1}, {"cached", 1}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode.name), func(b *testing.B) {
				a.trustMin = mode.min
				a.Stamps(ctx, ids[:n]) // fills the cache
				before := a.cacheHits.Load()
				for b.Loop() {
					if _, errs := a.Stamps(ctx, ids[:n]); errs[0] != nil {
						b.Fatal(errs[0])
					}
				}
				if mode.min == 1 && a.cacheHits.Load() == before {
					b.Fatal("nothing served from the cache")
				}
			})
		}
	}
}
