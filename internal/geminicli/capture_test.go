package geminicli_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	fake "github.com/concord-ctx/concord/internal/fakemodel/gemini"
	"github.com/concord-ctx/concord/internal/geminicli"
)

var capture = flag.Bool("capture", false, "run the real Gemini CLI and rewrite testdata/gemini/ from what it does")

// Project files of the capture run; the README of testdata/gemini names them.
var captureFiles = map[string]string{
	"config.yaml":          "name: demo\nport: 8080\ndebug: false\nlevel: info\nmode: fast\nuser: admin\nretries: 3\ntimeout: 30\nregion: eu\nowner: ops\ncache: on\ncolor: blue\n",
	"src/server.ts":        "export const port = 8080\nexport function listen() {\n  return port\n}\n",
	"src/util/strings.ts":  "// port helpers\nexport const portName = 'http'\n",
	"docs/guide.md":        "# Guide\nSet the port in config.yaml.\n",
	"notes.txt":            "first\nsecond\nthird\n",
	"big.txt":              bigFile(2500),
	".gitignore":           "ignored.log\n",
	"ignored.log":          "port: 1\n",
	"src/util/empty.txt":   "",
	"src/util/no-eol.txt":  "one\ntwo",
	"src/util/crlf.txt":    "alpha\r\nbeta\r\n",
	"src/util/unicode.txt": "naïve café\n日本語 port\n",
}

func bigFile(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of the big file\n", i)
	}
	return b.String()
}

// captureCall is one scripted function call, the name its captured files get, and what it
// shows (the recognizer corpus's label, testdata/recognize/README.md; "" derives it from name).
type captureCall struct {
	name  string
	fn    fake.FunctionCall
	shows string
}

// shows labels a call for the recognizer corpus's tracked shares.
func (c captureCall) label() string {
	switch {
	case c.shows != "":
		return c.shows
	case strings.HasSuffix(c.name, "-missing"), strings.HasSuffix(c.name, "-past-end"), strings.HasSuffix(c.name, "-fail"),
		strings.HasSuffix(c.name, "-no-match"), strings.HasSuffix(c.name, "-none") && !strings.HasPrefix(c.name, "glob"),
		c.name == "read_many_files", c.name == "web_fetch":
		return "none"
	case strings.HasSuffix(c.name, "-names-only"):
		return "grep-names"
	case strings.Contains(c.name, "grep"), strings.Contains(c.name, "search"):
		return "grep-numbered"
	case strings.Contains(c.name, "glob"), strings.HasPrefix(c.name, "list_directory"):
		return "listing"
	case strings.Contains(c.name, "replace"), strings.Contains(c.name, "write_file"):
		return "write"
	}
	return "file-read"
}

func captureCalls(proj string) [][]captureCall {
	p := func(rel string) string { return filepath.Join(proj, rel) }
	one := func(name, tool string, args map[string]any) []captureCall {
		return []captureCall{{name: name, fn: fake.Fn(tool, args)}}
	}
	return [][]captureCall{
		one("read_file-whole", "read_file", map[string]any{"file_path": p("config.yaml")}),
		one("read_file-range", "read_file", map[string]any{"file_path": p("config.yaml"), "start_line": 3, "end_line": 5}),
		one("read_file-relative", "read_file", map[string]any{"file_path": "notes.txt"}),
		one("read_file-start-only", "read_file", map[string]any{"file_path": p("notes.txt"), "start_line": 2}),
		one("read_file-big", "read_file", map[string]any{"file_path": p("big.txt")}),
		one("read_file-big-range", "read_file", map[string]any{"file_path": p("big.txt"), "start_line": 100, "end_line": 104}),
		one("read_file-past-end", "read_file", map[string]any{"file_path": p("notes.txt"), "start_line": 10, "end_line": 12}),
		one("read_file-missing", "read_file", map[string]any{"file_path": p("missing.txt")}),
		one("read_file-empty", "read_file", map[string]any{"file_path": p("src/util/empty.txt")}),
		one("read_file-no-eol", "read_file", map[string]any{"file_path": p("src/util/no-eol.txt")}),
		one("read_file-crlf", "read_file", map[string]any{"file_path": p("src/util/crlf.txt")}),
		one("read_file-unicode", "read_file", map[string]any{"file_path": p("src/util/unicode.txt")}),
		one("read_file-offset-limit", "read_file", map[string]any{"file_path": p("config.yaml"), "offset": 2, "limit": 3}),
		one("read_many_files", "read_many_files", map[string]any{"include": []any{"src/**/*.ts"}}),
		one("search_file_content", "search_file_content", map[string]any{"pattern": "port"}),
		one("grep_search", "grep_search", map[string]any{"pattern": "port"}),
		one("grep_search-dir-include", "grep_search", map[string]any{"pattern": "port", "dir_path": p("src"), "include_pattern": "*.ts"}),
		one("grep_search-names-only", "grep_search", map[string]any{"pattern": "port", "names_only": true}),
		one("grep_search-none", "grep_search", map[string]any{"pattern": "no-such-text-anywhere"}),
		// Few hits: the tool adds context rows ("L<n>- text") around them.
		one("grep_search-few", "grep_search", map[string]any{"pattern": "level", "dir_path": p("src/..")}),
		one("glob", "glob", map[string]any{"pattern": "**/*.ts"}),
		one("glob-none", "glob", map[string]any{"pattern": "**/*.rs"}),
		one("list_directory", "list_directory", map[string]any{"dir_path": proj}),
		one("list_directory-sub", "list_directory", map[string]any{"dir_path": p("src")}),
		one("run_shell_command-cat-n", "run_shell_command", map[string]any{"command": "cat -n config.yaml", "description": "show"}),
		one("run_shell_command-sed-n", "run_shell_command", map[string]any{"command": "sed -n '2,4p' config.yaml", "description": "show"}),
		one("run_shell_command-grep-n", "run_shell_command", map[string]any{"command": "grep -n port config.yaml src/server.ts", "description": "search"}),
		one("run_shell_command-fail", "run_shell_command", map[string]any{"command": "cat missing.txt", "description": "fail"}),
		one("run_shell_command-dir", "run_shell_command", map[string]any{"command": "cat -n server.ts", "description": "in a dir", "dir_path": "src"}),
		one("replace", "replace", map[string]any{"file_path": p("notes.txt"), "instruction": "rename", "old_string": "second", "new_string": "SECOND"}),
		one("replace-no-match", "replace", map[string]any{"file_path": p("notes.txt"), "instruction": "rename", "old_string": "absent", "new_string": "x"}),
		one("write_file-new", "write_file", map[string]any{"file_path": p("out/new.txt"), "content": "fresh\nfile\n"}),
		one("write_file-over", "write_file", map[string]any{"file_path": p("notes.txt"), "content": "one\ntwo\n"}),
		one("web_fetch", "web_fetch", map[string]any{"prompt": "Summarize http://127.0.0.1:9/page"}),
		// Two calls in one turn: how parallel results are laid out.
		{{name: "parallel-read_file", fn: fake.Fn("read_file", map[string]any{"file_path": p("src/server.ts")})},
			{name: "parallel-glob", fn: fake.Fn("glob", map[string]any{"pattern": "docs/*.md"})}},
	}
}

// hookScript dumps each hook's stdin to DIR/<nanoseconds>.<pid>-EVENT.json (hooks of parallel
// tool calls run at once: the name must not depend on what is already there) and answers
// AfterTool with a probe additionalContext, to capture where Gemini CLI puts it.
const hookScript = `#!/bin/sh
dir="$1"; event="$2"
cat > "$dir/$(date +%s%N).$$-$event.json"
if [ "$event" = AfterTool ]; then
  printf '%s' '{"hookSpecificOutput":{"hookEventName":"AfterTool","additionalContext":"CONCORD-PROBE additional context"}}'
else
  printf '{}'
fi
`

var hookEvents = []string{"SessionStart", "BeforeAgent", "BeforeModel", "AfterModel", "BeforeToolSelection", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd", "Notification"}

// TestCapture regenerates testdata/gemini/ from the real Gemini CLI (go test -run TestCapture
// -capture ./internal/geminicli). Without -capture it is skipped: the files are the record.
func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to regenerate testdata/gemini from the real Gemini CLI")
	}
	if _, err := geminicli.Script(); err != nil {
		t.Fatal(err)
	}
	root, err := geminicli.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A fixed path, so every absolute path in the captures is the same on each regeneration.
	base := filepath.Join(os.TempDir(), "concord-gemini-capture")
	_ = os.RemoveAll(base)
	ws, err := geminicli.NewWorkspace(base, captureFiles)
	if err != nil {
		t.Fatal(err)
	}
	hookDir := filepath.Join(ws.Root, "hooks")
	if err := os.MkdirAll(hookDir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(ws.Root, "dump-hook.sh")
	if err := os.WriteFile(script, []byte(hookScript), 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := map[string]any{}
	for _, ev := range hookEvents {
		def := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": fmt.Sprintf("%s %s %s", script, hookDir, ev)}}}
		if ev == "BeforeTool" || ev == "AfterTool" {
			def["matcher"] = ".*"
		}
		hooks[ev] = []any{def}
	}

	turns := captureCalls(ws.Proj)
	var steps []fake.Step
	for _, turn := range turns {
		calls := make([]fake.FunctionCall, len(turn))
		for i, c := range turn {
			calls[i] = c.fn
		}
		steps = append(steps, func(*fake.Request) fake.Reply { return fake.Call(calls...) })
	}
	model := fake.New(steps...)
	model.Final = fake.Say("All done.")
	url, err := model.Start()
	if err != nil {
		t.Fatal(err)
	}
	res, err := ws.Run(context.Background(), geminicli.Run{
		BaseURL:  url,
		Prompt:   "Look around the project.",
		Settings: geminicli.Settings(map[string]any{"hooks": hooks}),
	})
	_ = model.Close()
	if err != nil {
		t.Fatal(err)
	}
	if dump, err := model.Dump(); err == nil {
		_ = os.WriteFile(filepath.Join(ws.Root, "model-requests.json"), dump, 0o644)
	}
	if res.Err != nil {
		t.Fatalf("gemini: %v\n%s", res.Err, tail(res.Stderr))
	}
	if f := model.Failures(); len(f) > 0 {
		t.Fatalf("fake model: %v", f)
	}
	reqs := model.Requests()
	if len(reqs) != len(turns)+1 {
		t.Fatalf("model calls: got %d, want %d (logs: %s)\n%s", len(reqs), len(turns)+1, ws.Root, tail(res.Stderr))
	}

	out := filepath.Join(root, "testdata", "gemini")
	for _, sub := range []string{"tools", "hooks", "chats"} {
		_ = os.RemoveAll(filepath.Join(out, sub))
		if err := os.MkdirAll(filepath.Join(out, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// What the model received per tool: the functionResponse parts of the last request, in call order.
	last := reqs[len(reqs)-1]
	n := 0
	for _, turn := range turns {
		for _, c := range turn {
			n++
			var parts []fake.Part
			for _, content := range last.Body.Contents {
				for i, p := range content.Parts {
					if p.FunctionResponse != nil && p.FunctionResponse.ID == fmt.Sprintf("call_%d", n) {
						parts = append(parts, content.Parts[i:]...)
						parts = cutAtNextResponse(parts)
					}
				}
			}
			if len(parts) == 0 {
				t.Errorf("%s: no functionResponse for call_%d", c.name, n)
			}
			writeJSON(t, filepath.Join(out, "tools", fmt.Sprintf("%02d-%s.json", n, c.name)), map[string]any{
				"call":  c.fn,
				"parts": parts,
			})
		}
	}
	writeJSON(t, filepath.Join(out, "last-request.json"), json.RawMessage(last.Raw))

	// Hook inputs, in the order they ran.
	entries, err := os.ReadDir(hookDir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	// The model events carry the whole request each time: keep their first two.
	kept := map[string]int{}
	for i, name := range names {
		ev := strings.TrimSuffix(name[strings.IndexByte(name, '-')+1:], ".json")
		if kept[ev]++; kept[ev] > 2 && (ev == "BeforeModel" || ev == "AfterModel" || ev == "BeforeToolSelection" || ev == "PreCompress") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(hookDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("hook input %s is not JSON: %v", name, err)
			continue
		}
		writeJSON(t, filepath.Join(out, "hooks", fmt.Sprintf("%04d-%s.json", i, ev)), v)
	}

	writeCorpus(t, filepath.Join(root, "testdata", "recognize", "geminicli-capture.corpus.json"), ws, turns, hookDir, names)

	// The saved chat(s).
	chats, err := ws.Chats()
	if err != nil || len(chats) == 0 {
		t.Fatalf("no saved chat under %s: %v", ws.Home, err)
	}
	for _, c := range chats {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "chats", "capture.jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("gemini-cli %s: %d model calls, %d hook inputs, %d chat file(s), %s", geminicli.Version(), len(reqs), len(names), len(chats), res.Elapsed)
}

// cutAtNextResponse keeps parts up to (not including) the second functionResponse.
func cutAtNextResponse(parts []fake.Part) []fake.Part {
	for i := 1; i < len(parts); i++ {
		if parts[i].FunctionResponse != nil {
			return parts[:i]
		}
	}
	return parts
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

// writeCorpus turns the AfterTool inputs into the recognizer's corpus: each call as the hook saw
// it (tool_input, tool_response.llmContent, error, cwd), in the project as it was before any
// write (every read of the capture comes before the writes), the project's path as {WS}.
func writeCorpus(t *testing.T, file string, ws *geminicli.Workspace, turns [][]captureCall, hookDir string, names []string) {
	t.Helper()
	type callJSON struct {
		Runtime string          `json:"runtime"`
		Tool    string          `json:"tool"`
		Args    json.RawMessage `json:"arguments"`
		Output  string          `json:"output"`
		Cwd     string          `json:"cwd"`
		Error   bool            `json:"error,omitempty"`
	}
	type caseJSON struct {
		Name  string   `json:"name"`
		Shows string   `json:"shows"`
		Call  callJSON `json:"call"`
	}
	byInput := map[string]captureCall{}
	for _, turn := range turns {
		for _, c := range turn {
			b, _ := json.Marshal(map[string]any{"tool": c.fn.Name, "args": c.fn.Args})
			byInput[string(b)] = c
		}
	}
	var cases []caseJSON
	for _, name := range names {
		if !strings.HasSuffix(name, "-AfterTool.json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(hookDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var in struct {
			Cwd      string         `json:"cwd"`
			Tool     string         `json:"tool_name"`
			Input    map[string]any `json:"tool_input"`
			Response struct {
				LLMContent any `json:"llmContent"`
				Error      any `json:"error"`
			} `json:"tool_response"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		key, _ := json.Marshal(map[string]any{"tool": in.Tool, "args": in.Input})
		c, ok := byInput[string(key)]
		if !ok {
			t.Fatalf("%s: no scripted call with these arguments: %s", name, key)
		}
		out, _ := in.Response.LLMContent.(string)
		args, _ := json.Marshal(in.Input)
		cases = append(cases, caseJSON{Name: c.name, Shows: c.label(), Call: callJSON{
			Runtime: "gemini-cli", Tool: in.Tool, Args: args, Output: out, Cwd: in.Cwd, Error: in.Response.Error != nil,
		}})
	}
	corpus := map[string]any{
		"source":    "testdata/gemini (@google/gemini-cli 0.61.0, captured by internal/geminicli TestCapture -capture)",
		"license":   "Apache-2.0 (this repository)",
		"note":      "the AfterTool hook inputs of the capture run; the workspace is the project before its writes",
		"workspace": captureFiles,
		"cases":     cases,
	}
	b, err := json.MarshalIndent(corpus, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), ws.Proj, "{WS}"))
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
