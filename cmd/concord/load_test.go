package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/client"
)

// The load and soak tests drive one real `concord serve` the way many agents of one session do,
// with an editor rewriting files behind their backs. In `make test` they run at a small size (a
// regression check of the same code path); `make reliability` runs them at the sizes that
// docs/reliability.md reports (CONCORD_RELIABILITY=1).

// reliabilitySize returns full when CONCORD_RELIABILITY is set, else small.
func reliabilitySize(small, full int) int {
	if os.Getenv("CONCORD_RELIABILITY") != "" {
		return full
	}
	return small
}

// loadWorkspace is a set of files whose current content the test knows line by line; edit
// rewrites one line of one file through temp file + rename, as editors save.
type loadWorkspace struct {
	root  string
	mu    sync.Mutex
	files [][]string
}

func newLoadWorkspace(t testing.TB, nFiles, nLines int) *loadWorkspace {
	w := &loadWorkspace{root: tempRoot(t)}
	for f := range nFiles {
		content := make([]string, nLines)
		for l := range content {
			content[l] = fmt.Sprintf("file %d line %d: alpha beta gamma delta %d", f, l+1, l*7%13)
		}
		w.files = append(w.files, content)
		w.write(t, f)
	}
	return w
}

func (w *loadWorkspace) path(f int) string { return filepath.Join(w.root, fmt.Sprintf("f%02d.txt", f)) }

// write saves file f atomically; the caller holds w.mu or owns w.
func (w *loadWorkspace) write(t testing.TB, f int) {
	atomicWrite(t, w.path(f), []byte(strings.Join(w.files[f], "\n")+"\n"))
}

// edit changes one token of one line (a local edit the locator patches) or, one time in ten,
// inserts a line (shifting every span below it).
func (w *loadWorkspace) edit(t testing.TB, rng *rand.Rand, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := rng.IntN(len(w.files))
	l := rng.IntN(len(w.files[f]))
	if rng.IntN(10) == 0 {
		w.files[f] = slices.Insert(w.files[f], l, fmt.Sprintf("inserted line %d", n))
	} else {
		w.files[f][l] = strings.Replace(w.files[f][l], "gamma", "gamma"+strconv.Itoa(n), 1)
	}
	w.write(t, f)
}

// span returns an observation of lines [start, start+size) of file f as the file is now.
func (w *loadWorkspace) span(f, start, size int) protocol.Source {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.files[f]
	start = min(start, len(lines)-size+1)
	return protocol.Source{URI: fileURI(w.path(f)), Range: &protocol.Range{Start: start, End: start + size - 1},
		Text: strings.Join(lines[start-1:start-1+size], "\n")}
}

// checkInvariant: after the editor stopped and a full sync, every block the server calls valid or
// patched shows exactly the file's current lines at its range.
func (w *loadWorkspace) checkInvariant(t testing.TB, c *client.Client, agent string) (checked int) {
	var res protocol.SyncResult
	if err := c.Call(context.Background(), protocol.MethodSync, protocol.SyncParams{Agent: agent, Turn: 1 << 20, Full: true}, &res); err != nil {
		t.Fatalf("full sync %s: %v", agent, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range res.Blocks {
		if b.Status != "valid" && b.Status != "patched" {
			continue
		}
		for _, s := range b.Sources {
			var f int
			if _, err := fmt.Sscanf(filepath.Base(strings.TrimPrefix(s.URI, "file://")), "f%02d.txt", &f); err != nil {
				t.Fatalf("block %s: unexpected uri %s", b.Block, s.URI)
			}
			lines := w.files[f]
			if s.Range.End > len(lines) {
				t.Errorf("agent %s block %s (%s): range %d-%d past the end (%d lines)", agent, b.Block, b.Status, s.Range.Start, s.Range.End, len(lines))
				continue
			}
			if want := strings.Join(lines[s.Range.Start-1:s.Range.End], "\n"); s.Text != want {
				t.Errorf("agent %s block %s (%s) lines %d-%d:\n got %q\nwant %q", agent, b.Block, b.Status, s.Range.Start, s.Range.End, s.Text, want)
			}
			checked++
		}
	}
	return checked
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// loadCPU is the CPU time (user and system) the server and this test
// process have used: on a small machine both share the cores, and the
// test's agents decode every reply.
type loadCPU struct {
	server, self time.Duration
	ok           bool // the server's was read (/proc, Linux)
}

func cpuTimes(pid int) loadCPU {
	var c loadCPU
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return c
	}
	// Fields after the command's closing parenthesis: utime and stime are
	// the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
	_, rest, found := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !found || len(f) < 13 {
		return c
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 == nil && err2 == nil {
		c.server, c.ok = time.Duration(ut+st)*10*time.Millisecond, true
	}
	return c
}

func (c loadCPU) sub(d loadCPU) loadCPU {
	return loadCPU{server: c.server - d.server, self: c.self - d.self, ok: c.ok && d.ok}
}

// TestLoadManyAgents: many agents observe and sync concurrently on one server while an editor
// rewrites the files. Every call is answered, and the projection is true at the end.
func TestLoadManyAgents(t *testing.T) {
	agents := reliabilitySize(5, 50)
	perAgent := reliabilitySize(100, 1000)
	w := newLoadWorkspace(t, 20, 400)
	c := startServe(t)
	initialize(t, c, w.root, "auto")
	cpu0, start := cpuTimes(c.Pid()), time.Now()

	stop := make(chan struct{})
	editorDone := make(chan int)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		n := 0
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				editorDone <- n
				return
			case <-tick.C:
				n++
				w.edit(t, rng, n)
			}
		}
	}()

	var mu sync.Mutex
	var syncLat []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(a), 7))
			agent := fmt.Sprintf("agent-%02d", a)
			var lat []time.Duration
			for i := range perAgent {
				src := w.span(rng.IntN(20), 1+rng.IntN(380), 1+rng.IntN(12))
				o := protocol.ObserveParams{Agent: agent, Turn: i/10 + 1, Anchor: fmt.Sprintf("call_%d", i), Sources: []protocol.Source{src}}
				if err := c.Call(context.Background(), protocol.MethodObserve, o, nil); err != nil {
					errs <- fmt.Errorf("%s observe %d: %w", agent, i, err)
					return
				}
				if i%10 == 9 {
					t0 := time.Now()
					var res protocol.SyncResult
					if err := c.Call(context.Background(), protocol.MethodSync, protocol.SyncParams{Agent: agent, Turn: i/10 + 1}, &res); err != nil {
						errs <- fmt.Errorf("%s sync %d: %w", agent, i, err)
						return
					}
					lat = append(lat, time.Since(t0))
				}
			}
			mu.Lock()
			syncLat = append(syncLat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	edits := <-editorDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rss, _ := vmRSS(c.Pid())
	cpu, wall := cpuTimes(c.Pid()).sub(cpu0), time.Since(start)
	// The server's own timing of the same syncs, before the checks add
	// theirs: how much of the latency above is its work, how much the
	// wait for the one output pipe that this client drains.
	var st protocol.StatsResult
	if err := c.Call(context.Background(), protocol.MethodStats, nil, &st); err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.Syncs == nil || st.Syncs.Count != int64(len(syncLat)) {
		t.Errorf("stats timed %+v syncs, want %d", st.Syncs, len(syncLat))
	}
	checked := 0
	for a := range agents {
		checked += w.checkInvariant(t, c, fmt.Sprintf("agent-%02d", a))
	}
	if want := agents * perAgent / 10; len(syncLat) != want {
		t.Errorf("%d syncs answered, want %d", len(syncLat), want)
	}
	if checked == 0 {
		t.Error("no valid or patched block to check: the invariant was never exercised")
	}
	t.Logf("load: %d agents x %d observations, %d edits in flight, %d syncs: p50 %v, p99 %v, max %v; rss %d kB; %d live sources checked",
		agents, perAgent, edits, len(syncLat), percentile(syncLat, 0.5), percentile(syncLat, 0.99), percentile(syncLat, 1), rss, checked)
	if s := st.Syncs; s != nil {
		t.Logf("load, as the server timed its syncs: handled p50 %.1f ms, p99 %.1f ms; answered (reply written) p50 %.1f ms, p99 %.1f ms; %.0f kB per reply",
			s.HandledP50Ms, s.HandledP99Ms, s.AnsweredP50Ms, s.AnsweredP99Ms, float64(s.Bytes)/float64(max(s.Count, 1))/1000)
	}
	if cpu.ok {
		t.Logf("load, CPU over the %.1f s run: server %.1f s, this test (agents, editor) %.1f s",
			wall.Seconds(), cpu.server.Seconds(), cpu.self.Seconds())
	}
}

// TestSoakFlatMemory: observe/sync rounds with edits, one agent re-reading a working set, as a long
// session does, and dropping tool results older than a window from its context (a condenser),
// which the binding tells the server with `release`. What stays in the context is bounded, so
// memory must not grow with the number of rounds: RSS after the last round stays within a bound
// of RSS after the warm-up.
func TestSoakFlatMemory(t *testing.T) {
	rounds := reliabilitySize(1500, 10000)
	w := newLoadWorkspace(t, 10, 300)
	c := startServe(t)
	initialize(t, c, w.root, "hooks")
	rng := rand.New(rand.NewPCG(3, 4))
	const window, condenseEvery = 300, 50 // results kept in the context; condense period
	warmup := rounds / 5
	var rssWarm int64
	for i := range rounds {
		src := w.span(rng.IntN(10), 1+rng.IntN(280), 1+rng.IntN(15))
		o := protocol.ObserveParams{Agent: "main", Turn: i + 1, Anchor: fmt.Sprintf("call_%d", i), Sources: []protocol.Source{src}}
		if err := c.Call(context.Background(), protocol.MethodObserve, o, nil); err != nil {
			t.Fatalf("round %d observe: %v", i, err)
		}
		if i%3 == 0 {
			w.edit(t, rng, i)
			if err := c.Call(context.Background(), protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: src.URI, Agent: "main"}, nil); err != nil {
				t.Fatalf("round %d sourceChanged: %v", i, err)
			}
		}
		if err := c.Call(context.Background(), protocol.MethodSync, protocol.SyncParams{Agent: "main", Turn: i + 1}, nil); err != nil {
			t.Fatalf("round %d sync: %v", i, err)
		}
		if i%condenseEvery == condenseEvery-1 && i >= window {
			// The condenser dropped the oldest results: release them (some were already
			// superseded or are unknown: both are fine for anchors).
			var old []string
			for k := i - window - condenseEvery + 1; k <= i-window; k++ {
				if k >= 0 {
					old = append(old, fmt.Sprintf("call_%d", k))
				}
			}
			if err := c.Call(context.Background(), protocol.MethodRelease, protocol.ReleaseParams{Agent: "main", Anchors: old}, nil); err != nil {
				t.Fatalf("round %d release: %v", i, err)
			}
		}
		if i == warmup {
			rssWarm, _ = vmRSS(c.Pid())
		}
	}
	rssEnd, err := vmRSS(c.Pid())
	if err != nil {
		t.Skipf("no /proc RSS on this system (%v); the rounds ran", err)
	}
	if w.checkInvariant(t, c, "main") == 0 {
		t.Error("no valid or patched block to check")
	}
	t.Logf("soak: %d rounds: rss after warm-up (%d rounds) %d kB, at the end %d kB (%+.1f%%)",
		rounds, warmup, rssWarm, rssEnd, 100*float64(rssEnd-rssWarm)/float64(rssWarm))
	// Flat: a leak of even 1 kB per round would add 8 MB over the measured rounds at full size.
	if limit := rssWarm + rssWarm/10 + 2048; rssEnd > limit {
		t.Errorf("rss grew from %d kB to %d kB over %d rounds (limit %d kB)", rssWarm, rssEnd, rounds-warmup, limit)
	}
}

// atomicWrite saves data the way editors do: a temp file in the same directory renamed over path.
func atomicWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
