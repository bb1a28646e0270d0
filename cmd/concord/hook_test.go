package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/hook"
	"github.com/concord-ctx/concord/protocol"
)

// The hook transport's tests run real processes: each hook is this test
// binary re-run as `concord hook` (hookTestEnv names the real concord it
// starts servers from) with catRuntime, and each server is the real
// binary's `serve --socket`. catRuntime is Claude Code's event format with
// its Bash calls recognized as OpenCode's bash (a runtime the recognizer
// knows), so these tests need nothing of Claude Code's own recognizer.
const hookTestEnv = "CONCORD_TEST_HOOK_BIN"

type catRuntime struct{ hook.ClaudeCode }

func (catRuntime) Parse(input []byte) (hook.Event, error) {
	ev, err := hook.ClaudeCode{}.Parse(input)
	if err != nil || ev.Kind != hook.KindToolDone {
		return ev, err
	}
	var in struct {
		ToolInput struct {
			Command string `json:"command"`
		} `json:"tool_input"`
		ToolResponse struct {
			Stdout string `json:"stdout"`
		} `json:"tool_response"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return ev, err
	}
	args, _ := json.Marshal(map[string]string{"command": in.ToolInput.Command})
	ev.Call = protocol.ToolCall{Runtime: "opencode", Tool: "bash", Arguments: args, Output: in.ToolResponse.Stdout, Cwd: ev.Cwd}
	return ev, nil
}

func testHookMain(bin string) int {
	cfg, err := hook.FromEnv(hook.Config{Exe: bin, Version: "test"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 0
	}
	_ = hook.Run(context.Background(), catRuntime{}, cfg, os.Stdin, os.Stdout, os.Stderr)
	return 0
}

// hookEnv is one test's hook environment: its own socket directory (an
// XDG_RUNTIME_DIR of its own) and project.
type hookEnv struct {
	t       *testing.T
	xdg     string // XDG_RUNTIME_DIR
	project string
	env     []string
}

func newHookEnv(t *testing.T, extra ...string) *hookEnv {
	t.Helper()
	root := t.TempDir()
	h := &hookEnv{t: t, xdg: filepath.Join(root, "xdg"), project: filepath.Join(root, "project")}
	for _, d := range []string{h.xdg, h.project} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.env = append(os.Environ(), hookTestEnv+"="+concordBin, "XDG_RUNTIME_DIR="+h.xdg)
	h.env = append(h.env, extra...)
	t.Cleanup(h.killServers)
	return h
}

func (h *hookEnv) dir() string { return filepath.Join(h.xdg, "concord") }

func (h *hookEnv) sock(session string) string {
	return hook.SocketPath(h.dir(), hook.ClaudeCodeRuntime, session)
}

// result is one hook process's outcome.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// run runs one hook process with ev (a Claude Code event) on stdin.
func (h *hookEnv) run(ev map[string]any) result {
	h.t.Helper()
	in, err := json.Marshal(ev)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "hook", "claude-code")
	cmd.Env = h.env
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if err != nil {
		r.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
	}
	return r
}

// context is the additionalContext of a hook's answer ("" for none).
func (r result) context(t *testing.T) string {
	t.Helper()
	if strings.TrimSpace(r.stdout) == "" {
		return ""
	}
	var ans struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatalf("hook answer %q: %v", r.stdout, err)
	}
	return ans.HookSpecificOutput.AdditionalContext
}

func event(session, name string, fields ...any) map[string]any {
	ev := map[string]any{"session_id": session, "hook_event_name": name, "cwd": "/", "transcript_path": "/dev/null"}
	for i := 0; i+1 < len(fields); i += 2 {
		ev[fields[i].(string)] = fields[i+1]
	}
	return ev
}

// cat is a PostToolUse of Bash `cat -n FILE` as a tool that showed the
// file's current content.
func (h *hookEnv) cat(session, id, path string, fields ...any) map[string]any {
	h.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	var out strings.Builder
	for i, line := range strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n") {
		fmt.Fprintf(&out, "%6d\t%s", i+1, line)
	}
	return event(session, "PostToolUse", append([]any{"cwd", h.project, "tool_name", "Bash", "tool_use_id", id,
		"tool_input", map[string]any{"command": "cat -n " + path},
		"tool_response", map[string]any{"stdout": out.String() + "\n", "stderr": "", "interrupted": false}}, fields...)...)
}

func (h *hookEnv) write(name, content string) string {
	h.t.Helper()
	p := filepath.Join(h.project, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// servers are the pids of the `concord serve --socket` processes of this
// test's socket directory.
func (h *hookEnv) servers() []int {
	h.t.Helper()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 3 && args[1] == "serve" && args[2] == "--socket" && strings.HasPrefix(args[3], h.dir()+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (h *hookEnv) killServers() {
	for _, pid := range h.servers() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitNoServer waits until no server of this directory runs.
func (h *hookEnv) waitNoServer(within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for len(h.servers()) > 0 {
		if time.Now().After(deadline) {
			h.t.Fatalf("servers still running after %v: %v\n%s", within, h.servers(), h.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *hookEnv) log() string {
	b, _ := os.ReadFile(hook.LogPath(h.dir()))
	return string(b)
}

func mustQuiet(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("hook: status %d, stderr %q", r.code, r.stderr)
	}
}

// TestHookErrata: a read through one hook, an outside change, and the next
// hook's answer carries the erratum, once.
func TestHookErrata(t *testing.T) {
	h := newHookEnv(t)
	f := h.write("a.txt", "alpha\nbeta\ngamma\n")
	mustQuiet(t, h.run(event("s1", "SessionStart", "source", "startup")))
	r := h.run(h.cat("s1", "toolu_1", f))
	mustQuiet(t, r)
	if c := r.context(t); c != "" {
		t.Fatalf("a fresh read got context %q", c)
	}
	h.write("a.txt", "alpha\nBETA\ngamma\n")
	r = h.run(event("s1", "UserPromptSubmit", "prompt", "go on"))
	mustQuiet(t, r)
	got := r.context(t)
	if !strings.Contains(got, "toolu_1") || !strings.Contains(got, "+2: BETA") {
		t.Fatalf("erratum %q: want call toolu_1 and line 2 BETA\n%s", got, h.log())
	}
	var ans map[string]map[string]string
	_ = json.Unmarshal([]byte(r.stdout), &ans)
	if ans["hookSpecificOutput"]["hookEventName"] != "UserPromptSubmit" {
		t.Errorf("answer names %q", r.stdout)
	}
	// Delivered once: the next event says nothing more.
	if c := h.run(event("s1", "UserPromptSubmit", "prompt", "and?")).context(t); c != "" {
		t.Fatalf("erratum repeated: %q", c)
	}
	if n := len(h.servers()); n != 1 {
		t.Fatalf("%d servers, want 1", n)
	}
	mustQuiet(t, h.run(event("s1", "SessionEnd", "reason", "other")))
	h.waitNoServer(5 * time.Second)
	if _, err := os.Lstat(h.sock("s1")); err == nil {
		t.Errorf("socket left after the session's end")
	}
}
