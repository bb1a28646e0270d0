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

// BenchmarkHookToolCall is what a hook adds to each tool call of each
// runtime: the hook process's start, one round trip to the session's
// server, and the server's recognize and sync of the call (a read of one
// of a project's files, unchanged, so nothing to say), interleaved call by call with a no-op
// hook binary. p50-ms and p99-ms are the hook's per call, noop-p50-ms the
// no-op's, x-noop their ratio: the issues' bound is at most 1.5. The runtimes' configurations run concord-hook; `concord
// hook` (the whole binary, same code) and `concord version` (the whole
// binary's start and exit alone) show why. Binaries are built as make
// dist ships them (static, stripped). Claude Code, Codex and Gemini CLI
// run a hook the same way: a process per event, JSON on stdin.
//
//	go test ./cmd/concord -run '^$' -bench HookToolCall -benchtime 300x -count 6 | tee new.txt
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
	for _, c := range []struct{ out, pkg string }{{shipped, "."}, {shipped + "-hook", "../concord-hook"}} {
		build = exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", c.out, c.pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", c.pkg, err, out)
		}
	}
	xdg := filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		b.Fatal(err)
	}
	// A session's reads go over a project's files: the call i reads one of
	// 100, in turn. (Re-reading one file a thousand times is its own cost,
	// in the core: runtime's BenchmarkRereadOneFile.)
	const files = 100
	content := "alpha\nbeta\ngamma\n"
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	fileOf := func(i int) (name, path string) {
		name = fmt.Sprintf("f%03d.txt", i%files)
		return name, filepath.Join(dir, name)
	}
	// Codex reads a command's exit code from its rollout, where it wrote the
	// command's record just before the hook: each call appends one, after
	// a session's worth of others.
	rollout := filepath.Join(dir, "rollout.jsonl")
	var rl bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&rl, `{"timestamp":"2026-12-05T09:00:00.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"step %d"}]}}`+"\n", i)
	}
	if err := os.WriteFile(rollout, rl.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	appendRollout := func(id string) {
		f, err := os.OpenFile(rollout, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, `{"timestamp":"2026-12-05T09:00:00.000Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":%q,"command":["/bin/bash","-lc","cat a.txt"],"exit_code":0}}}`+"\n", id)
	}
	// Each runtime's PostToolUse (AfterTool) of a read of file, in the
	// format its real binary writes (testdata/claudecode, testdata/codex,
	// testdata/gemini).
	events := map[string]func(i int) map[string]any{
		"claude-code": func(i int) map[string]any {
			_, file := fileOf(i)
			return map[string]any{"session_id": "bench", "transcript_path": "/dev/null", "cwd": dir, "hook_event_name": "PostToolUse",
				"tool_name": "Read", "tool_input": map[string]any{"file_path": file},
				"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": file, "content": content,
					"numLines": 4, "startLine": 1, "totalLines": 4}}, // as Claude Code counts: the empty line after the last newline too
				"tool_use_id": fmt.Sprintf("toolu_bench_%d", i)}
		},
		"codex": func(i int) map[string]any {
			appendRollout(fmt.Sprintf("call_%d", i))
			name, _ := fileOf(i)
			return map[string]any{"session_id": "bench", "turn_id": "t", "transcript_path": rollout, "cwd": dir,
				"hook_event_name": "PostToolUse", "model": "gpt-5.5", "permission_mode": "bypassPermissions", "tool_name": "Bash",
				"tool_input": map[string]string{"command": "cat " + name}, "tool_response": content,
				"tool_use_id": fmt.Sprintf("call_%d", i)}
		},
		"gemini-cli": func(i int) map[string]any {
			_, file := fileOf(i)
			return map[string]any{"session_id": "bench", "transcript_path": "/dev/null", "cwd": dir, "hook_event_name": "AfterTool",
				"timestamp": time.Date(2026, 12, 5, 9, 0, 0, i*int(time.Millisecond), time.UTC).Format(time.RFC3339Nano),
				"tool_name": "read_file", "tool_input": map[string]any{"file_path": file},
				"tool_response": map[string]any{"llmContent": content, "returnDisplay": ""}}
		},
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
	calls := 0
	run := func(b *testing.B, runtime string, argv []string) time.Duration {
		in, err := json.Marshal(events[runtime](calls))
		if err != nil {
			b.Fatal(err)
		}
		calls++
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(in)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil || errb.Len() > 0 {
			b.Fatalf("%v: %v %s", argv, err, errb.String())
		}
		return time.Since(start)
	}
	p50 := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	for _, c := range []struct {
		name, runtime string
		argv          []string
	}{
		{"claude-code", "claude-code", []string{shipped + "-hook", "claude-code"}},
		{"codex", "codex", []string{shipped + "-hook", "codex"}},
		{"gemini-cli", "gemini-cli", []string{shipped + "-hook", "gemini-cli"}},
		{"concord-hook-subcommand", "claude-code", []string{shipped, "hook", "claude-code"}},
		{"concord-version", "claude-code", []string{shipped, "version"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			run(b, c.runtime, c.argv) // the session's server starts here, outside the timing
			hookT := make([]time.Duration, 0, b.N)
			noopT := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				// Interleaved, so both see the same load of the machine.
				noopT = append(noopT, run(b, c.runtime, []string{noop}))
				hookT = append(hookT, run(b, c.runtime, c.argv))
			}
			b.StopTimer()
			h, o := p50(hookT), p50(noopT)
			b.ReportMetric(float64(h.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(hookT[len(hookT)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(o.Microseconds())/1000, "noop-p50-ms")
			b.ReportMetric(float64(h)/float64(o), "x-noop")
		})
	}
	for _, rt := range []string{"claude-code", "codex", "gemini-cli"} {
		end, _ := json.Marshal(map[string]any{"session_id": "bench", "cwd": dir, "hook_event_name": "SessionEnd"})
		cmd := exec.Command(shipped+"-hook", rt)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(end)
		_ = cmd.Run()
	}
}
