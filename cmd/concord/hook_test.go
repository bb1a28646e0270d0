package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/concord-ctx/concord/hook"
)

// The hook transport's tests run real processes: each hook is the real
// concord-hook (built beside concord by TestMain, as make build and the
// plugins lay them out), and each server the real concord's
// `serve --socket`, which it starts.

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
	h.env = append(os.Environ(), "XDG_RUNTIME_DIR="+h.xdg)
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
	cmd := exec.Command(concordBin+"-hook", "claude-code")
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

// TestHookParallel: many hook processes of one session at once, none with
// a server yet (parallel tool calls at the session's start): one server
// starts, every read is registered, and after a change each erratum is
// delivered by exactly one of the next wave of hooks.
func TestHookParallel(t *testing.T) {
	h := newHookEnv(t)
	const n = 16
	files := make([]string, n)
	for i := range files {
		files[i] = h.write(fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("one %d\ntwo %d\nthree %d\n", i, i, i))
	}
	runAll := func(evs []map[string]any) []result {
		out := make([]result, len(evs))
		var wg sync.WaitGroup
		for i, ev := range evs {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = h.run(ev) }()
		}
		wg.Wait()
		return out
	}
	var reads []map[string]any
	for i, f := range files {
		reads = append(reads, h.cat("par", fmt.Sprintf("toolu_read%02d", i), f))
	}
	for i, r := range runAll(reads) {
		mustQuiet(t, r)
		if c := r.context(t); c != "" {
			t.Fatalf("read %d got context %q", i, c)
		}
	}
	if got := strings.Count(h.log(), "msg=listening"); got != 1 {
		t.Fatalf("%d servers started, want 1\n%s", got, h.log())
	}
	for i := range files {
		h.write(fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("one %d\nTWO %d\nthree %d\n", i, i, i))
	}
	// The next wave: each hook reads an untouched file, and syncs.
	var wave []map[string]any
	for i := range n {
		wave = append(wave, h.cat("par", fmt.Sprintf("toolu_next%02d", i), h.write(fmt.Sprintf("g%02d.txt", i), "x\n")))
	}
	seen := map[string]int{}
	for _, r := range runAll(wave) {
		mustQuiet(t, r)
		for _, line := range strings.Split(r.context(t), "\n") {
			if line != "" {
				seen[line]++
			}
		}
	}
	for i := range n {
		id := fmt.Sprintf("toolu_read%02d", i)
		count := 0
		for line, k := range seen {
			if strings.Contains(line, id+" ") {
				count += k
			}
		}
		if count != 1 {
			t.Errorf("%s: corrected %d times, want once; lines %v", id, count, seen)
		}
	}
}

// TestHookStaleSocket: a server that died (killed) leaves its socket; the
// next hook replaces it and the session goes on.
func TestHookStaleSocket(t *testing.T) {
	h := newHookEnv(t)
	f := h.write("a.txt", "one\ntwo\n")
	mustQuiet(t, h.run(h.cat("st", "toolu_1", f)))
	pids := h.servers()
	if len(pids) != 1 {
		t.Fatalf("servers %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Dead once its socket refuses connections (the process may show no
	// command line a moment before its files are closed).
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("unix", h.sock("st"))
		if err == nil {
			c.Close()
		} else if errors.Is(err, syscall.ECONNREFUSED) {
			break
		} else {
			t.Fatalf("the killed server's socket: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed server's socket still accepts")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The state died with the server: a new read is tracked from now on.
	if r := h.run(h.cat("st", "toolu_2", f)); r.code != 0 || r.stderr != "" {
		t.Fatalf("after the kill: %+v\n%s", r, h.log())
	}
	if got := h.servers(); len(got) != 1 || got[0] == pids[0] {
		t.Fatalf("servers after the stale socket: %v (killed %d)", got, pids[0])
	}
	h.write("a.txt", "one\nTWO\n")
	if c := h.run(event("st", "UserPromptSubmit")).context(t); !strings.Contains(c, "toolu_2") || strings.Contains(c, "toolu_1") {
		t.Fatalf("after the restart: %q", c)
	}
}

// TestHookIdle: a session that ends without SessionEnd leaves no server:
// it ends after the idle timeout.
func TestHookIdle(t *testing.T) {
	h := newHookEnv(t, "CONCORD_HOOK_IDLE=400ms")
	mustQuiet(t, h.run(h.cat("idle", "toolu_1", h.write("a.txt", "a\n"))))
	if len(h.servers()) != 1 {
		t.Fatal("no server")
	}
	h.waitNoServer(5 * time.Second)
	if _, err := os.Lstat(h.sock("idle")); err == nil {
		t.Error("socket left after the idle end")
	}
	if !strings.Contains(h.log(), "reason=idle") {
		t.Errorf("log:\n%s", h.log())
	}
}

// TestHookSessionsApart: two sessions at once never see each other's
// state: each has its server, and a change to a file only one read
// corrects that one.
func TestHookSessionsApart(t *testing.T) {
	h := newHookEnv(t)
	a, b := h.write("a.txt", "a1\na2\n"), h.write("b.txt", "b1\nb2\n")
	mustQuiet(t, h.run(h.cat("one", "toolu_a", a)))
	mustQuiet(t, h.run(h.cat("two", "toolu_b", b)))
	if n := len(h.servers()); n != 2 {
		t.Fatalf("%d servers, want 2", n)
	}
	h.write("a.txt", "a1\nA2\n")
	if c := h.run(event("two", "UserPromptSubmit")).context(t); c != "" {
		t.Fatalf("session two told about session one's read: %q", c)
	}
	if c := h.run(event("one", "UserPromptSubmit")).context(t); !strings.Contains(c, "toolu_a") {
		t.Fatalf("session one: %q", c)
	}
	mustQuiet(t, h.run(event("one", "SessionEnd")))
	mustQuiet(t, h.run(event("two", "SessionEnd")))
	h.waitNoServer(5 * time.Second)
}

// TestHookReleases: a compaction (PreCompact, SessionStart compact, then
// PostCompact with its summary) replaces the agent's earlier results with
// the summary: none of them is corrected afterwards, the summary is, where
// a line it restates changes, and not where one it never mentions does. A
// subagent's end drops its own reads; the others' are still corrected.
func TestHookReleases(t *testing.T) {
	h := newHookEnv(t)
	main1, sub1 := h.write("main.txt", "name: demo\nretries: 3\n"), h.write("sub.txt", "s1\ns2\n")
	mustQuiet(t, h.run(h.cat("rel", "toolu_main", main1)))
	mustQuiet(t, h.run(h.cat("rel", "toolu_sub", sub1, "agent_id", "agent-7", "agent_type", "general-purpose")))
	mustQuiet(t, h.run(h.cat("rel", "toolu_main_sub", sub1)))
	// The subagent ends: its read is released, the main agent's is not.
	mustQuiet(t, h.run(event("rel", "SubagentStop", "agent_id", "agent-7")))
	h.write("sub.txt", "s1\nS2\n")
	if c := h.run(event("rel", "UserPromptSubmit")).context(t); !strings.Contains(c, "toolu_main_sub") || strings.Contains(c, "toolu_sub ") {
		t.Fatalf("after the subagent's end: %q", c)
	}
	// A compaction: the main agent's reads leave its prompt; the summary
	// takes their place.
	mustQuiet(t, h.run(event("rel", "PreCompact", "trigger", "auto")))
	mustQuiet(t, h.run(event("rel", "SessionStart", "source", "compact")))
	mustQuiet(t, h.run(event("rel", "PostCompact", "trigger", "auto",
		"compact_summary", "<summary>main.txt sets retries: 3 for the client.</summary>")))
	// A line the summary never restated: nothing to say.
	h.write("main.txt", "name: prod\nretries: 3\n")
	if c := h.run(event("rel", "UserPromptSubmit")).context(t); c != "" {
		t.Fatalf("a change the summary never restated gave %q", c)
	}
	// The line it restates: the summary is corrected, the reads it
	// replaced are not.
	h.write("main.txt", "name: prod\nretries: 5\n")
	c := h.run(event("rel", "UserPromptSubmit")).context(t)
	if !strings.Contains(c, "The summary in "+hook.CompactedAnchor+" is outdated") || !strings.Contains(c, "retries: 5") || strings.Contains(c, "toolu_main") {
		t.Fatalf("after a restated line changed: %q\n%s", c, h.log())
	}
	if c := h.run(event("rel", "UserPromptSubmit")).context(t); c != "" {
		t.Fatalf("the summary's correction repeated: %q", c)
	}
	// What is read after it is tracked again.
	mustQuiet(t, h.run(h.cat("rel", "toolu_after", main1)))
	h.write("main.txt", "name: prod\nretries: 7\n")
	if c := h.run(event("rel", "UserPromptSubmit")).context(t); !strings.Contains(c, "toolu_after") {
		t.Fatalf("a read after the compaction: %q", c)
	}
	// A cleared context: nothing of it is corrected any more.
	mustQuiet(t, h.run(event("rel", "SessionStart", "source", "clear")))
	h.write("main.txt", "name: prod\nretries: 9\n")
	if c := h.run(event("rel", "UserPromptSubmit")).context(t); c != "" {
		t.Fatalf("after /clear: %q", c)
	}
}

// TestHookRefusals: the socket directory or the socket is not this user's
// own (a symlink, another user's, open to others, not a socket): the hook
// refuses it, starts no server, adds no context, says why on stderr, and
// exits 0.
func TestHookRefusals(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another user needs root") // CI runs as root
	}
	const nobody = 65534
	tests := []struct {
		name  string
		setup func(h *hookEnv)
		want  string
	}{
		{"dir is a symlink", func(h *hookEnv) {
			other := filepath.Join(h.t.TempDir(), "elsewhere")
			mustDo(h.t, os.Mkdir(other, 0o700))
			mustDo(h.t, os.Symlink(other, h.dir()))
		}, "is a symlink"},
		{"dir open to others", func(h *hookEnv) {
			mustDo(h.t, os.Mkdir(h.dir(), 0o700))
			mustDo(h.t, os.Chmod(h.dir(), 0o755))
		}, "not 0700"},
		{"dir of another user", func(h *hookEnv) {
			mustDo(h.t, os.Mkdir(h.dir(), 0o700))
			mustDo(h.t, os.Chown(h.dir(), nobody, nobody))
		}, "belongs to uid 65534"},
		{"socket is a symlink", func(h *hookEnv) {
			mustDo(h.t, os.Mkdir(h.dir(), 0o700))
			ln, err := net.Listen("unix", filepath.Join(h.t.TempDir(), "s"))
			mustDo(h.t, err)
			h.t.Cleanup(func() { ln.Close() })
			mustDo(h.t, os.Symlink(ln.Addr().String(), h.sock("ref")))
		}, "is a symlink"},
		{"socket of another user", func(h *hookEnv) {
			mustDo(h.t, os.Mkdir(h.dir(), 0o700))
			ln, err := net.Listen("unix", h.sock("ref"))
			mustDo(h.t, err)
			h.t.Cleanup(func() { ln.Close() })
			mustDo(h.t, os.Chown(h.sock("ref"), nobody, nobody))
		}, "belongs to uid 65534"},
		{"socket is a file", func(h *hookEnv) {
			mustDo(h.t, os.Mkdir(h.dir(), 0o700))
			mustDo(h.t, os.WriteFile(h.sock("ref"), nil, 0o600))
		}, "is not a socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHookEnv(t)
			tt.setup(h)
			r := h.run(h.cat("ref", "toolu_1", h.write("a.txt", "a\n")))
			if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("status %d, stdout %q, stderr %q: want status 0, no output, one line saying %q", r.code, r.stdout, r.stderr, tt.want)
			}
			if s := h.servers(); len(s) != 0 {
				t.Fatalf("a server started: %v", s)
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHookHungServer: a server that accepts and never answers costs the
// agent the hook's timeout, no more, and the hook exits 0 with nothing.
func TestHookHungServer(t *testing.T) {
	h := newHookEnv(t, "CONCORD_HOOK_TIMEOUT=700ms")
	mustDo(t, os.Mkdir(h.dir(), 0o700))
	ln, err := net.Listen("unix", h.sock("hung"))
	mustDo(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	r := h.run(h.cat("hung", "toolu_1", h.write("a.txt", "a\n")))
	if r.code != 0 || r.stdout != "" || r.stderr == "" {
		t.Fatalf("status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r.took > 3*time.Second {
		t.Fatalf("the hook took %v with a 700ms timeout", r.took)
	}
	if !strings.Contains(h.log(), "hook failed") {
		t.Errorf("the failure is not logged:\n%s", h.log())
	}
}

// TestHookSocketRequests: what the session's socket answers a connection
// that is not a well-formed hook (a hook of another version, a damaged
// one, a client of the protocol): an error naming what is wrong for a bad
// hook request, and the protocol (initialize first) for anything else, on
// the same session. A refused hook leaves the session as it was.
func TestHookSocketRequests(t *testing.T) {
	h := newHookEnv(t)
	f := h.write("a.txt", "alpha\nbeta\n")
	mustQuiet(t, h.run(h.cat("sock", "toolu_1", f)))
	init := `{"protocolVersion":1,"roots":["/"],"placement":"tail"}`
	ev := `{"session_id":"sock","hook_event_name":"UserPromptSubmit"}`
	hookReq := func(runtime, init, event string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"hook","params":{"runtime":"` + runtime + `","initialize":` + init + `,"event":` + event + "}}\n"
	}
	for _, tc := range []struct {
		name, send string
		want       []string // in the answer's lines, in order
	}{
		{"hook", hookReq("claude-code", init, ev), []string{`"id":7`, `"result":{"output":""}`}},
		{"unknown runtime", hookReq("vim", init, ev), []string{`"code":-32602`, `unknown runtime \"vim\"`}},
		{"no initialize", `{"jsonrpc":"2.0","id":7,"method":"hook","params":{"runtime":"claude-code","event":` + ev + "}}\n", []string{`"code":-32602`, "initialize: required"}},
		{"another version", hookReq("claude-code", `{"protocolVersion":9,"roots":["/"]}`, ev), []string{`"code":-32602`, "speaks 1, not 9"}},
		{"event without a session", hookReq("claude-code", init, `{"hook_event_name":"UserPromptSubmit"}`), []string{`"code":-32602`, "no session_id"}},
		{"event not an object", hookReq("claude-code", init, `[1]`), []string{`"code":-32602`, "claude-code hook input"}},
		{"the protocol", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + init + "}\n" + `{"jsonrpc":"2.0","id":2,"method":"stats"}` + "\n",
			[]string{`"id":1`, `"protocolVersion":1`, `"id":2`, `"blocks":{"valid":1}`}},
		{"not JSON", "garbage\n", []string{`"code":-32700`}},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":7,"method":"hook","params":{"runtime":"claude-code","initialize":"yes","event":` + ev + "}}\n", []string{`"code":-32602`, "initialize", `"id":7`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("unix", h.sock("sock"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte(tc.send)); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			var got string
			for _, w := range tc.want {
				for !strings.Contains(got, w) {
					line, err := r.ReadString('\n')
					if err != nil {
						t.Fatalf("answer %q: want %q next (%v)", got, w, err)
					}
					got += line
				}
				got = got[strings.Index(got, w)+len(w):]
			}
		})
	}
	// The session is whole: the read is still tracked and corrected.
	h.write("a.txt", "alpha\nBETA\n")
	if c := h.run(event("sock", "UserPromptSubmit", "prompt", "go")).context(t); !strings.Contains(c, "BETA") {
		t.Fatalf("after the refusals, the erratum is %q", c)
	}
	mustQuiet(t, h.run(event("sock", "SessionEnd")))
}
