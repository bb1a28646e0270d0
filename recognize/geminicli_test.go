package recognize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// gcTools are the Gemini CLI tools the fuzz target drives, by index.
var gcTools = []string{"read_file", "grep_search", "run_shell_command", "glob", "list_directory"}

func gcCall(tool uint8, arg, output string) recognize.Call {
	name := gcTools[int(tool)%len(gcTools)]
	key := map[string]string{"read_file": "file_path", "grep_search": "pattern", "run_shell_command": "command", "glob": "pattern", "list_directory": "dir_path"}[name]
	args, _ := json.Marshal(map[string]string{key: arg})
	return recognize.Call{Runtime: recognize.GeminiCLI, Tool: name, Args: args, Output: output, Cwd: "/ws"}
}

// FuzzGeminiCLI: Gemini CLI's parsers never panic or hang, and a recognized
// read renders back exactly as the output, each part's lines shown by it.
func FuzzGeminiCLI(f *testing.F) {
	data, err := os.ReadFile("../testdata/recognize/geminicli-capture.corpus.json")
	if err != nil {
		f.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(data, &c); err != nil {
		f.Fatal(err)
	}
	for _, cs := range c.Cases {
		var call recognize.Call
		if err := json.Unmarshal(cs.Call, &call); err != nil {
			f.Fatal(err)
		}
		var a map[string]any
		_ = json.Unmarshal(call.Args, &a)
		for i, name := range gcTools {
			if name == call.Tool {
				arg := ""
				for _, k := range []string{"file_path", "pattern", "command", "dir_path"} {
					if s, ok := a[k].(string); ok {
						arg = s
						break
					}
				}
				f.Add(uint8(i), strings.ReplaceAll(arg, "{WS}", "/ws"), strings.ReplaceAll(call.Output, "{WS}", "/ws"))
			}
		}
	}
	f.Add(uint8(0), "/ws/a.txt", "alpha\nbeta\n\tgamma\nbeta\n\ndelta  \n")
	f.Add(uint8(0), "a.txt", "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-3 of 7 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 4.\n\n--- FILE CONTENT (truncated) ---\nbeta\n\tgamma")
	f.Add(uint8(1), "beta", "Found 2 matches for pattern \"beta\" in the workspace directory:\n---\nFile: a.txt\nL2: beta\nL4: beta\n---")
	f.Add(uint8(2), "cat -n a.txt", "<untrusted_context>\nOutput: 1\talpha\n     2\tbeta\nProcess Group PGID: 7\n</untrusted_context>")
	files := fuzzWorkspace()
	f.Fuzz(func(t *testing.T, tool uint8, arg, output string) {
		call := gcCall(tool, arg, output)
		slow := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("recognize took over 5s: %d %q %q", tool, arg, output)) })
		res, err := recognize.Recognize(context.Background(), call, files)
		slow.Stop()
		if err != nil {
			t.Fatalf("error on valid arguments: %v", err)
		}
		if res.Kind != recognize.KindRead {
			return
		}
		for _, p := range res.Parts {
			if !filepath.IsAbs(p.Path) || p.Start < 0 || p.End < p.Start {
				t.Fatalf("bad part %+v", p)
			}
			if !p.Whole() && strings.Count(p.Text, "\n")+1 != p.End-p.Start+1 {
				t.Fatalf("part %+v: %d lines for the range", p, strings.Count(p.Text, "\n")+1)
			}
			for _, l := range strings.Split(p.Text, "\n") {
				if !strings.Contains(output, l) {
					t.Fatalf("part line %q is not in the output %q", l, output)
				}
			}
		}
		if got := res.Render(res.Parts); got != output {
			t.Fatalf("renders back as %q, want %q", got, output)
		}
	})
}

// TestGeminiCLIRender: a tracked read re-rendered after its file changed is
// what the tool would show now (its notice's numbers follow the file).
func TestGeminiCLIRender(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "c.txt")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notice := func(a, b, n int) string {
		return fmt.Sprintf("\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines %d-%d of %d total lines.\n"+
			"Action: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. "+
			"For example, to read the next section of the file, use start_line: %d.\n\n--- FILE CONTENT (truncated) ---\n", a, b, n, b+1)
	}
	for _, tc := range []struct {
		name, before, output, after string
		tool                        string
		args                        map[string]any
		moved                       func([]recognize.Part) []recognize.Part
		want                        string
	}{
		{
			name: "whole file", tool: "read_file", args: map[string]any{"file_path": "c.txt"},
			before: "a\nb\n", output: "a\nb\n", after: "a\nB\n",
			moved: func(p []recognize.Part) []recognize.Part { p[0].Text = "a\nB"; return p },
			want:  "a\nB\n",
		},
		{
			name: "window moved down by an inserted line, total grows", tool: "read_file", args: map[string]any{"file_path": "c.txt", "start_line": 2, "end_line": 3},
			before: "a\nb\nc\nd\n", output: notice(2, 3, 5) + "b\nc", after: "z\na\nb\nc\nd\n",
			moved: func(p []recognize.Part) []recognize.Part { p[0].Start, p[0].End, p[0].Total = 3, 4, 5; return p },
			want:  notice(3, 4, 6) + "b\nc",
		},
		{
			name: "window to the end keeps the empty last piece", tool: "read_file", args: map[string]any{"file_path": "c.txt", "start_line": 2},
			before: "a\nb\nc\n", output: notice(2, 4, 4) + "b\nc\n", after: "a\nb\nC\n",
			moved: func(p []recognize.Part) []recognize.Part { p[0].Text = "b\nC"; return p },
			want:  notice(2, 4, 4) + "b\nC\n",
		},
		{
			name: "grep hit at its new line", tool: "grep_search", args: map[string]any{"pattern": "port"},
			before: "x\nport: 1\n", output: "Found 1 match for pattern \"port\" in the workspace directory:\n---\nFile: c.txt\nL2: port: 1\n---", after: "x\ny\nport: 2\n",
			moved: func(p []recognize.Part) []recognize.Part { p[0].Start, p[0].End, p[0].Text = 3, 3, "port: 2"; return p },
			want:  "Found 1 match for pattern \"port\" in the workspace directory:\n---\nFile: c.txt\nL3: port: 2\n---",
		},
		{
			// Few hits: Gemini CLI adds context rows ("L<n>- text"), up to the empty piece
			// after the final newline.
			name: "grep hit with context rows, a line inserted above", tool: "grep_search", args: map[string]any{"pattern": "port"},
			before: "x\nport: 1\ny\n", output: "Found 1 match for pattern \"port\" in the workspace directory:\n---\nFile: c.txt\nL1- x\nL2: port: 1\nL3- y\nL4- \n---", after: "w\nx\nport: 1\ny\n",
			moved: func(p []recognize.Part) []recognize.Part { p[0].Start, p[0].End = 2, 4; return p },
			want:  "Found 1 match for pattern \"port\" in the workspace directory:\n---\nFile: c.txt\nL2- x\nL3: port: 1\nL4- y\nL5- \n---",
		},
		{
			name: "shell cat -n, trimmed as Gemini CLI shows it", tool: "run_shell_command", args: map[string]any{"command": "cat -n c.txt"},
			before: "a\nb\n", output: "<untrusted_context>\nOutput: 1\ta\n     2\tb\nProcess Group PGID: 9\n</untrusted_context>", after: "A\nb\n",
			moved: func(p []recognize.Part) []recognize.Part { p[0].Text = "A\nb"; return p },
			want:  "<untrusted_context>\nOutput: 1\tA\n     2\tb\nProcess Group PGID: 9\n</untrusted_context>",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.before)
			args, _ := json.Marshal(tc.args)
			res, err := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.GeminiCLI, Tool: tc.tool, Args: args, Output: tc.output, Cwd: dir}, recognize.OS{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Kind != recognize.KindRead {
				t.Fatalf("%s: %s", res.Kind, res.Reason)
			}
			if got := res.Render(res.Parts); got != tc.output {
				t.Fatalf("renders back as %q", got)
			}
			write(tc.after)
			parts := tc.moved(append([]recognize.Part(nil), res.Parts...))
			if got := res.Render(parts); got != tc.want {
				t.Errorf("after the change:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestGeminiCLIEvents: what Gemini CLI shows that is not file content, or
// not in a shape known, stays untracked.
func TestGeminiCLIEvents(t *testing.T) {
	for _, tc := range []struct {
		tool, output string
		args         map[string]any
		err          bool
	}{
		{tool: "read_file", args: map[string]any{"file_path": "/ws/a.txt"}, output: "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-3 of 7 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 4.\n\n--- FILE CONTENT (truncated) ---\nbeta"},
		{tool: "read_file", args: map[string]any{"file_path": "/ws/a.txt"}, output: "a\r\nb\r\n"},
		{tool: "read_file", args: map[string]any{"file_path": "/ws/a.txt"}, output: "File not found", err: true},
		{tool: "grep_search", args: map[string]any{"pattern": "x", "names_only": true}, output: "Found 1 files with matches for pattern \"x\" in the workspace directory:\na.txt"},
		{tool: "grep_search", args: map[string]any{"pattern": "alpha"}, output: "Found 1 match for pattern \"alpha\" in the workspace directory:\n---\nFile: a.txt\nL2: alpha\nL1: beta\n---"},
		{tool: "grep_search", args: map[string]any{"pattern": "alpha"}, output: "No matches found for pattern \"alpha\" in the workspace directory."},
		{tool: "run_shell_command", args: map[string]any{"command": "cat a.txt"}, output: "<untrusted_context>\nOutput: x\nExit Code: 1\nProcess Group PGID: 1\n</untrusted_context>"},
		{tool: "run_shell_command", args: map[string]any{"command": "echo hi"}, output: "<untrusted_context>\nOutput: hi\nProcess Group PGID: 1\n</untrusted_context>"},
		{tool: "web_fetch", args: map[string]any{"prompt": "x"}, output: "page"},
		{tool: "google_web_search", args: map[string]any{"query": "x"}, output: "results"},
		{tool: "mcp_srv_tool", args: map[string]any{}, output: "x"},
	} {
		args, _ := json.Marshal(tc.args)
		res, err := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.GeminiCLI, Tool: tc.tool, Args: args, Output: tc.output, Cwd: "/ws", Error: tc.err}, fuzzWorkspace())
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != recognize.KindEvent || res.Reason == "" {
			t.Errorf("%s %q: %s (%s), want an event with its reason", tc.tool, tc.output, res.Kind, res.Reason)
		}
	}
}
