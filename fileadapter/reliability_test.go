package fileadapter

// Fault tests (issue 10, "Reliability figures"): each drives the real
// Manager over the real file adapter and real files, and logs its figures
// as "FIGURE ..." lines (docs/reliability.md quotes them). The small
// versions run with every `go test`; CONCORD_RELIABILITY=1 (make
// reliability) runs the full sizes: a 10 s rename storm at 1,000 saves/s and
// a 10,000-file checkout.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

func fullSize() bool { return os.Getenv("CONCORD_RELIABILITY") == "1" }

// relEnv is a Manager over the real adapter, counting hints and OnChange.
type relEnv struct {
	t        *testing.T
	root     string
	m        *runtime.Manager
	a        *Adapter
	hints    atomic.Int64
	onChange atomic.Int64
}

func newRelEnv(t *testing.T, root string, cfg Config) *relEnv {
	t.Helper()
	e := &relEnv{t: t, root: root}
	e.m = runtime.New(runtime.Config{Options: protocol.InitializeParams{Placement: runtime.PlacementInplace}, OnChange: func([]string) { e.onChange.Add(1) }})
	cfg.Roots = []string{root}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	a, err := New(cfg, func(id string) { e.hints.Add(1); e.m.Hint(id) })
	if err != nil {
		t.Fatal(err)
	}
	e.a = a
	e.m.AddAdapter(a)
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *relEnv) observe(anchor, p string, r *protocol.Range, text string) protocol.ObserveResult {
	e.t.Helper()
	o, err := e.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: anchor,
		Sources: []protocol.Source{{URI: "file://" + p, Range: r, Text: text}}})
	if err != nil {
		e.t.Fatalf("observe %s: %v", p, err)
	}
	return o
}

func (e *relEnv) sync(full bool) protocol.SyncResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := e.m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2, Full: full})
	if err != nil {
		e.t.Fatalf("sync: %v", err)
	}
	return r
}

// TestFaultDiskFull: the disk fills while a file is rewritten (a small
// tmpfs; root only), and a read fails midway (an injected reader, as on a
// network file system). The view never shows text that is not on disk, and
// it converges once the write completes.
func TestFaultDiskFull(t *testing.T) {
	t.Run("injected read error", func(t *testing.T) {
		root := tempRoot(t)
		e := newRelEnv(t, root, Config{Mode: ModeHooks})
		p := filepath.Join(root, "f.txt")
		write(t, p, "alpha = 1\nbeta = 2\ngamma = 3\n")
		e.observe("c1", p, &protocol.Range{Start: 1, End: 3}, "alpha = 1\nbeta = 2\ngamma = 3")
		t.Cleanup(func() { testHookReader = nil })
		testHookReader = func(r io.Reader) io.Reader { return &failingReader{r: r, after: 4, err: syscall.ENOSPC} }
		write(t, p, "alpha = 1\nbeta = 20\ngamma = 3\n")
		r := e.sync(false)
		if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || !strings.Contains(r.Blocks[0].Notice, "could not be re-read") {
			t.Fatalf("sync during the failing read %+v", r)
		}
		testHookReader = nil
		write(t, p, "alpha = 1\nbeta = 21\ngamma = 3\n")
		r = e.sync(false)
		if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Patched || r.Blocks[0].Sources[0].Text != "alpha = 1\nbeta = 21\ngamma = 3" {
			t.Fatalf("sync after recovery %+v", r)
		}
		t.Logf("FIGURE disk-full/injected: read failed with ENOSPC -> invalid notice; next write -> patched; stale views 0")
	})
	t.Run("tmpfs full", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("mounting a small tmpfs needs root; the injected-reader case covers the error path")
		}
		dir := tempRoot(t)
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs (%v: %s); the injected-reader case covers the error path", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", dir).Run() })
		e := newRelEnv(t, dir, Config{Mode: ModeFsnotify, Debounce: 10 * time.Millisecond})
		p := filepath.Join(dir, "f.txt")
		orig := "alpha\nbeta\ngamma\n"
		write(t, p, orig)
		e.observe("c1", p, &protocol.Range{Start: 1, End: 3}, "alpha\nbeta\ngamma")
		// Fill the disk.
		filler, _ := os.Create(filepath.Join(dir, "filler"))
		buf := make([]byte, 4096)
		for {
			if _, err := filler.Write(buf); err != nil {
				break
			}
		}
		filler.Close()
		// Rewrite the file in place: truncate, then a write that hits ENOSPC.
		big := strings.Repeat("delta line that will not fit\n", 2000)
		werr := os.WriteFile(p, []byte(big), 0o644)
		if !errors.Is(werr, syscall.ENOSPC) {
			t.Fatalf("write on a full disk: %v, want ENOSPC", werr)
		}
		disk, _ := os.ReadFile(p)
		r := e.sync(true)
		if len(r.Blocks) != 1 {
			t.Fatalf("sync %+v", r)
		}
		checkOnDisk(t, r.Blocks[0], string(disk))
		// Space comes back, the write completes: the view converges.
		os.Remove(filepath.Join(dir, "filler"))
		write(t, p, "alpha\nbeta!\ngamma\n")
		r = e.sync(true)
		if len(r.Blocks) != 1 || r.Blocks[0].Status == protocol.Valid {
			t.Fatalf("sync after space came back %+v", r)
		}
		checkOnDisk(t, r.Blocks[0], "alpha\nbeta!\ngamma\n")
		t.Logf("FIGURE disk-full/tmpfs: write hit ENOSPC after %d bytes on disk; view matched disk (%s); after space came back: %s; stale views 0", len(disk), statusOf(r.Blocks[0]), r.Blocks[0].Status)
	})
}

func statusOf(b protocol.BlockView) string { return string(b.Status) }

// checkOnDisk: a view with sources shows exactly lines of what is on disk.
func checkOnDisk(t *testing.T, b protocol.BlockView, disk string) {
	t.Helper()
	for _, s := range b.Sources {
		if s.Range == nil {
			if s.Text != strings.TrimSuffix(disk, "\n") {
				t.Fatalf("whole view %q is not the disk content %q", s.Text, disk)
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(disk, "\n"), "\n")
		if s.Range.End > len(lines) || s.Text != strings.Join(lines[s.Range.Start-1:s.Range.End], "\n") {
			t.Fatalf("view %+v is not on disk (%d lines)", s, len(lines))
		}
	}
}

type failingReader struct {
	r     io.Reader
	after int
	err   error
	n     int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n >= f.after {
		return 0, f.err
	}
	p = p[:min(len(p), f.after-f.n)]
	n, err := f.r.Read(p)
	f.n += n
	return n, err
}

// TestFaultPermissionFlip: a file turns unreadable (chmod 000) and back.
// Root reads anything, so as root the test re-runs itself as nobody.
func TestFaultPermissionFlip(t *testing.T) {
	if os.Getuid() == 0 {
		runAsNobody(t, "TestFaultPermissionFlip")
		return
	}
	for _, mode := range []string{ModeHooks, ModePoll, ModeFsnotify} {
		t.Run(mode, func(t *testing.T) {
			root := tempRoot(t)
			e := newRelEnv(t, root, Config{Mode: mode})
			p := filepath.Join(root, "f.txt")
			write(t, p, "a\nb\nc\n")
			e.observe("c1", p, &protocol.Range{Start: 1, End: 3}, "a\nb\nc")
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
			r := e.sync(false)
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || !strings.Contains(r.Blocks[0].Notice, "could not be re-read") {
				t.Fatalf("sync while unreadable %+v", r)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			r = e.sync(false)
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Valid || r.Blocks[0].Sources[0].Text != "a\nb\nc" {
				t.Fatalf("sync when readable again %+v", r)
			}
			t.Logf("FIGURE permission-flip/%s: unreadable -> invalid with notice; readable again -> restored valid", mode)
		})
	}
}

// runAsNobody re-runs test name in a copy of the test binary as uid 65534.
func runAsNobody(t *testing.T, name string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "concord-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "fileadapter.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Skipf("cannot copy the test binary to run as nobody: %v", err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp", "GOCOVERDIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "FIGURE") || strings.Contains(l, "--- FAIL") || strings.Contains(l, "_test.go") {
			t.Log(strings.TrimSpace(l))
		}
	}
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("as nobody: the test did not pass:\n%s", out)
	}
}

// TestFaultWatchLimit: fsnotify runs out of watches after a few directories
// (ENOSPC from a hooked Add, as the inotify limit gives); the others are
// polled, and every change is seen without a sync, then repaired.
func TestFaultWatchLimit(t *testing.T) {
	root := tempRoot(t)
	e := newRelEnv(t, root, Config{Mode: ModeFsnotify, PollInterval: 20 * time.Millisecond})
	const dirs, limit = 50, 10
	var added atomic.Int64
	real := e.a.addWatch
	e.a.addWatch = func(d string) error {
		if added.Add(1) > limit {
			return fmt.Errorf("inotify_add_watch %s: %w", d, syscall.ENOSPC)
		}
		return real(d)
	}
	var paths []string
	for i := 0; i < dirs; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i), "f.txt")
		write(t, p, "x = 1\ny = 2\n")
		paths = append(paths, p)
		e.observe(fmt.Sprintf("c%d", i), p, &protocol.Range{Start: 1, End: 2}, "x = 1\ny = 2")
	}
	polled := 0
	for _, p := range paths {
		if e.a.Polled(pathURI(p)) {
			polled++
		}
	}
	if polled != dirs-limit {
		t.Fatalf("polled %d directories, want %d", polled, dirs-limit)
	}
	time.Sleep(30 * time.Millisecond)
	h0 := e.hints.Load()
	for _, p := range paths {
		write(t, p, "x = 10\ny = 2\n")
	}
	waitFor(t, "a hint for every file", func() bool { return e.hints.Load()-h0 >= dirs })
	r := e.sync(false)
	patched := 0
	for _, b := range r.Blocks {
		if b.Status == protocol.Patched && b.Sources[0].Text == "x = 10\ny = 2" {
			patched++
		}
	}
	if patched != dirs {
		t.Fatalf("patched %d of %d", patched, dirs)
	}
	t.Logf("FIGURE watch-limit: %d dirs, %d watched, %d polled; %d/%d changes hinted without a sync, %d/%d repaired, missed 0", dirs, limit, polled, dirs, dirs, patched, dirs)
}

// TestFaultRenameStorm: atomic saves (write a temp file, rename it over) at
// 1,000 per second; a syncer checks every view against the versions written,
// and at the end nothing is missed.
func TestFaultRenameStorm(t *testing.T) {
	dur, rate := time.Second, 1000
	if fullSize() {
		dur = 10 * time.Second
	}
	root := tempRoot(t)
	e := newRelEnv(t, root, Config{Mode: ModeFsnotify, Debounce: 50 * time.Millisecond})
	p := filepath.Join(root, "f.txt")
	content := func(i int) string { return fmt.Sprintf("head\nversion %d\ntail\n", i) }
	write(t, p, content(0))
	e.observe("c1", p, &protocol.Range{Start: 1, End: 3}, "head\nversion 0\ntail")
	var (
		mu      sync.Mutex
		written = map[string]bool{strings.TrimSuffix(content(0), "\n"): true}
		stop    = make(chan struct{})
		syncs   atomic.Int64
		bad     atomic.Value
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() { // the agent: a sync every 15 ms, each view checked
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			r, err := e.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: 2})
			if err != nil {
				bad.Store(err.Error())
				return
			}
			syncs.Add(1)
			for _, b := range r.Blocks {
				for _, s := range b.Sources {
					mu.Lock()
					ok := written[s.Text]
					mu.Unlock()
					if !ok {
						bad.Store(fmt.Sprintf("view %q was never written", s.Text))
					}
				}
			}
		}
	}()
	start := time.Now()
	n := 0
	for time.Since(start) < dur {
		n++
		mu.Lock()
		written[strings.TrimSuffix(content(n), "\n")] = true
		mu.Unlock()
		tmp := filepath.Join(root, ".f.txt.tmp")
		if err := os.WriteFile(tmp, []byte(content(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		if next := start.Add(time.Duration(n) * time.Second / time.Duration(rate)); time.Until(next) > 0 {
			time.Sleep(time.Until(next))
		}
	}
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	r := e.sync(true)
	want := strings.TrimSuffix(content(n), "\n")
	if len(r.Blocks) != 1 || len(r.Blocks[0].Sources) != 1 || r.Blocks[0].Sources[0].Text != want {
		t.Fatalf("after the storm %+v, want %q", r, want)
	}
	t.Logf("FIGURE rename-storm: %d atomic saves in %.1fs (%.0f/s); %d hints after debounce, %d concurrent syncs, all views were written versions; final version seen: yes; missed 0",
		n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), e.hints.Load(), syncs.Load())
}

// TestFaultCheckout: a git-checkout-like rewrite of many files at once
// (unlink and create, as git does), every file observed.
func TestFaultCheckout(t *testing.T) {
	files := 1000
	if fullSize() {
		files = 10000
	}
	root := tempRoot(t)
	e := newRelEnv(t, root, Config{Mode: ModeFsnotify, Debounce: 50 * time.Millisecond})
	paths := make([]string, files)
	for i := range paths {
		paths[i] = filepath.Join(root, fmt.Sprintf("pkg%03d", i%100), fmt.Sprintf("f%05d.go", i))
		write(t, paths[i], fmt.Sprintf("package p\n\nconst N = %d\n", i))
	}
	t0 := time.Now()
	for i, p := range paths {
		e.observe(fmt.Sprintf("c%d", i), p, &protocol.Range{Start: 3, End: 3}, fmt.Sprintf("const N = %d", i))
	}
	observeTime := time.Since(t0)
	t1 := time.Now()
	for i, p := range paths {
		os.Remove(p)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package p\n\nconst N = %d + 1\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeTime := time.Since(t1)
	t2 := time.Now()
	r := e.sync(false)
	syncTime := time.Since(t2)
	patched := 0
	for _, b := range r.Blocks {
		if b.Status == protocol.Patched {
			patched++
		}
	}
	full := e.sync(true)
	right := 0
	for _, b := range full.Blocks {
		i := 0
		fmt.Sscanf(b.Anchor, "c%d", &i)
		if b.Status == protocol.Patched && len(b.Sources) == 1 && b.Sources[0].Text == fmt.Sprintf("const N = %d + 1", i) {
			right++
		}
	}
	if right != files {
		t.Fatalf("%d of %d blocks show the checked-out text", right, files)
	}
	t.Logf("FIGURE checkout: %d files observed in %v, rewritten in %v; the next sync took %v and carried %d patched blocks (%d watcher hints meanwhile); all %d views show the new text; missed 0",
		files, observeTime.Round(time.Millisecond), writeTime.Round(time.Millisecond), syncTime.Round(time.Millisecond), patched, e.hints.Load(), right)
}

// TestFaultReplacedByDirectory: a file becomes a directory and back.
func TestFaultReplacedByDirectory(t *testing.T) {
	for _, mode := range []string{ModeHooks, ModePoll, ModeFsnotify} {
		t.Run(mode, func(t *testing.T) {
			root := tempRoot(t)
			e := newRelEnv(t, root, Config{Mode: mode})
			p := filepath.Join(root, "f.txt")
			write(t, p, "a\nb\n")
			e.observe("c1", p, &protocol.Range{Start: 1, End: 2}, "a\nb")
			os.Remove(p)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(p, "inner.txt"), "x\n")
			r := e.sync(false)
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Invalid || !strings.Contains(r.Blocks[0].Notice, "is a directory") {
				t.Fatalf("sync while a directory %+v", r)
			}
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			// Back as a file, saved atomically as editors do (a watcher
			// that reads a file between truncate and write sees it empty,
			// which TestEmptiedThenWritten covers).
			write(t, p+".tmp", "a\nb\n")
			if err := os.Rename(p+".tmp", p); err != nil {
				t.Fatal(err)
			}
			r = e.sync(false)
			if len(r.Blocks) != 1 || r.Blocks[0].Status != protocol.Valid || r.Blocks[0].Sources[0].Text != "a\nb" {
				t.Fatalf("sync when a file again %+v", r)
			}
			t.Logf("FIGURE file-to-directory/%s: directory -> invalid with notice; file again -> restored valid", mode)
		})
	}
}
