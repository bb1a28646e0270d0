package rpc

import (
	"sync"
	"testing"
	"time"
)

// TestSchedulerOrder checks the ordering rule of docs/protocol.md: one
// agent's requests in order, agents concurrent, barriers total.
func TestSchedulerOrder(t *testing.T) {
	var q scheduler
	q.init()
	type task struct {
		name       string
		lane       string
		barrier    bool
		wait, done func()
		started    chan struct{}
		release    chan struct{}
	}
	mk := func(name, lane string, barrier bool) *task {
		tk := &task{name: name, lane: lane, barrier: barrier, started: make(chan struct{}), release: make(chan struct{})}
		tk.wait, tk.done = q.enter(lane, barrier)
		return tk
	}
	// Arrival order.
	a1 := mk("a1", "a", false)
	b1 := mk("b1", "b", false)
	a2 := mk("a2", "a", false)
	x := mk("x", "", true)
	b2 := mk("b2", "b", false)
	all := []*task{a1, b1, a2, x, b2}
	var wg sync.WaitGroup
	for _, tk := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk.wait()
			close(tk.started)
			<-tk.release
			tk.done()
		}()
	}
	started := func(tk *task) bool {
		select {
		case <-tk.started:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	mustStart := func(tk *task) {
		t.Helper()
		select {
		case <-tk.started:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not start", tk.name)
		}
	}
	mustStart(a1)
	mustStart(b1) // another agent runs while a1 is busy
	if started(a2) {
		t.Fatal("a2 overtook a1")
	}
	close(a1.release)
	mustStart(a2)
	close(a2.release)
	if started(x) {
		t.Fatal("barrier started while b1 was running")
	}
	close(b1.release)
	mustStart(x)
	if started(b2) {
		t.Fatal("b2 started before the barrier finished")
	}
	close(x.release)
	mustStart(b2)
	close(b2.release)
	wg.Wait()
}

// TestLaneIsTheDecodedAgent: the ordering lane is the agent of the params
// as the method decodes them (once, in Handle), so one agent spelled with
// JSON escapes shares its lane (issue 10, bug 8), and params that do not
// name an agent order with the agentless requests.
func TestLaneIsTheDecodedAgent(t *testing.T) {
	cases := map[string]string{
		`{"agent":"main"}`:         "main",
		`{"agent":"m\u0061in"}`:    "main",
		`{"agent" : "sub-1"}`:      "sub-1",
		`{"agent":5}`:              "",
		`{"agent":null}`:           "",
		`{"turn":1}`:               "",
		`[1]`:                      "",
		`{"agent":"\ud83d\ude00"}`: "😀",
	}
	for name, m := range methods {
		if m.order != byAgent {
			continue
		}
		for in, want := range cases {
			v, _ := m.decode(raw(in))
			if got := agentOf(v); got != want {
				t.Errorf("%s: the lane of %s is %q, want %q", name, in, got, want)
			}
		}
	}
}
