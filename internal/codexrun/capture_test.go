package codexrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/fakemodel/responses"
)

var capture = flag.Bool("capture", false, "run the real Codex CLI and rewrite testdata/codex from what it does")

// captureDir is where the captures are kept (the repository's testdata/codex).
func captureDir(t *testing.T) string {
	d, err := filepath.Abs(filepath.Join("..", "..", "testdata", "codex"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Workspace is the project every capture session starts from.
var Workspace = map[string]string{
	"a.txt":       numbered("line", 30),
	"src/main.go": "package main\n\nimport \"fmt\"\n\nconst port = 8080\n\nfunc main() {\n\tfmt.Println(\"listening on\", port)\n}\n",
	"src/util.go": "package main\n\n// portName names the port.\nconst portName = \"http\"\n",
	"sub/b.txt":   "alpha\nbeta\ngamma\n",
	"p-upd.txt":   "keep\nold line\nkeep too\n",
	"p-del.txt":   "to be deleted\n",
	"p-old.txt":   "moved\nold name\n",
	"multi.txt":   "first\n",
}

func numbered(word string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s %d\n", word, i)
	}
	return b.String()
}

// session is one scripted codex exec run to capture.
type session struct {
	name   string
	note   string
	args   []string // more codex flags
	hook   string   // what the PostToolUse hook prints (its answer); "" prints nothing
	script []responses.Step
	// scripted, when set, makes the script for the project at proj (steps
	// that change its files between model calls).
	scripted func(proj string) []responses.Step
}

func exec1(cmd string) responses.Step {
	return responses.Step{Items: []responses.Item{responses.Exec(cmd, "")}}
}

func call(name string, args map[string]any) responses.Step {
	return responses.Step{Items: []responses.Item{responses.Call(name, args)}}
}

func patch(p string) responses.Step {
	return responses.Step{Items: []responses.Item{responses.Patch(p)}}
}

var sessionIDRE = regexp.MustCompile(`Process running with session ID (\d+)`)

// pollSession writes nothing to the command still running from the
// previous call, waiting for its output.
func pollSession(r responses.Request) ([]responses.Item, error) {
	in := r.Input()
	for i := len(in) - 1; i >= 0; i-- {
		var it struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(in[i], &it) == nil && it.Type == "function_call_output" {
			m := sessionIDRE.FindStringSubmatch(responses.OutputText(it.Output))
			if m == nil {
				return nil, fmt.Errorf("the last output has no running session: %s", it.Output)
			}
			id, _ := strconv.Atoi(m[1])
			return []responses.Item{responses.Call("write_stdin", map[string]any{"session_id": id, "chars": "", "yield_time_ms": 5000})}, nil
		}
	}
	return nil, fmt.Errorf("no function output in the request")
}

// edit replaces old by new in the file at path, as someone outside the agent would.
func edit(path, old, new string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), old) {
		return fmt.Errorf("%s: no %q", path, old)
	}
	return os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644)
}

var sessions = []session{
	{
		name: "stale",
		note: "reads with cat, sed -n, nl -ba and rg -n; then two of the files change outside the agent; one of them is read again",
		scripted: func(proj string) []responses.Step {
			return []responses.Step{
				exec1("cat sub/b.txt"),
				exec1("sed -n '1,5p' a.txt"),
				exec1("nl -ba src/util.go"),
				exec1("rg -n port src/main.go"),
				{Before: func(responses.Request) error {
					return errors.Join(edit(filepath.Join(proj, "sub/b.txt"), "beta", "BETA"),
						edit(filepath.Join(proj, "src/main.go"), "port = 8080", "port = 9090"))
				}, Items: []responses.Item{responses.Exec("ls src", "")}},
				exec1("cat sub/b.txt"),
				{Items: []responses.Item{responses.Text("Read.")}},
			}
		},
	},
	{
		name: "exec",
		note: "exec_command (unified exec, the default) reads, failures, truncation, a running command polled with write_stdin, apply_patch (add, update, delete, move, multi-file, a failure), view_image, a provider web_search_call, two parallel calls",
		script: []responses.Step{
			exec1("sed -n '1,20p' a.txt"),
			exec1("cat src/main.go"),
			exec1("nl -ba sub/b.txt"),
			exec1("rg -n port src"),
			{Items: []responses.Item{responses.Exec("cat b.txt", "sub")}},
			exec1("cat missing.txt"),
			exec1("sed -n '1,3p' a.txt; false"),
			call("exec_command", map[string]any{"cmd": "seq 1 30000", "max_output_tokens": 100}),
			call("exec_command", map[string]any{"cmd": "sleep 2; cat sub/b.txt", "yield_time_ms": 250}),
			{Reply: pollSession},
			exec1("head -n 5 a.txt | grep 'line [2-4]'"),
			exec1("ls src"),
			patch("*** Begin Patch\n*** Add File: p-add.txt\n+added one\n+added two\n*** End Patch\n"),
			patch("*** Begin Patch\n*** Update File: p-upd.txt\n@@\n keep\n-old line\n+new line\n keep too\n*** End Patch\n"),
			patch("*** Begin Patch\n*** Delete File: p-del.txt\n*** End Patch\n"),
			patch("*** Begin Patch\n*** Update File: p-old.txt\n*** Move to: p-new.txt\n@@\n moved\n-old name\n+new name\n*** End Patch\n"),
			patch("*** Begin Patch\n*** Add File: p-multi-add.txt\n+one\n*** Update File: multi.txt\n@@\n-first\n+first, patched\n*** End Patch\n"),
			patch("*** Begin Patch\n*** Update File: no-such-file.txt\n@@\n-x\n+y\n*** End Patch\n"),
			call("view_image", map[string]any{"path": "img.png"}),
			{Items: []responses.Item{responses.RawItem(map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed",
				"action": map[string]any{"type": "search", "query": "codex hooks"}}), responses.Exec("cat a.txt", ""), responses.Exec("cat sub/b.txt", "")}},
			{Items: []responses.Item{responses.Text("Inspected.")}},
		},
	},
	{
		name: "shell",
		note: "calls of the older shell tool, which 0.169.0 no longer offers even with unified exec off (--disable unified_exec): it answers \"unsupported call: shell\"",
		args: []string{"--disable", "unified_exec"},
		script: []responses.Step{
			call("shell", map[string]any{"command": []string{"bash", "-lc", "cat sub/b.txt"}}),
			call("shell", map[string]any{"command": []string{"bash", "-lc", "sed -n '2,3p' b.txt"}, "workdir": "sub"}),
			call("shell", map[string]any{"command": []string{"bash", "-lc", "cat missing.txt"}}),
			{Items: []responses.Item{responses.Text("Inspected.")}},
		},
	},
	{
		name: "context",
		note: "a PostToolUse hook answering additionalContext: where Codex puts it in the next request",
		hook: `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"HOOK CONTEXT"}}`,
		script: []responses.Step{
			exec1("cat sub/b.txt"),
			patch("*** Begin Patch\n*** Update File: p-upd.txt\n@@\n-old line\n+new line\n*** End Patch\n"),
			{Items: []responses.Item{responses.Text("Done.")}},
		},
	},
}

// hookEvents are the events the capture's hooks dump.
var hookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}

func writePNG(path string) error {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// TestCapture runs each session against the real Codex CLI and, with
// -capture, rewrites testdata/codex/<session>/ from it: the hooks' stdin
// (hooks.jsonl, in the order they ran), what the model was sent after the
// prompt (model-input.json, the last request's input items), the tools
// offered (tools.json) and the rollout Codex wrote (rollout.jsonl). Paths
// under the temporary directory are written as {WS} (the project) and
// {HOME} (CODEX_HOME).
func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("regenerates testdata/codex from the real Codex CLI: go test ./internal/codexrun -run TestCapture -capture")
	}
	bin, err := Bin()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		t.Run(s.name, func(t *testing.T) { captureSession(t, bin, s) })
	}
}

func captureSession(t *testing.T, bin string, s session) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj, dump := filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "hooks")
	for _, d := range []string{home, proj, dump} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteWorkspace(proj, Workspace); err != nil {
		t.Fatal(err)
	}
	if err := writePNG(filepath.Join(proj, "img.png")); err != nil {
		t.Fatal(err)
	}
	script := s.script
	if s.scripted != nil {
		script = s.scripted(proj)
	}
	fake, err := responses.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	// Each hook run's stdin in its own file, named by the time it started.
	hooks := HookConfig(hookEvents, func(ev string) string {
		cmd := fmt.Sprintf("cat > %s/$(date +%%s%%N)-$$.json", dump)
		if ev == "PostToolUse" && s.hook != "" {
			cmd += fmt.Sprintf("; printf '%%s' '%s'", s.hook)
		}
		return cmd
	})
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(Config(fake.URL, hooks)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--dangerously-bypass-hook-trust"}, s.args...)
	out, stderr, err := Run{Bin: bin, Home: home, Dir: proj, Prompt: "Inspect the project.", Args: args}.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("last message: %s", out)
	if err := fake.Err(); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr)
	}
	if fake.Answered() != len(script) {
		t.Fatalf("%d of %d steps answered\nstderr:\n%s", fake.Answered(), len(script), stderr)
	}
	sub := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(proj), []byte("{WS}"))
		return bytes.ReplaceAll(b, []byte(home), []byte("{HOME}"))
	}
	dest := filepath.Join(captureDir(t), s.name)
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dest, name), sub(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("workspace.json", indent(t, Workspace))

	// hooks.jsonl
	names, _ := filepath.Glob(filepath.Join(dump, "*.json"))
	sort.Slice(names, func(i, j int) bool { return hookTime(names[i]) < hookTime(names[j]) })
	var hb bytes.Buffer
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, data); err != nil {
			t.Fatalf("%s: hook input not JSON: %v", n, err)
		}
		hb.Write(c.Bytes())
		hb.WriteByte('\n')
	}
	write("hooks.jsonl", hb.Bytes())

	// model-input.json and tools.json, from the last request.
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	var body struct {
		Input []json.RawMessage `json:"input"`
		Tools []map[string]any  `json:"tools"`
	}
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatal(err)
	}
	start := 0
	for i, it := range body.Input {
		if strings.Contains(string(it), `"Inspect the project."`) {
			start = i
		}
	}
	write("model-input.json", indent(t, body.Input[start:]))
	var tools []map[string]any
	for _, tl := range body.Tools {
		tools = append(tools, map[string]any{"type": tl["type"], "name": tl["name"]})
	}
	write("tools.json", indent(t, tools))
	write("requests.txt", []byte(fmt.Sprintf("%d model calls (POST %s), %d hook runs\n", len(reqs), last.Path, len(names))))

	// rollout.jsonl
	rollouts, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts: %v", rollouts)
	}
	data, err := os.ReadFile(rollouts[0])
	if err != nil {
		t.Fatal(err)
	}
	write("rollout.jsonl", data)
	write("rollout-path.txt", []byte(strings.TrimPrefix(rollouts[0], home+"/")+"\n"))
}

func hookTime(name string) int64 {
	base := filepath.Base(name)
	ns, _, _ := strings.Cut(base, "-")
	v, _ := strconv.ParseInt(ns, 10, 64)
	return v
}

func indent(t *testing.T, v any) []byte {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}
