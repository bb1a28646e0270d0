package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// noopHook is the baseline hook: a Go program that reads its stdin and
// prints {}.
const noopHook = `package main

import (
	"io"
	"os"
)

func main() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	_, _ = os.Stdout.Write([]byte("{}\n"))
}
`

// BenchmarkHookToolCall is what a hook adds to each tool call: the hook
// process's start, its connection to the session's server, recognize and
// sync of a Claude Code Read (the file unchanged, so nothing to say), side
// by side with a no-op hook binary, and `concord version` (the binary's
// start and exit alone). p50-ms and p99-ms are per call. Claude Code runs
// the hook the same way (a process per event, JSON on stdin). concord is
// built as the plugin ships it (static, stripped: make dist-claude-code).
func BenchmarkHookToolCall(b *testing.B) {
	dir := b.TempDir()
	noop := filepath.Join(dir, "noophook")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(noopHook), 0o644); err != nil {
		b.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", noop, "main.go")
	build.Dir, build.Env = dir, append(os.Environ(), "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the no-op hook: %v\n%s", err, out)
	}
	shipped := filepath.Join(dir, "concord")
	build = exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", shipped, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build concord: %v\n%s", err, out)
	}
	xdg := filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, "a.txt")
	content := "alpha\nbeta\ngamma\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	event := func(i int) []byte {
		ev, _ := json.Marshal(map[string]any{
			"session_id": "bench", "transcript_path": "/dev/null", "cwd": dir, "hook_event_name": "PostToolUse",
			"tool_name": "Read", "tool_input": map[string]any{"file_path": file},
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": file, "content": content,
				"numLines": 3, "startLine": 1, "totalLines": 3}},
			"tool_use_id": fmt.Sprintf("toolu_bench_%d", i),
		})
		return ev
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
	calls := 0
	run := func(b *testing.B, bin string, args ...string) time.Duration {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(event(calls))
		calls++
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil || errb.Len() > 0 {
			b.Fatalf("%s: %v %s", bin, err, errb.String())
		}
		return time.Since(start)
	}
	for _, c := range []struct {
		name string
		bin  string
		args []string
	}{
		{"noop", noop, nil},
		{"concord", shipped, []string{"hook", "claude-code"}},
		{"version", shipped, []string{"version"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			run(b, c.bin, c.args...) // the session's server starts here, outside the timing
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				times = append(times, run(b, c.bin, c.args...))
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
	end, _ := json.Marshal(map[string]any{"session_id": "bench", "cwd": dir, "hook_event_name": "SessionEnd"})
	cmd := exec.Command(shipped, "hook", "claude-code")
	cmd.Env, cmd.Stdin = env, bytes.NewReader(end)
	_ = cmd.Run()
}
