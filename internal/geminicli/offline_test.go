package geminicli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fake "github.com/concord-ctx/concord/internal/fakemodel/gemini"
	"github.com/concord-ctx/concord/internal/geminicli"
)

// TestOfflineAfterToolContext drives the real Gemini CLI offline against the fake: the model
// asks for read_file, a file changes between two model calls, and an AfterTool hook configured
// in settings.json as a user would answers with additionalContext. The facts the Gemini binding
// stands on: the next request carries the tool's output, then the hook's text as
// "\n\n<hook_context>TEXT</hook_context>" inside the same functionResponse; the model sees the
// file's old text until told; and the hook receives the tool's llmContent.
func TestOfflineAfterToolContext(t *testing.T) {
	if _, err := geminicli.Script(); err != nil {
		t.Fatal(err) // make -C bindings/gemini deps (the top Makefile's go-test runs it)
	}
	ws, err := geminicli.NewWorkspace(t.TempDir(), map[string]string{"config.yaml": "name: demo\nport: 8080\n"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws.Proj, "config.yaml")
	seen := filepath.Join(ws.Root, "after-tool.json")
	hook := filepath.Join(ws.Root, "hook.sh")
	script := fmt.Sprintf("#!/bin/sh\ncat > %s\nprintf '%%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"AfterTool\",\"additionalContext\":\"the file changed\"}}'\n", seen)
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var model *fake.Server
	model = fake.New(
		func(*fake.Request) fake.Reply {
			return fake.Call(fake.Fn("read_file", map[string]any{"file_path": file}))
		},
		func(r *fake.Request) fake.Reply {
			got, _ := r.ToolResult(1)
			model.Expect(got == "name: demo\nport: 8080\n\n\n<hook_context>the file changed</hook_context>", "read_file's result and the hook's context: %q", got)
			if err := os.WriteFile(file, []byte("name: demo\nport: 9090\n"), 0o644); err != nil {
				model.Expect(false, "write: %v", err)
			}
			return fake.Call(fake.Fn("run_shell_command", map[string]any{"command": "echo step"}))
		},
		func(r *fake.Request) fake.Reply {
			got, _ := r.ToolResult(1)
			model.Expect(strings.Contains(got, "port: 8080") && !strings.Contains(r.Text(), "port: 9090"), "the stale read is what the model still has: %q", got)
			return fake.Say("done")
		},
	)
	url, err := model.Start()
	if err != nil {
		t.Fatal(err)
	}
	hooks := map[string]any{"AfterTool": []any{map[string]any{"matcher": "read_file", "hooks": []any{map[string]any{"type": "command", "command": hook}}}}}
	res, err := ws.Run(context.Background(), geminicli.Run{BaseURL: url, Prompt: "read the config", Settings: geminicli.Settings(map[string]any{"hooks": hooks})})
	_ = model.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatalf("gemini: %v\n%s", res.Err, tail(res.Stderr))
	}
	if f := model.Failures(); len(f) > 0 {
		t.Fatalf("fake model: %v", f)
	}
	if n := len(model.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	in, err := os.ReadFile(seen)
	if err != nil || !strings.Contains(string(in), `"llmContent":"name: demo\nport: 8080\n"`) || !strings.Contains(string(in), `"hook_event_name":"AfterTool"`) {
		t.Errorf("AfterTool input: %s (%v)", in, err)
	}
	t.Logf("gemini-cli %s: %d model calls in %s", geminicli.Version(), len(model.Requests()), res.Elapsed)
}
