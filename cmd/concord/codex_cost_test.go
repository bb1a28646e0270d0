package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestCodexHookCost times what Concord adds to each Codex tool call: the
// `concord hook codex` process for a PostToolUse of `cat a.txt` (process
// start, the rollout's exit code, the socket, recognize, sync) against a
// no-op hook binary that only reads its input, and compares the medians
// (the bound: at most 1.5× the no-op's). Set CONCORD_HOOK_COST=1
// to run it; it logs both figures.
func TestCodexHookCost(t *testing.T) {
	if os.Getenv("CONCORD_HOOK_COST") == "" {
		t.Skip("a timing: CONCORD_HOOK_COST=1 go test ./cmd/concord -run TestCodexHookCost -v")
	}
	root := t.TempDir()
	noop := filepath.Join(root, "noop")
	src := filepath.Join(root, "noop.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport (\n\t\"io\"\n\t\"os\"\n)\n\nfunc main() { io.Copy(io.Discard, os.Stdin) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := osexec.Command("go", "build", "-o", noop, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	bin := filepath.Join(root, "concord")
	if out, err := osexec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil { // without -race, as users run it
		t.Fatalf("%v\n%s", err, out)
	}
	proj, xdg := filepath.Join(root, "proj"), filepath.Join(root, "run")
	for _, d := range []string{proj, xdg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 60
	rollout := filepath.Join(root, "rollout.jsonl")
	var rl bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&rl, `{"timestamp":"2026-12-05T09:00:00.000Z","ordinal":%d,"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_%d","command":["/bin/bash","-lc","cat a.txt"],"exit_code":0}}}`+"\n", i, i)
	}
	if err := os.WriteFile(rollout, rl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	event := func(i int) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "cost", "turn_id": "t", "transcript_path": rollout, "cwd": proj,
			"hook_event_name": "PostToolUse", "model": "gpt-5.5", "permission_mode": "bypassPermissions", "tool_name": "Bash",
			"tool_input": map[string]string{"command": "cat a.txt"}, "tool_response": "one\ntwo\nthree\n",
			"tool_use_id": fmt.Sprintf("call_%d", i)})
		return b
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
	run := func(argv []string, in []byte) time.Duration {
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(in)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(start)
	}
	// The session's server is started by the first hook, as in a session.
	run([]string{bin, "hook", "codex"}, event(0))
	defer run([]string{bin, "hook", "codex"}, []byte(`{"session_id":"cost","cwd":"`+proj+`","hook_event_name":"SessionEnd"}`))
	var hookT, noopT []time.Duration
	for i := 1; i < n; i++ { // interleaved, so both see the same machine load
		noopT = append(noopT, run([]string{noop}, event(i)))
		hookT = append(hookT, run([]string{bin, "hook", "codex"}, event(i)))
	}
	p50 := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	h, o := p50(hookT), p50(noopT)
	t.Logf("per PostToolUse, p50 of %d: concord hook codex %v, no-op hook %v (%.2f×)", n-1, h, o, float64(h)/float64(o))
	if float64(h) > 1.5*float64(o) {
		t.Errorf("the hook's p50 %v is over 1.5× the no-op's %v", h, o)
	}
}
