package e2e

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/fakemodel/anthropic"
)

// TestControl: the read window's first change without the plugin: the
// model is left with the stale line, and nothing corrects it.
func TestControl(t *testing.T) {
	e := newEnv(t, false)
	orig := numbered(10, "line %d of w")
	e.write(e.p("w.txt"), orig)
	err := e.run(
		step(nil, read(e.p("w.txt"), "offset", 3, "limit", 5)),
		noop(e.change(e.p("w.txt"), ptr(strings.Replace(orig, "line 5 of w", "line 5 of W", 1)))),
		anthropic.Say("done"),
	)
	if err != nil {
		t.Fatal(err)
	}
	turns := e.fake.Turns()
	last := turns[len(turns)-1]
	if ns := notes(e.fake.Requests()); len(ns) != 0 {
		t.Fatalf("notes without the plugin: %v", ns)
	}
	tr, ok := e.fake.ToolResult(id(0, 0))
	if !ok || !strings.Contains(tr.Text, "5\tline 5 of w") {
		t.Fatalf("the read's result: %q", tr.Text)
	}
	if !strings.Contains(e.at(last)[e.p("w.txt")], "line 5 of W") {
		t.Fatal("the file did not change")
	}
	if last.Contains("line 5 of W") {
		t.Fatal("something corrected the stale line without the plugin")
	}
	if len(e.servers()) != 0 || e.log() != "" {
		t.Fatalf("concord ran without the plugin")
	}
	record("%-26s the last request shows the stale line 5 and no correction", t.Name())
}

// TestIdleEnd: a session killed before its end (no SessionEnd hook) leaves
// no server behind: it ends after its idle timeout.
func TestIdleEnd(t *testing.T) {
	e := newEnv(t, true)
	e.idle = "1s"
	e.write(e.p("a.txt"), "a\n")
	var (
		mu    sync.Mutex // alive is set on the fake model's goroutine
		alive []int
	)
	err := e.run(
		step(nil, read(e.p("a.txt"))),
		noop(func(*anthropic.Request) error {
			mu.Lock()
			alive = e.servers()
			mu.Unlock()
			e.kill() // kills claude -p: no SessionEnd
			return nil
		}),
		anthropic.Say("done"),
	)
	mu.Lock()
	defer mu.Unlock()
	if err == nil {
		t.Fatal("claude survived its kill")
	}
	if len(alive) != 1 {
		t.Fatalf("servers while the session ran: %v", alive)
	}
	start := time.Now()
	if err := e.noServerWithin(10 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, e.log())
	}
	if !strings.Contains(e.log(), "reason=idle") {
		t.Errorf("not ended by the idle timeout:\n%s", e.log())
	}
	record("%-26s the server of a killed session ended %v after the kill (--idle 1s)", t.Name(), time.Since(start).Round(100*time.Millisecond))
}

// TestTwoSessions: two sessions in one project at once, one socket
// directory: a change to the file one of them read corrects that one only.
func TestTwoSessions(t *testing.T) {
	a, b := newEnv(t, true), newEnv(t, true)
	b.dir, b.xdg = a.dir, a.xdg
	a.write(a.p("f.txt"), "f one\nf two\n")
	b.write(b.p("g.txt"), "g one\ng two\n")
	b.mu.Lock()
	b.watch = append(b.watch, a.p("f.txt"))
	b.mu.Unlock()
	bReady, changed := make(chan struct{}), make(chan struct{})
	var servers []int
	var wg sync.WaitGroup
	var errA, errB error
	wg.Add(2)
	go func() {
		defer wg.Done()
		errA = a.run(
			step(nil, read(a.p("f.txt"))),
			noop(func(r *anthropic.Request) error {
				select {
				case <-bReady:
				case <-time.After(time.Minute):
				}
				servers = a.servers()
				defer close(changed)
				return a.change(a.p("f.txt"), ptr("f one\nF TWO\n"))(r)
			}),
			anthropic.Say("done"),
		)
	}()
	go func() {
		defer wg.Done()
		errB = b.run(
			step(nil, read(b.p("g.txt"))),
			noop(func(*anthropic.Request) error {
				close(bReady)
				<-changed
				return nil
			}),
			anthropic.Say("done"),
		)
	}()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("a: %v\nb: %v", errA, errB)
	}
	if len(servers) != 2 {
		t.Errorf("servers while both ran: %v, want 2", servers)
	}
	if ns := notes(b.fake.Requests()); len(ns) != 0 {
		t.Errorf("session b was told about session a's read: %v", ns)
	}
	a.verify(map[int][]string{2: {id(0, 0)}})
	if err := a.noServerWithin(10 * time.Second); err != nil {
		t.Error(err)
	}
}

// TestMarketplaceInstall: the local marketplace of make dist, added and
// installed as a user does (claude plugin marketplace add, claude plugin
// install), then a session without --plugin-dir is corrected.
func TestMarketplaceInstall(t *testing.T) {
	e := newEnv(t, false)
	for _, args := range [][]string{
		{"plugin", "marketplace", "add", marketDir},
		{"plugin", "install", "concord@concord"},
	} {
		cmd := exec.Command(claudeBin, args...)
		cmd.Dir = e.dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "IS_SANDBOX=1", "DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	e.write(e.p("m.txt"), "m one\nm two\n")
	err := e.run(
		step(nil, read(e.p("m.txt"))),
		noop(e.change(e.p("m.txt"), ptr("m one\nM TWO\n"))),
		anthropic.Say("done"),
	)
	if err != nil {
		t.Fatalf("%v\n%s", err, e.log())
	}
	e.verify(map[int][]string{2: {id(0, 0)}})
	if err := e.noServerWithin(10 * time.Second); err != nil {
		t.Error(err)
	}
}
