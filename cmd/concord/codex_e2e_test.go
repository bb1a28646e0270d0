package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/codexrun"
	"github.com/concord-ctx/concord/internal/fakemodel/responses"
)

// codexFiles is the project of the end-to-end runs.
var codexFiles = map[string]string{
	"a.txt":     "one\ntwo\nthree\nfour\nfive\nsix\n",
	"b.txt":     "alpha\nbeta\ngamma\n",
	"n.txt":     "red\ngreen\nblue\n",
	"src/c.go":  "package c\n\nconst port = 8080\n\nfunc p() int { return port }\n",
	"p.txt":     "keep\nold line\nkeep too\n",
	"d.txt":     "before deletion\n",
	"other.txt": "untouched\n",
}

// codexScript: reads with sed -n, cat, nl -ba and rg -n, each followed by
// an outside change of its file before the next model call; the agent's
// own apply_patch of a file it read; a deletion and a re-creation. Each
// change should be corrected in the next request, attached to the next
// call's output.
func codexScript(dir string) []responses.Step {
	p := func(n string) string { return filepath.Join(dir, n) }
	edit := func(n, old, nw string) func(responses.Request) error {
		return func(responses.Request) error {
			data, err := os.ReadFile(p(n))
			if err != nil {
				return err
			}
			if !strings.Contains(string(data), old) {
				return fmt.Errorf("%s: no %q", n, old)
			}
			return os.WriteFile(p(n), []byte(strings.Replace(string(data), old, nw, 1)), 0o644)
		}
	}
	exec := func(cmd string) []responses.Item { return []responses.Item{responses.Exec(cmd, "")} }
	return []responses.Step{
		{Items: exec("sed -n '1,4p' a.txt")},                                          // call_1
		{Before: edit("a.txt", "three", "THREE (outside)"), Items: exec("cat b.txt")}, // call_2
		{Before: edit("b.txt", "beta", "BETA (outside)"), Items: exec("nl -ba n.txt")},
		{Before: edit("n.txt", "green", "GREEN (outside)"), Items: exec("rg -n port src/c.go")},
		{Before: edit("src/c.go", "const port = 8080", "const port = 9090 // outside"), Items: exec("cat p.txt")},
		{Items: []responses.Item{responses.Patch("*** Begin Patch\n*** Update File: p.txt\n@@\n keep\n-old line\n+NEW LINE (own patch)\n keep too\n*** End Patch\n")}},
		{Items: exec("cat d.txt")},
		{Before: func(responses.Request) error { return os.Remove(p("d.txt")) }, Items: exec("cat other.txt")},
		{Before: func(responses.Request) error { return os.WriteFile(p("d.txt"), []byte("after re-creation\n"), 0o644) },
			Items: exec("echo checked")},
		{Items: []responses.Item{responses.Text("Done.")}},
	}
}

// codexRun runs codex exec on the script in a fresh project and CODEX_HOME;
// with concord, the hooks `concord install codex` writes are in its config.
func codexRun(t *testing.T, concord bool) (*responses.Server, string) {
	t.Helper()
	bin, err := codexrun.Bin()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj, run := filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "run")
	for _, d := range []string{home, proj, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := codexrun.WriteWorkspace(proj, codexFiles); err != nil {
		t.Fatal(err)
	}
	fake, err := responses.Start(codexScript(proj))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(codexrun.Config(fake.URL, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	if concord {
		// As a user would: one command, which also trusts the hooks in Codex.
		out, stderr, code := runBinEnv(t, []string{"CODEX_HOME=" + home}, "install", "codex", "--codex", bin)
		if code != 0 || !strings.Contains(out, "Trusted in Codex") {
			t.Fatalf("concord install codex: status %d: %s%s", code, out, stderr)
		}
		t.Logf("concord install codex: %s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, stderr, err := codexrun.Run{Bin: bin, Home: home, Dir: proj, Prompt: "Check the files.", Args: args,
		Env: []string{"XDG_RUNTIME_DIR=" + run}}.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Err(); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr)
	}
	if got := strings.TrimSpace(out); got != "Done." {
		t.Fatalf("last message %q\nstderr:\n%s", got, stderr)
	}
	if concord {
		// The hooks ran a server in this directory, and the session's end
		// (SessionEnd) stopped it: no socket is left.
		if _, err := os.Stat(filepath.Join(run, "concord", "concord.log")); err != nil {
			t.Fatalf("no hook ran a server: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			socks, _ := filepath.Glob(filepath.Join(run, "concord", "*.sock"))
			if len(socks) == 0 {
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(run, "concord", "concord.log"))
				t.Fatalf("sockets left after the session: %v\n%s", socks, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return fake, proj
}

// contexts maps each call id of the last request to the developer text
// Codex put just before its output (what the PostToolUse hook added).
func contexts(t *testing.T, r responses.Request) (map[string]string, string) {
	t.Helper()
	got := map[string]string{}
	var all strings.Builder
	pending := ""
	for _, raw := range r.Input() {
		var it struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			CallID  string `json:"call_id"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		switch {
		case it.Type == "message" && it.Role == "developer":
			for _, c := range it.Content {
				pending += c.Text
			}
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			if pending != "" {
				got[it.CallID] = pending
				all.WriteString(pending)
			}
			pending = ""
		case it.Type == "message":
			pending = ""
		}
	}
	return got, all.String()
}

// TestCodexEndToEnd drives the real Codex CLI (pinned) with Concord's hooks
// installed against the fake Responses API: after each outside change, the
// agent's own patch, a deletion and a re-creation, the next request carries
// a true erratum about the read it corrects, once; a control run without
// Concord carries none and keeps the stale text.
func TestCodexEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Codex CLI")
	}
	fake, _ := codexRun(t, true)
	reqs := fake.Requests()
	got, all := contexts(t, reqs[len(reqs)-1])
	for id, c := range got {
		t.Logf("context before %s's output:\n%s", id, c)
	}
	// The erratum for a change made before call N+1 comes with call N+1's
	// output: it names the read it corrects and its file, and says what
	// changed (the new lines, or where to re-read, or that the agent's own
	// patch changed it, or that the file is gone).
	want := []struct {
		at       string // the call whose output it precedes
		mentions []string
	}{
		{"call_2", []string{"call_1", "/a.txt", "changed since that read", "lines 1-4"}}, // sed -n
		{"call_3", []string{"call_2", "/b.txt", "+2: BETA (outside)"}},                   // cat
		{"call_4", []string{"call_3", "/n.txt", "+2: GREEN (outside)"}},                  // nl -ba
		{"call_5", []string{"call_4", "/src/c.go", "changed since that read", "line 3"}}, // rg -n
		{"call_6", []string{"call_5", "/p.txt", "your edit in call_6"}},                  // its own apply_patch
		{"call_8", []string{"call_7", "/d.txt", "was deleted"}},                          // deleted
		{"call_9", []string{"call_7", "/d.txt", "+1: after re-creation"}},                // re-created
	}
	for _, w := range want {
		c := got[w.at]
		for _, m := range w.mentions {
			if !strings.Contains(c, m) {
				t.Errorf("context before %s's output %q: want %q", w.at, c, m)
			}
		}
		delete(got, w.at)
	}
	for id, c := range got {
		t.Errorf("unexpected context before %s's output: %q", id, c)
	}
	// Once each: every erratum's news appears in exactly one context.
	for _, s := range []string{"lines 1-4 before", "BETA (outside)", "GREEN (outside)", "line 3 before", "your edit in call_6",
		"was deleted", "after re-creation"} {
		if n := strings.Count(all, s); n != 1 {
			t.Errorf("%q in %d errata, want 1", s, n)
		}
	}
	// No false correction: nothing about the file that never changed.
	if strings.Contains(all, "other.txt") {
		t.Errorf("an erratum names other.txt: %q", all)
	}

	control, _ := codexRun(t, false)
	creqs := control.Requests()
	cgot, _ := contexts(t, creqs[len(creqs)-1])
	if len(cgot) != 0 {
		t.Errorf("the control run got context: %v", cgot)
	}
	last := string(creqs[len(creqs)-1].Body)
	for _, stale := range []string{"two\\nthree\\nfour", "alpha\\nbeta\\ngamma", "2\\tgreen", "const port = 8080", "before deletion"} {
		if !strings.Contains(last, stale) {
			t.Errorf("the control's last request lacks the stale %q", stale)
		}
	}
	for _, fresh := range []string{"THREE (outside)", "BETA (outside)", "GREEN (outside)", "9090", "after re-creation"} {
		if strings.Contains(last, fresh) {
			t.Errorf("the control's last request shows %q", fresh)
		}
	}
}

// runBinEnv runs the real binary with more environment.
func runBinEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := osexec.Command(concordBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}
