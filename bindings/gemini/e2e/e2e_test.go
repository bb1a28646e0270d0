// Package e2e drives the real Gemini CLI (the pinned @google/gemini-cli in bindings/gemini)
// non-interactively and offline, with Concord's extension installed as a user installs it
// (`gemini extensions install DIR --consent`), against a scripted fake of the Gemini API on
// 127.0.0.1. The fake changes files between model calls and judges what each request carries.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fake "github.com/concord-ctx/concord/internal/fakemodel/gemini"
	"github.com/concord-ctx/concord/internal/geminicli"
)

// extensionDir is the extension as make dist-gemini lays it out, built once for the run.
var extensionDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := geminicli.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "concord-gemini-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// What make dist ships: the extension with concord and concord-hook in bin/.
	build := exec.Command("make", "-s", "-C", root, "dist-gemini", "GEMINI_DIST="+dir)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "make dist-gemini: %v\n%s", err, out)
		return 1
	}
	extensionDir = filepath.Join(dir, "gemini")
	return m.Run()
}

const config = "name: demo\nport: 8080\ndebug: false\nlevel: info\nmode: fast\nuser: admin\n"

// scenario is one run: files, the model's script (built once the workspace exists) and whether
// Concord's extension is installed.
type scenario struct {
	name      string
	files     map[string]string
	extension bool
	steps     func(ws *geminicli.Workspace, m **fake.Server) []fake.Step
	calls     int // model calls expected
}

func play(t *testing.T, s scenario) *fake.Server {
	t.Helper()
	if _, err := geminicli.Script(); err != nil {
		t.Fatal(err) // make -C bindings/gemini deps (the top Makefile's go-test runs it)
	}
	// Short paths: the session's socket lives under XDG_RUNTIME_DIR (a unix socket path is
	// limited to about 100 bytes).
	root, err := os.MkdirTemp("", "cg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(root)
		} else {
			t.Logf("logs kept in %s", root)
		}
	})
	ws, err := geminicli.NewWorkspace(root, s.files)
	if err != nil {
		t.Fatal(err)
	}
	runtimeDir := filepath.Join(root, "run")
	if err := os.Mkdir(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if s.extension {
		installExtension(t, ws)
	}
	var model *fake.Server
	model = fake.New(s.steps(ws, &model)...)
	url, err := model.Start()
	if err != nil {
		t.Fatal(err)
	}
	res, err := ws.Run(context.Background(), geminicli.Run{
		BaseURL: url,
		Prompt:  "Work on the project.",
		Env:     []string{"XDG_RUNTIME_DIR=" + runtimeDir, "CONCORD_ROOTS=" + ws.Proj},
	})
	_ = model.Close()
	if dump, derr := model.Dump(); derr == nil {
		_ = os.WriteFile(filepath.Join(root, "model-requests.json"), dump, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatalf("gemini: %v\n%s", res.Err, tail(res.Stderr))
	}
	if f := model.Failures(); len(f) > 0 {
		t.Fatalf("what the model was sent (requests in %s):\n%s", root, strings.Join(f, "\n"))
	}
	if n := len(model.Requests()); n != s.calls {
		t.Fatalf("%d model calls, want %d\n%s", n, s.calls, tail(res.Stderr))
	}
	// The session's server stopped with it (SessionEnd): no socket is left, no process on it.
	if socks, _ := filepath.Glob(filepath.Join(runtimeDir, "concord", "*.sock")); len(socks) > 0 {
		t.Errorf("a server outlived the session: %v", socks)
	}
	t.Logf("%s: gemini-cli %s, %d model calls in %s", s.name, geminicli.Version(), s.calls, res.Elapsed)
	return model
}

// installExtension installs the extension make dist-gemini laid out, as a user would.
func installExtension(t *testing.T, ws *geminicli.Workspace) {
	t.Helper()
	out, err := ws.Gemini(context.Background(), "extensions", "install", extensionDir, "--consent")
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"concord", "concord-hook"} {
		if _, err := os.Stat(filepath.Join(ws.Home, ".gemini", "extensions", "concord", "bin", bin)); err != nil {
			t.Fatalf("extension not installed: %v\n%s", err, out)
		}
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

// hookContexts are the <hook_context> notes a request carries, oldest first.
func hookContexts(r *fake.Request) []string {
	var out []string
	for _, fr := range r.FunctionResponses() {
		o := fr.Output()
		for {
			i := strings.Index(o, "<hook_context>")
			if i < 0 {
				break
			}
			j := strings.Index(o[i:], "</hook_context>")
			if j < 0 {
				break
			}
			out = append(out, o[i+len("<hook_context>"):i+j])
			o = o[i+j:]
		}
	}
	return out
}

func echo() fake.FunctionCall {
	return fake.Fn("run_shell_command", map[string]any{"command": "echo step", "description": "step"})
}

// outsideChange: the model reads a file (with read_file, or finds it with grep_search), another
// process changes it, and the next tool result carries one true erratum; later requests
// repeat it in history and add none. Control: without the extension the stale text is all the
// model has.
func outsideChange(first fake.FunctionCall, extension bool) scenario {
	return scenario{
		name:      first.Name,
		files:     map[string]string{"config.yaml": config},
		extension: extension,
		calls:     4,
		steps: func(ws *geminicli.Workspace, m **fake.Server) []fake.Step {
			file := filepath.Join(ws.Proj, "config.yaml")
			return []fake.Step{
				func(*fake.Request) fake.Reply { return fake.Call(first) },
				func(r *fake.Request) fake.Reply {
					got, _ := r.ToolResult(1)
					(*m).Expect(strings.Contains(got, "port: 8080"), "the first result shows the file: %q", got)
					(*m).Expect(len(hookContexts(r)) == 0, "no correction before any change: %q", hookContexts(r))
					socks, _ := filepath.Glob(filepath.Join(ws.Root, "run", "concord", "*.sock"))
					(*m).Expect(len(socks) == map[bool]int{true: 1, false: 0}[extension], "one server for the session while it runs: %v", socks)
					if err := os.WriteFile(file, []byte(strings.Replace(config, "port: 8080", "port: 9090", 1)), 0o644); err != nil {
						(*m).Expect(false, "change: %v", err)
					}
					return fake.Call(echo())
				},
				func(r *fake.Request) fake.Reply {
					notes := hookContexts(r)
					if extension {
						(*m).Expect(len(notes) == 1 && strings.Contains(notes[0], "config.yaml") && strings.Contains(notes[0], "9090") && !strings.Contains(notes[0], "8080\n"),
							"one erratum after the change, naming the file and its new line: %q", notes)
						got, _ := r.ToolResult(2)
						(*m).Expect(strings.Contains(got, "<hook_context>"), "the erratum rides on the next tool result: %q", got)
					} else {
						(*m).Expect(len(notes) == 0 && !strings.Contains(r.Text(), "9090"), "control: the model is not told: %q", notes)
					}
					got, _ := r.ToolResult(1)
					(*m).Expect(strings.Contains(got, "port: 8080"), "the first result stays as sent (the prompt is append-only): %q", got)
					return fake.Call(echo())
				},
				func(r *fake.Request) fake.Reply {
					notes := hookContexts(r)
					want := 0
					if extension {
						want = 1
					}
					(*m).Expect(len(notes) == want, "the erratum is not repeated: %q", notes)
					return fake.Say("done")
				},
			}
		},
	}
}

func TestReadFileOutsideChange(t *testing.T) {
	t.Parallel()
	m := play(t, outsideChange(fake.Fn("read_file", map[string]any{"file_path": "config.yaml"}), true))
	t.Logf("the erratum: %q", hookContexts(m.Requests()[2]))
}

func TestGrepSearchOutsideChange(t *testing.T) {
	t.Parallel()
	m := play(t, outsideChange(fake.Fn("grep_search", map[string]any{"pattern": "port"}), true))
	t.Logf("the erratum: %q", hookContexts(m.Requests()[2]))
}

func TestControlWithoutExtension(t *testing.T) {
	t.Parallel()
	play(t, outsideChange(fake.Fn("read_file", map[string]any{"file_path": "config.yaml"}), false))
}

// TestOwnReplace: the agent reads a file, then edits it with replace: its earlier read is
// corrected in the replace's own result, once.
func TestOwnReplace(t *testing.T) {
	t.Parallel()
	m := play(t, scenario{
		name:      "replace",
		files:     map[string]string{"config.yaml": config},
		extension: true,
		calls:     4,
		steps: func(ws *geminicli.Workspace, m **fake.Server) []fake.Step {
			file := filepath.Join(ws.Proj, "config.yaml")
			return []fake.Step{
				func(*fake.Request) fake.Reply {
					return fake.Call(fake.Fn("read_file", map[string]any{"file_path": file}))
				},
				func(*fake.Request) fake.Reply {
					return fake.Call(fake.Fn("replace", map[string]any{"file_path": file, "instruction": "debug on",
						"old_string": "debug: false", "new_string": "debug: true"}))
				},
				func(r *fake.Request) fake.Reply {
					got, _ := r.ToolResult(2)
					notes := hookContexts(r)
					(*m).Expect(strings.HasPrefix(got, "Successfully modified file") && len(notes) == 1 && strings.Contains(notes[0], "config.yaml"),
						"the replace's result carries one erratum about the earlier read: %q", got)
					return fake.Call(echo())
				},
				func(r *fake.Request) fake.Reply {
					(*m).Expect(len(hookContexts(r)) == 1, "not repeated: %q", hookContexts(r))
					return fake.Say("done")
				},
			}
		},
	})
	t.Logf("the erratum: %q", hookContexts(m.Requests()[2]))
}
