package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/fakemodel/anthropic"
)

// -capture runs the real Claude Code through every scenario and rewrites
// testdata/claudecode (see its README). Without it the test is skipped: the
// recognizer's and the audit's tests read what was captured.
var capture = flag.Bool("capture", false, "capture Claude Code's formats into testdata/claudecode from the real binary")

// captureBase is where the scenarios run: a fixed directory, so the paths
// inside the captured files are the same at each capture.
const captureBase = "/tmp/concord-claudecode"

// scenario is one `claude -p` session scripted through the fake model.
type scenario struct {
	name    string
	session string // --session-id
	files   map[string]string
	script  func(s *sc) []anthropic.Step
	args    []string
	// then runs after the session, e.g. a second `claude -p` on it.
	then func(ctx context.Context, s *sc) error
}

// sc is a scenario's run: where its project and home are.
type sc struct {
	t         *testing.T
	dir, home string
	bin       string
	fake      *anthropic.Server
	hooks     string
}

func (s *sc) p(name string) string { return filepath.Join(s.dir, name) }

// waitHook waits until a hook of event has run.
func (s *sc) waitHook(event string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		hooks, err := Hooks(s.hooks)
		if err != nil {
			return err
		}
		for _, h := range hooks {
			if h["hook_event_name"] == event {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no %s hook within a minute", event)
}

func read(path string, more ...any) anthropic.ToolUse {
	in := map[string]any{"file_path": path}
	for i := 0; i+1 < len(more); i += 2 {
		in[more[i].(string)] = more[i+1]
	}
	return anthropic.ToolUse{Name: "Read", Input: in}
}

func bash(cmd string) anthropic.Step {
	return anthropic.Call("Bash", map[string]any{"command": cmd, "description": "run " + cmd})
}

func lines(n int, f func(int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func pngBytes() string {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.String()
}

const notebook = `{"cells":[{"cell_type":"code","execution_count":1,"id":"c1","metadata":{},"outputs":[{"name":"stdout","output_type":"stream","text":["hi\n"]}],"source":["print('hi')"]},{"cell_type":"markdown","id":"c2","metadata":{},"source":["# Title"]}],"metadata":{},"nbformat":4,"nbformat_minor":5}`

var scenarios = []scenario{
	{
		name: "read", session: "11111111-1111-4111-8111-000000000001",
		files: map[string]string{
			"small.txt": "alpha\nbeta\ngamma\n",
			"lines.txt": lines(120, func(i int) string { return fmt.Sprintf("line %d of lines.txt", i) }),
			"long.txt":  "short\n" + strings.Repeat("x", 2500) + "\nend\n",
			"empty.txt": "",
			"nonl.txt":  "no final newline\nsecond",
			"crlf.txt":  "one\r\ntwo\r\n",
			"tabs.txt":  "\tindented\n  two spaces\n",
			"img.png":   pngBytes(),
			"nb.ipynb":  notebook,
		},
		script: func(s *sc) []anthropic.Step {
			return []anthropic.Step{
				{Tools: []anthropic.ToolUse{read(s.p("small.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("lines.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("lines.txt"), "offset", 95, "limit", 10)}},
				{Tools: []anthropic.ToolUse{read(s.p("long.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("empty.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("nonl.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("crlf.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("tabs.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("img.png"))}},
				{Tools: []anthropic.ToolUse{read(s.p("nb.ipynb"))}},
				{Tools: []anthropic.ToolUse{read(s.p("missing.txt"))}},
				{Tools: []anthropic.ToolUse{read(filepath.Join(captureBase, "outside.txt"))}},
				// Two reads in one message: parallel tool calls.
				{Tools: []anthropic.ToolUse{read(s.p("small.txt"), "offset", 2, "limit", 1), read(s.p("lines.txt"), "offset", 8, "limit", 3)}},
				// The same read again, unchanged; then after an outside change.
				{Tools: []anthropic.ToolUse{read(s.p("small.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("small.txt"))}, Before: func(*anthropic.Request) error {
					return os.WriteFile(s.p("small.txt"), []byte("alpha\nBETA\ngamma\n"), 0o644)
				}},
				anthropic.Say("read done"),
			}
		},
	},
	{
		name: "bash", session: "11111111-1111-4111-8111-000000000002",
		files: map[string]string{
			"lines.txt": lines(12, func(i int) string { return fmt.Sprintf("line %d here", i) }),
			"b.txt":     "one two\nthree\nfour two\n",
			"sub/c.go":  "package c\n\nfunc two() {}\n",
		},
		script: func(s *sc) []anthropic.Step {
			return []anthropic.Step{
				bash("cat -n lines.txt"),
				bash("sed -n '2,5p' lines.txt"),
				bash("grep -n two b.txt"),
				bash("grep -rn two ."),
				bash("grep -n -A1 three b.txt"),
				bash("grep -n -C1 three b.txt"),
				bash("grep -rl two ."),
				bash("grep -c two b.txt"),
				bash("find . -name '*.txt' | sort"),
				bash("ls -la sub"),
				bash("cat " + s.p("b.txt")),
				bash("head -3 lines.txt"),
				bash("cat missing.txt"),
				{Tools: []anthropic.ToolUse{{Name: "Bash", Input: map[string]any{"command": "cd sub && cat c.go", "description": "cd"}}}},
				bash("pwd"),
				anthropic.Say("bash done"),
			}
		},
	},
	{
		name: "edit", session: "11111111-1111-4111-8111-000000000003",
		files: map[string]string{
			"e.txt":    "first line\nsecond line\nthird line\nsecond line\n",
			"w.txt":    "old content\n",
			"nb.ipynb": notebook,
		},
		script: func(s *sc) []anthropic.Step {
			return []anthropic.Step{
				{Tools: []anthropic.ToolUse{read(s.p("e.txt"))}},
				anthropic.Call("Edit", map[string]any{"file_path": s.p("e.txt"), "old_string": "first line", "new_string": "FIRST line"}),
				anthropic.Call("Edit", map[string]any{"file_path": s.p("e.txt"), "old_string": "second line", "new_string": "2nd line", "replace_all": true}),
				anthropic.Call("Edit", map[string]any{"file_path": s.p("e.txt"), "old_string": "not there", "new_string": "x"}),
				anthropic.Call("Write", map[string]any{"file_path": s.p("new.txt"), "content": "brand new\nfile\n"}),
				{Tools: []anthropic.ToolUse{read(s.p("w.txt"))}},
				anthropic.Call("Write", map[string]any{"file_path": s.p("w.txt"), "content": "new content\n"}),
				// Changed outside after the read: Claude Code's own check.
				anthropic.Call("Edit", map[string]any{"file_path": s.p("w.txt"), "old_string": "new content", "new_string": "newer"}),
				{Tools: []anthropic.ToolUse{read(s.p("e.txt"))}, Before: func(*anthropic.Request) error {
					return os.WriteFile(s.p("e.txt"), []byte("changed outside\n"), 0o644)
				}},
				anthropic.Call("MultiEdit", map[string]any{"file_path": s.p("e.txt"), "edits": []any{map[string]any{"old_string": "changed", "new_string": "altered"}}}),
				anthropic.Call("ToolSearch", map[string]any{"query": "select:NotebookEdit", "max_results": 5}),
				{Tools: []anthropic.ToolUse{read(s.p("nb.ipynb"))}},
				anthropic.Call("NotebookEdit", map[string]any{"notebook_path": s.p("nb.ipynb"), "cell_id": "c1", "new_source": "print('bye')"}),
				anthropic.Say("edit done"),
			}
		},
	},
	{
		// Grep, Glob and LS are not in this version's default tools (its
		// Bash shadows grep and find with embedded ugrep and bfs); --tools
		// asks for them by name.
		name: "search", session: "11111111-1111-4111-8111-000000000004",
		args: []string{"--tools", "Read,Grep,Glob,LS,Bash"},
		files: map[string]string{
			"a.txt":    "one two\nthree\nfour two\nfive\nsix\n",
			"sub/b.go": "package b\n\n// two\nfunc f() {}\n",
		},
		script: func(s *sc) []anthropic.Step {
			return []anthropic.Step{
				anthropic.Call("Grep", map[string]any{"pattern": "two", "output_mode": "content", "-n": true}),
				anthropic.Call("Grep", map[string]any{"pattern": "three", "output_mode": "content", "-n": true, "-A": 1, "path": s.p("a.txt")}),
				anthropic.Call("Grep", map[string]any{"pattern": "four", "output_mode": "content", "-n": true, "-C": 1}),
				anthropic.Call("Grep", map[string]any{"pattern": "two", "output_mode": "content"}),
				anthropic.Call("Grep", map[string]any{"pattern": "two"}),
				anthropic.Call("Grep", map[string]any{"pattern": "two", "output_mode": "files_with_matches"}),
				anthropic.Call("Grep", map[string]any{"pattern": "two", "output_mode": "count"}),
				anthropic.Call("Grep", map[string]any{"pattern": "nomatch", "output_mode": "content", "-n": true}),
				anthropic.Call("Glob", map[string]any{"pattern": "**/*.go"}),
				anthropic.Call("Glob", map[string]any{"pattern": "*.txt", "path": s.dir}),
				anthropic.Call("LS", map[string]any{"path": s.dir}),
				anthropic.Say("search done"),
			}
		},
	},
	{
		// The Agent tool runs its subagent in the background: the subagent's
		// steps are its own (Subagent), and the main agent's step after the
		// launch waits for the subagent to stop, so the order is fixed.
		name: "agent", session: "11111111-1111-4111-8111-000000000005",
		files: map[string]string{"s.txt": "sub one\nsub two\n", "m.txt": "main\n"},
		script: func(s *sc) []anthropic.Step {
			sub := func(st anthropic.Step) anthropic.Step { st.Subagent = true; return st }
			return []anthropic.Step{
				{Tools: []anthropic.ToolUse{read(s.p("m.txt"))}},
				anthropic.Call("Agent", map[string]any{"description": "read s", "prompt": "Read s.txt and report", "subagent_type": "general-purpose"}),
				sub(anthropic.Step{Tools: []anthropic.ToolUse{read(s.p("s.txt"))}}),
				sub(bash("cat -n s.txt")),
				sub(anthropic.Say("s.txt says sub one, sub two")),
				{Tools: []anthropic.ToolUse{read(s.p("s.txt"), "offset", 2, "limit", 1)}, Before: func(*anthropic.Request) error {
					return s.waitHook("SubagentStop")
				}},
				anthropic.Call("ToolSearch", map[string]any{"query": "select:WebFetch,WebSearch", "max_results": 5}),
				anthropic.Call("WebFetch", map[string]any{"url": s.fake.URL + "/page", "prompt": "summarize"}),
				anthropic.Call("mcp__none__tool", map[string]any{"x": 1}),
				anthropic.Say("agent done"),
			}
		},
	},
	{
		// A large usage figure on the second turn makes Claude Code compact
		// automatically; the next turn then starts from the summary.
		name: "compact", session: "11111111-1111-4111-8111-000000000006",
		args:  []string{"--autocompact", "100000"},
		files: map[string]string{"k.txt": "keep one\nkeep two\n"},
		script: func(s *sc) []anthropic.Step {
			return []anthropic.Step{
				{Tools: []anthropic.ToolUse{read(s.p("k.txt"))}},
				{Tools: []anthropic.ToolUse{read(s.p("k.txt"), "offset", 2, "limit", 1)}, InputTokens: 190000},
				{Tools: []anthropic.ToolUse{read(s.p("k.txt"))}},
				anthropic.Say("compact done"),
			}
		},
		then: func(ctx context.Context, s *sc) error {
			// /compact asked for in a resumed session.
			_, err := Run{Bin: s.bin, BaseURL: s.fake.URL, Home: s.home, Dir: s.dir, Prompt: "/compact",
				Settings: DumpHooks(s.hooks, Events...), Args: []string{"--resume", "11111111-1111-4111-8111-000000000006"}}.Start(ctx)
			return err
		},
	},
}

func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("pass -capture to capture Claude Code's formats from the real binary")
	}
	bin, err := Bin(Root())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(Root(), "testdata", "claudecode")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(captureBase); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(captureBase, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(captureBase, "outside.txt"), []byte("outside the project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, scn := range scenarios {
		t.Run(scn.name, func(t *testing.T) { runScenario(t, bin, scn, filepath.Join(out, scn.name)) })
	}
}

func runScenario(t *testing.T, bin string, scn scenario, out string) {
	base := filepath.Join(captureBase, scn.name)
	s := &sc{t: t, bin: bin, dir: filepath.Join(base, "project"), home: filepath.Join(base, "home"), hooks: filepath.Join(base, "hooks")}
	for _, d := range []string{s.dir, s.home, s.hooks} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range scn.files {
		p := s.p(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake, err := anthropic.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	s.fake = fake
	fake.SetScript(scn.script(s)...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run{Bin: bin, BaseURL: fake.URL, Home: s.home, Dir: s.dir, Prompt: "do the " + scn.name + " scenario",
		SessionID: scn.session, Settings: DumpHooks(s.hooks, Events...), Args: scn.args}.Start(ctx)
	if err != nil {
		t.Errorf("%v\nstdout: %s", err, res.Stdout)
	}
	if scn.then != nil {
		if err := scn.then(ctx, s); err != nil {
			t.Errorf("after: %v", err)
		}
	}
	// Every request body, for a look by hand (not kept in testdata).
	for i, r := range fake.Requests() {
		writeRaw(t, filepath.Join(base, fmt.Sprintf("request-%02d.json", i)), r.Body)
	}
	if n := fake.Remaining(); n != 0 {
		t.Errorf("%d script steps not taken", n)
	}
	if err := fake.Err(); err != nil {
		t.Errorf("fake model: %v", err)
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// The hook inputs, one JSON object a line, in the order the hooks ran.
	hooks, err := Hooks(s.hooks)
	if err != nil {
		t.Fatal(err)
	}
	writeJSONL(t, filepath.Join(out, "hooks.jsonl"), hooks)
	// What the model received: every tool result once, as first sent; and
	// each model call's kind (turn or side call) with the tools offered.
	writeJSON(t, filepath.Join(out, "tool_results.json"), fake.ToolResults())
	var calls []map[string]any
	for _, r := range fake.Requests() {
		calls = append(calls, map[string]any{"side": r.Side, "compaction": r.Compaction, "subagent": r.Subagent,
			"step": r.Step, "tools": r.Tools(), "messages": len(r.Messages())})
	}
	writeJSON(t, filepath.Join(out, "model_calls.json"), calls)
	// The messages of the main agent's last turn: the history as the model
	// saw it last (after a compaction: the summary and what followed).
	var last *anthropic.Request
	for _, r := range fake.Turns() {
		if !r.Subagent {
			last = r
		}
	}
	if last != nil {
		writeJSON(t, filepath.Join(out, "last_messages.json"), last.Messages())
	}
	// The project's files at the end (text only), for tests that recognize
	// the calls against them.
	files := map[string]string{}
	err = filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(out, "project.json"), files)
	// The session store as Claude Code wrote it.
	projects := filepath.Join(s.home, ".claude", "projects")
	err = filepath.WalkDir(projects, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") && !strings.HasSuffix(p, ".json") {
			return err
		}
		rel, _ := filepath.Rel(s.home, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(out, "home", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, path, append(b, '\n'))
}

func writeJSONL(t *testing.T, path string, vs []map[string]any) {
	t.Helper()
	var b bytes.Buffer
	for _, v := range vs {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	writeRaw(t, path, b.Bytes())
}

func writeRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
