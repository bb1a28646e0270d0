package queryadapter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/runtime"
	"mvdan.cc/sh/v3/syntax"
)

// TestExecMatchesTheShell: find -exec grep and xargs grep, run by the
// adapter (find without its -exec, grep started directly over the names),
// print exactly what the real command prints through a shell, the real
// find and xargs batching grep's command lines: one grep per file (-c and
// -n then print no names, context groups no "--" between files), names
// with blanks (-print0 | xargs -0), xargs's one run on no input, and more
// names than one command line holds (-c prints names in each batch).
func TestExecMatchesTheShell(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the real command")
	}
	files := map[string]string{
		"src/a.py":          "import os\n# TODO: one\ndef f():\n    pass\n",
		"src/b.py":          "def g():\n    return 1\n\ndef h():\n    pass\n",
		"src/pkg/c.py":      "# TODO\nx = 1\n",
		"src/with space.py": "def s(): TODO\n",
		"docs/n.md":         "TODO later\n",
	}
	w := newWorkspace(t, Config{}, files)
	// 1,249 names of 104 bytes: `grep -c TODO` and 1,248 of them fill 128
	// KiB of arguments, so the second command line holds one name, whose
	// count grep prints bare.
	long := strings.Repeat("l", 90)
	for i := 0; i < 1249; i++ {
		w.write(t, fmt.Sprintf("many/%04d_%s.txt", i, long), strings.Repeat("TODO\n", i%3))
	}
	for _, cmd := range []string{
		`find src -name '*.py' -exec grep -l TODO {} \;`,
		`find src -name '*.py' -exec grep -l TODO {} +`,
		`find src -type f -exec grep -c def {} \;`,
		`find src -type f -exec grep -c def {} +`,
		`find src -type f -exec grep -n def {} \;`,
		`find src -type f -exec grep -A1 def {} \;`,
		`find src -type f -exec grep -Hc def {} \;`,
		`find . -exec grep -L TODO {} \;`, // directories too: grep fails on them, find goes on
		`find src -name '*.py' -print0 | xargs -0 grep -l TODO`,
		`find src docs -type f -print0 | xargs -0 grep -c TODO`,
		`find docs -name '*.none' | xargs grep -L TODO`,
		`find docs -name '*.none' | xargs -r grep -L TODO`,
		`grep -rl def src | grep -v pkg | xargs grep -c pass`,
		`find many -type f -exec grep -c TODO {} +`,
		`find many -type f | sort | xargs grep -c TODO`,
		`find many -type f -exec grep -l TODO {} + | head -n 3`,
		`find src -name '*.py' -exec grep -l def {} \; | xargs grep -c TODO`,
	} {
		sh := exec.Command("sh", "-c", cmd)
		sh.Dir = w.root
		want, _ := sh.Output() // grep's status 1 (no match) is an answer
		stages := parse(t, cmd)
		got, err := w.a.Read(context.Background(), w.id(t, stages...))
		if err != nil {
			t.Errorf("%s: %v", cmd, err)
			continue
		}
		if s := (query.Spec{Stages: stages}).Text(string(want)); got.Text != s {
			t.Errorf("%s: the adapter gives\n%.300q\nthe shell\n%.300q", cmd, got.Text, s)
		}
	}
}

// parse is the argv of each stage of a pipeline, as the recognizer reads it.
func parse(t *testing.T, cmd string) [][]string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var walk func(syntax.Command)
	walk = func(c syntax.Command) {
		switch c := c.(type) {
		case *syntax.BinaryCmd:
			walk(c.X.Cmd)
			walk(c.Y.Cmd)
		case *syntax.CallExpr:
			var argv []string
			for _, w := range c.Args {
				var b strings.Builder
				for _, part := range w.Parts {
					switch p := part.(type) {
					case *syntax.Lit:
						b.WriteString(strings.NewReplacer(`\;`, ";", `\|`, "|").Replace(p.Value))
					case *syntax.SglQuoted:
						b.WriteString(p.Value)
					case *syntax.DblQuoted:
						for _, dp := range p.Parts {
							b.WriteString(dp.(*syntax.Lit).Value)
						}
					}
				}
				argv = append(argv, b.String())
			}
			out = append(out, argv)
		}
	}
	walk(f.Stmts[0].Cmd)
	return out
}

// TestExecRefusals: a name the grep would take outside the roots, or for
// an option, fails the run instead of reaching grep.
func TestExecRefusals(t *testing.T) {
	w := newWorkspace(t, Config{}, map[string]string{"a.txt": "x\n", "x -fsecret": "x\n", "secret": "x\n"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "o.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "o.txt"), filepath.Join(w.root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stages [][]string
		want   error
	}{
		// find prints the symlink; grep would follow it out of the roots.
		{[][]string{{"find", ".", "-name", "link.txt", "-exec", "grep", "-l", "x", "{}", "+"}}, runtime.ErrOutsideRoots},
		{[][]string{{"find", ".", "-name", "link.txt"}, {"xargs", "grep", "-c", "x"}}, runtime.ErrOutsideRoots},
		// xargs splits "./x -fsecret" into "./x" and "-fsecret": grep's -f.
		{[][]string{{"find", ".", "-name", "x *"}, {"xargs", "grep", "-l", "x"}}, runtime.ErrUnreadable},
	} {
		_, err := w.a.Read(context.Background(), w.id(t, tc.stages...))
		if !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.stages, err, tc.want)
		}
	}
	// With -0 the same name is one name, inside the roots.
	if got := w.read(t, w.id(t, []string{"find", ".", "-name", "x *", "-print0"}, []string{"xargs", "-0", "grep", "-l", "x"})); got != "./x -fsecret" {
		t.Errorf("xargs -0: %q", got)
	}
}
