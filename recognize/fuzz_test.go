package recognize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// memFiles serves a fixed workspace at /ws from memory.
type memFiles struct{ m fstest.MapFS }

func (f memFiles) rel(p string) (string, error) {
	r, err := filepath.Rel("/ws", p)
	if err != nil || strings.HasPrefix(r, "..") {
		return "", fs.ErrNotExist
	}
	return r, nil
}

func (f memFiles) ReadFile(p string) ([]byte, error) {
	r, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	return f.m.ReadFile(r)
}

func (f memFiles) Stat(p string) (fs.FileInfo, error) {
	r, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	return f.m.Stat(r)
}

func (f memFiles) Lstat(p string) (fs.FileInfo, error) { return f.Stat(p) }

func (f memFiles) ReadDir(p string) ([]fs.DirEntry, error) {
	r, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	return f.m.ReadDir(r)
}

func fuzzWorkspace() memFiles {
	m := fstest.MapFS{}
	add := func(name, text string) {
		m[name] = &fstest.MapFile{Data: []byte(text), Mode: 0o644, ModTime: time.Unix(0, 0)}
	}
	add("a.txt", "alpha\nbeta\n\tgamma\nbeta\n\ndelta  \n")
	add("src/main.go", "package main\n\nfunc main() {\n\t// TODO: x\n}\n")
	add("src/b-1:2.txt", "x:1:y\nz-2-w\n")
	add("noeol", "one\ntwo")
	return memFiles{m}
}

// FuzzRecognize: the shell parse and the output parse never panic, an
// error is only for malformed arguments, and a recognized read's text is
// the output's: each line of each part is shown by a line of the output
// (as the screen shows it), and the result renders back as the output.
func FuzzRecognize(f *testing.F) {
	seedFromCorpus(f)
	seedFromPublic(f)
	f.Add(uint8(0), "grep -n \"a\\|b\" a.txt", "1:alpha\n2:beta", 0)
	// An ls -R that OpenHands' terminal cut in the middle (clip: lscut_test.go).
	f.Add(uint8(0), "ls -R", ".:\na.txt  noeol  src\n\n./src:\nb-1:2.txt"+clip+"o\n\n./src:\nb-1:2.txt  main.go", 0)
	f.Add(uint8(0), "ls -R src", clip+"main.go\n\nsrc:\nb-1:2.txt  main.go", 0)
	f.Add(uint8(0), "find . -exec grep -l alpha {} +", "./a.txt", 0)
	f.Add(uint8(1), "find src -type f | xargs grep -c x", "src/main.go:1\nsrc/b-1:2.txt:1\n", 0)
	f.Add(uint8(1), "cd src && grep -rn TODO .", "./main.go:4:\t// TODO: x\n", 0)
	f.Add(uint8(0), "cat a.txt | grep -A1 beta", "beta\n\tgamma\n--\nbeta\n", 0)
	f.Add(uint8(2), "", "Here's the result of running `cat -n` on /ws/a.txt:\n     1\talpha\n     2\tbeta\n", 0)
	f.Add(uint8(3), "", "<path>/ws/a.txt</path>\n<type>file</type>\n<content>\n1: alpha\n\n(End of file - total 1 lines)\n</content>", 0)
	f.Add(uint8(5), "a.txt", "Read file: /ws/a.txt\n\n     1  alpha\n     2  beta\n", 0)
	f.Add(uint8(5), "a.txt", "Read file: /ws/a.txt (showing lines 2-3 of 6) To read more, use: read_file(file_path='a.txt', offset=3, limit=2)\n\n     2  beta\n     3  \tgamma\n", 0)
	f.Add(uint8(4), "", "Found 1 matches\n/ws/a.txt:\n  Line 2: beta\n", 0)
	f.Add(uint8(6), "sed -n '1,2p' a.txt", "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nalpha\nbeta\n", 0)
	f.Add(uint8(7), "nl -ba a.txt", "     1\talpha\n     2\tbeta\n", 0)
	files := fuzzWorkspace()
	f.Fuzz(func(t *testing.T, tool uint8, command, output string, exit int) {
		call := fuzzCall(tool, command, output, exit)
		// A slow input is a defect too (recognition runs on every tool result).
		slow := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("recognize took over 5s: %d %q %q", tool, command, output)) })
		res, err := recognize.Recognize(context.Background(), call, files)
		slow.Stop()
		if err != nil {
			if len(call.Args) > 0 && json.Valid(call.Args) {
				t.Fatalf("error on valid arguments: %v", err)
			}
			return
		}
		if res.Kind != recognize.KindRead {
			return
		}
		screen := call.Runtime == recognize.OpenHands && call.Tool == "terminal"
		for _, p := range res.Parts {
			if p.Path == "" || !filepath.IsAbs(p.Path) || p.Start < 0 || p.End < p.Start {
				t.Fatalf("bad part %+v", p)
			}
			if !p.Whole() && strings.Count(p.Text, "\n")+1 != p.End-p.Start+1 {
				t.Fatalf("part %+v: %d lines for the range", p, strings.Count(p.Text, "\n")+1)
			}
			for _, l := range strings.Split(p.Text, "\n") {
				if !shownBy(output, l, screen) {
					t.Fatalf("part line %q is not in the output %q", l, output)
				}
			}
		}
		got, want := res.Render(res.Parts), output
		if screen {
			got, want = screenText(got), screenText(want)
		}
		if got != want && call.Tool != "file_editor" && call.Tool != "read" {
			t.Fatalf("renders back as %q, want %q", got, want)
		}
	})
}

func fuzzCall(tool uint8, command, output string, exit int) recognize.Call {
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	code := exit
	switch tool % 8 {
	case 6:
		return recognize.Call{Runtime: recognize.Codex, Tool: "exec_command", Args: args(map[string]string{"cmd": command}),
			Output: output, Cwd: "/ws"}
	case 7:
		return recognize.Call{Runtime: recognize.Codex, Tool: "Bash", Args: args(map[string]string{"command": command}),
			Output: output, ExitCode: &code, Cwd: "/ws"}
	case 0:
		return recognize.Call{Runtime: recognize.OpenHands, Tool: "terminal", Args: args(map[string]string{"command": command}),
			Output: output, ExitCode: &code, Cwd: "/ws"}
	case 1:
		return recognize.Call{Runtime: recognize.OpenCode, Tool: "bash", Args: args(map[string]string{"command": command}),
			Output: output, ExitCode: &code, Cwd: "/ws"}
	case 2:
		return recognize.Call{Runtime: recognize.OpenHands, Tool: "file_editor",
			Args: args(map[string]string{"command": "view", "path": "/ws/" + command}), Output: output}
	case 5:
		return recognize.Call{Runtime: recognize.OpenHands, Tool: "read_file", Args: args(map[string]string{"file_path": command}),
			Output: output, Cwd: "/ws"}
	case 3:
		return recognize.Call{Runtime: recognize.OpenCode, Tool: "read", Args: args(map[string]string{"filePath": command}),
			Output: output, Cwd: "/ws"}
	}
	return recognize.Call{Runtime: recognize.OpenCode, Tool: "grep", Args: args(map[string]string{"pattern": command}),
		Output: output, Cwd: "/ws"}
}

// shownBy reports whether some output line shows l (ends with it, as the
// screen shows both: a numbered or prefixed line ends with its text).
func shownBy(output, l string, screen bool) bool {
	if screen {
		l = screenText(l)
		if l == "" {
			return true // blank lines vanish from a stripped screen
		}
	}
	for _, o := range strings.Split(output, "\n") {
		if screen {
			o = screenText(o)
		}
		if strings.HasSuffix(o, l) || strings.HasSuffix(o, l+"\n") {
			return true
		}
	}
	return false
}

// screenText is text as a terminal pane shows it, stripped.
func screenText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		var b strings.Builder
		col := 0
		for _, c := range l {
			if c == '\t' {
				n := 8 - col%8
				b.WriteString(strings.Repeat(" ", n))
				col += n
				continue
			}
			b.WriteRune(c)
			col++
		}
		lines[i] = strings.TrimRight(b.String(), " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// seedFromCorpus adds the corpus's terminal commands and outputs as seeds.
func seedFromCorpus(f *testing.F) {
	files, _ := filepath.Glob("../testdata/recognize/*.corpus.json")
	sort.Strings(files)
	for _, file := range files {
		data, err := os.ReadFile(file)
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
				f.Fatal(errors.Join(err, errors.New(cs.Name)))
			}
			var a struct{ Command, Cmd string }
			_ = json.Unmarshal(call.Args, &a)
			tool := uint8(0)
			switch call.Tool {
			case "exec_command":
				tool, a.Command = 6, a.Cmd
			case "Bash":
				tool = 7
			case "bash":
				tool = 1
			case "file_editor":
				tool = 2
			case "read":
				tool = 3
			case "grep":
				tool = 4
			case "read_file":
				tool = 5
				_ = json.Unmarshal(call.Args, &struct {
					Command *string `json:"file_path"`
				}{&a.Command})
			}
			f.Add(tool, a.Command, strings.ReplaceAll(call.Output, "{WS}", "/ws"), 0)
		}
	}
}
