package recognize_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/queryadapter"
	"github.com/concord-ctx/concord/recognize"
)

// TestQueryShapes: commands whose output no single file shows back are
// query sources when their pipeline is on the allowlist, and stay events
// otherwise. Each output is produced by running the command for real
// (the query adapter, no shell), then recognized as OpenCode's bash
// showed it.
func TestQueryShapes(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for rel, text := range map[string]string{"a.txt": "TODO: one\nTODO: one\n", "b.txt": "TODO: two\nx\n", "src/m.py": "# TODO\n", "src/n.py": "pass\n",
		"dup/x.txt": "k = 1\nTODO\nk = 1\nTODO\nz\n", "dup/y.txt": "TODO\n"} {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	qa, err := queryadapter.New(queryadapter.Config{Confine: func(p string) (string, error) { return p, nil }}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	for _, tc := range []struct {
		command string
		stages  [][]string // nil: must stay an event
		output  string     // for events: the output shown
	}{
		{"grep -c TODO a.txt b.txt", [][]string{{"grep", "-c", "TODO", "a.txt", "b.txt"}}, ""},
		{"grep -rl TODO src", [][]string{{"grep", "-rl", "TODO", "src"}}, ""},
		{"ls src | grep py", [][]string{{"ls", "src"}, {"grep", "py"}}, ""},
		{"find src -type f | sort", [][]string{{"find", "src", "-type", "f"}, {"sort"}}, ""},
		{"grep -o 'TODO: [a-z]*' a.txt b.txt", [][]string{{"grep", "-o", "TODO: [a-z]*", "a.txt", "b.txt"}}, ""},
		{"grep -h TODO a.txt b.txt", [][]string{{"grep", "-h", "TODO", "a.txt", "b.txt"}}, ""},
		{"grep -h TODO a.txt b.txt | sort -u", [][]string{{"grep", "-h", "TODO", "a.txt", "b.txt"}, {"sort", "-u"}}, ""},
		{"cat a.txt b.txt | grep -n TODO", [][]string{{"cat", "a.txt", "b.txt"}, {"grep", "-n", "TODO"}}, ""},
		{"grep -rl TODO . | sort | head -n 2", [][]string{{"grep", "-rl", "TODO", "."}, {"sort"}, {"head", "-n", "2"}}, ""},
		// Without -n, "TODO" matches twice in x.txt and grep prints one
		// line for it: placed nowhere uniquely, a query of the search.
		{"grep -r -m1 TODO dup", [][]string{{"grep", "-r", "-m1", "TODO", "dup"}}, ""},
		{`find . -name '*.txt' -exec grep -l TODO {} \;`, [][]string{{"find", ".", "-name", "*.txt", "-exec", "grep", "-l", "TODO", "{}", ";"}}, ""},
		{"find src -type f -exec grep -c TODO {} + | sort", [][]string{{"find", "src", "-type", "f", "-exec", "grep", "-c", "TODO", "{}", "+"}, {"sort"}}, ""},
		{"find . -name '*.txt' | xargs grep -L two", [][]string{{"find", ".", "-name", "*.txt"}, {"xargs", "grep", "-L", "two"}}, ""},
		{"find dup -type f -print0 | xargs -0 grep -c TODO | head -n 1", [][]string{{"find", "dup", "-type", "f", "-print0"}, {"xargs", "-0", "grep", "-c", "TODO"}, {"head", "-n", "1"}}, ""},
		{`find . -name '*.txt' -exec cat {} \;`, nil, "TODO: two\nx\n"},                     // -exec runs a program other than grep
		{`find . -name '*.txt' -exec grep -l TODO {} \; -print`, nil, "./b.txt\n./b.txt\n"}, // a second output
		{"ls | xargs grep -l TODO", nil, "a.txt\n"},                           // ls's names are not paths from the directory it lists
		{"find . -name b.txt | xargs -I{} grep -l TODO {}", nil, "./b.txt\n"}, // an xargs option
		{"grep -Rl TODO src", nil, "src/m.py\n"},                              // -R follows symlinks: off the allowlist
		{"grep -l TODO a.txt | xargs cat", nil, "TODO: one\nTODO: one\n"},
		{"grep TODO a.txt | wc -l", nil, "2\n"},
		{"find src -name '*.py' -delete", nil, ""},
		{"grep -l TODO /etc/hostname a.txt", nil, "a.txt\n"}, // refused by the server's roots, not here: see queryadapter
	} {
		out := tc.output
		var want string
		if tc.stages != nil {
			c, err := qa.Read(context.Background(), query.Spec{Cwd: ws, Stages: tc.stages}.URI())
			if err != nil {
				t.Fatalf("%s: run: %v", tc.command, err)
			}
			want, out = c.Text, c.Text+"\n"
		}
		args, _ := json.Marshal(map[string]string{"command": tc.command, "description": "x"})
		res, err := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.OpenCode, Tool: "bash", Args: args,
			Output: out, Cwd: ws, Metadata: json.RawMessage(`{"exit":0}`)}, recognize.OS{})
		if err != nil {
			t.Fatal(err)
		}
		if tc.command == "grep -l TODO /etc/hostname a.txt" {
			// A query source by its shape; the server refuses it (outside the roots).
			if res.Kind != recognize.KindQuery {
				t.Errorf("%s: %s (%s)", tc.command, res.Kind, res.Reason)
			}
			continue
		}
		if tc.stages == nil {
			if res.Kind == recognize.KindQuery || res.Kind == recognize.KindRead {
				t.Errorf("%s: tracked as %s, want an event", tc.command, res.Kind)
			}
			continue
		}
		if res.Kind != recognize.KindQuery || len(res.Parts) != 1 {
			t.Errorf("%s: %s %q, want a query", tc.command, res.Kind, res.Reason)
			continue
		}
		p := res.Parts[0]
		if p.URI != (query.Spec{Cwd: ws, Stages: tc.stages}).URI() || p.Text != want {
			t.Errorf("%s: part %q %q, want %q", tc.command, p.URI, p.Text, want)
		}
		if got := res.Render(res.Parts); got != out {
			t.Errorf("%s: renders %q, want %q", tc.command, got, out)
		}
	}
}

// TestQueryNeedsItsProgram: a query whose program is not installed where
// the server runs stays an event (its first run would only flag it).
func TestQueryNeedsItsProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	args, _ := json.Marshal(map[string]string{"command": "grep -rl TODO src"})
	res, err := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.OpenCode, Tool: "bash", Args: args,
		Output: "src/a.py\n", Cwd: "/ws", Metadata: json.RawMessage(`{"exit":0}`)}, recognize.OS{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != recognize.KindEvent {
		t.Errorf("without grep in PATH: %s %q, want an event", res.Kind, res.Reason)
	}
}

// TestRgOnATerminal: rg prints headings and numbers on a terminal (the
// OpenHands pane) that it does not print to the server's pipe, so only its
// names and counts become query sources there; in OpenCode's bash (a
// pipe) its other shapes do too. (rg is looked up, never run, here.)
func TestRgOnATerminal(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "rg"), []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	ws := t.TempDir()
	zero := 0
	for _, tc := range []struct {
		runtime, command, output string
		want                     recognize.Kind
	}{
		{recognize.OpenHands, "rg -l TODO", "src/a.py\nsrc/b.py", recognize.KindQuery},
		{recognize.OpenHands, "rg -o 'TODO: [a-z]+'", "src/a.py\n2:TODO: one", recognize.KindEvent},
		{recognize.OpenCode, "rg -o 'TODO: [a-z]+'", "src/a.py:TODO: one\n", recognize.KindQuery},
	} {
		args, _ := json.Marshal(map[string]string{"command": tc.command})
		call := recognize.Call{Runtime: tc.runtime, Tool: "terminal", Args: args, Output: tc.output, ExitCode: &zero, Cwd: ws}
		if tc.runtime == recognize.OpenCode {
			call.Tool, call.Metadata = "bash", json.RawMessage(`{"exit":0}`)
		}
		res, err := recognize.Recognize(context.Background(), call, recognize.OS{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != tc.want {
			t.Errorf("%s %s: %s %q, want %s", tc.runtime, tc.command, res.Kind, res.Reason, tc.want)
		}
		if res.Kind == recognize.KindQuery && !strings.Contains(res.Parts[0].URI, "sorted=1") {
			t.Errorf("%s: rg's query %q does not sort (its order varies between runs)", tc.command, res.Parts[0].URI)
		}
	}
}
