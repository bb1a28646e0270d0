package recognize

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestParseShell: what the shell parser makes of commands agents run, and
// why the ones that are not a plain pipeline are refused.
func TestParseShell(t *testing.T) {
	tests := []struct {
		name, runtime, cmd, cwd string
		wantCwd                 string
		want                    [][]string
		why                     string // "" when accepted
	}{
		{"plain", OpenHands, "cat -n src/main.py", "/ws", "/ws", [][]string{{"cat", "-n", "src/main.py"}}, ""},
		{"single quotes", OpenHands, "grep -n 'a b' f", "/ws", "/ws", [][]string{{"grep", "-n", "a b", "f"}}, ""},
		{"backslash in double quotes stays for grep", OpenHands, `grep -n "TODO\|FIXME" f`, "/ws", "/ws", [][]string{{"grep", "-n", `TODO\|FIXME`, "f"}}, ""},
		{"escaped quote in double quotes", OpenHands, `grep "a\"b" f`, "/ws", "/ws", [][]string{{"grep", `a"b`, "f"}}, ""},
		{"escaped blank", OpenHands, `cat a\ b.txt`, "/ws", "/ws", [][]string{{"cat", "a b.txt"}}, ""},
		{"escaped pipe outside quotes", OpenHands, `grep a\|b f`, "/ws", "/ws", [][]string{{"grep", "a|b", "f"}}, ""},
		{"pipeline", OpenHands, "cat f | grep -A 2 x | head -5", "/ws", "/ws", [][]string{{"cat", "f"}, {"grep", "-A", "2", "x"}, {"head", "-5"}}, ""},
		{"stderr to /dev/null", OpenHands, "grep -rn x src 2>/dev/null", "/ws", "/ws", [][]string{{"grep", "-rn", "x", "src"}}, ""},
		{"cd naming the reported directory", OpenHands, "cd src && cat main.py", "/ws/src", "/ws/src", [][]string{{"cat", "main.py"}}, ""},
		{"absolute cd", OpenHands, "cd /ws/pkg && cat a.go", "/ws/pkg", "/ws/pkg", [][]string{{"cat", "a.go"}}, ""},
		{"absolute cd elsewhere than reported", OpenHands, "cd /tmp && cat a", "/ws", "/tmp", [][]string{{"cat", "a"}}, ""},
		{"cd then semicolon", OpenCode, "cd src; cat main.py", "/ws", "/ws/src", [][]string{{"cat", "main.py"}}, ""},
		{"relative cd from where OpenCode started", OpenCode, "cd src && cat main.py", "/ws", "/ws/src", [][]string{{"cat", "main.py"}}, ""},
		{"cd not to the reported directory", OpenHands, "cd other && cat x", "/ws/src", "", nil, "cd other does not lead to the reported working directory"},
		{"cd with ..", OpenHands, "cd ../x && cat y", "/ws/x", "", nil, "cd ../x does not lead to the reported working directory"},
		{"variable", OpenHands, "cat $HOME/x", "/ws", "", nil, "a word the shell would expand"},
		{"command substitution", OpenHands, `cat "$(ls)"`, "/ws", "", nil, "a word the shell would expand"},
		{"glob", OpenHands, "cat *.txt", "/ws", "", nil, "a word the shell would expand"},
		{"brace", OpenHands, "cat {a,b}.txt", "/ws", "", nil, "a word the shell would expand"},
		{"tilde", OpenHands, "cat ~/x", "/ws", "", nil, "a word the shell would expand"},
		{"ANSI-C quotes", OpenHands, "grep $'a\\tb' f", "/ws", "", nil, "a word the shell would expand"},
		{"redirect to a file", OpenHands, "cat f > out", "/ws", "", nil, "a redirection"},
		{"assignment", OpenHands, "LC_ALL=C cat f", "/ws", "", nil, "variable assignment"},
		{"sequence", OpenHands, "cat a; cat b", "/ws", "", nil, "a sequence other than `cd DIR && ...`"},
		{"or list", OpenHands, "cat f || true", "/ws", "", nil, "a list other than a pipeline"},
		{"background", OpenHands, "cat f &", "/ws", "", nil, "not a plain command"},
		{"subshell", OpenHands, "(cat f)", "/ws", "", nil, "not a simple command"},
		{"unterminated quote", OpenHands, "cat 'f", "/ws", "", nil, "shell syntax: 1:5: reached EOF without closing quote `'`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recognizer{call: Call{Runtime: tt.runtime}}
			p, why := r.parseShell(tt.cmd, tt.cwd)
			if why != tt.why {
				t.Fatalf("reason %q, want %q", why, tt.why)
			}
			if why != "" {
				return
			}
			if p.cwd != tt.wantCwd {
				t.Errorf("cwd %q, want %q", p.cwd, tt.wantCwd)
			}
			if !slices.EqualFunc(p.stages, tt.want, slices.Equal[[]string]) {
				t.Errorf("stages %q, want %q", p.stages, tt.want)
			}
		})
	}
}

// TestPlace: lines shown without numbers are placed only where the file
// holds them in one way.
func TestPlace(t *testing.T) {
	file := []string{"a", "b", "", "c", "b", "", "d"}
	tests := []struct {
		name   string
		groups [][]string
		want   []int
		ok     bool
	}{
		{"unique line", [][]string{{"c"}}, []int{4}, true},
		{"repeated line alone", [][]string{{"b"}}, nil, false},
		{"repeated line pinned by order", [][]string{{"a"}, {"b"}, {"c"}, {"b"}}, []int{1, 2, 4, 5}, true},
		{"run with a repeated blank", [][]string{{"c", "b", ""}}, []int{4}, true},
		{"blank between unique lines", [][]string{{"a"}, {""}, {"c"}}, []int{1, 3, 4}, true},
		{"not in the file", [][]string{{"zzz"}}, nil, false},
		{"out of order", [][]string{{"d"}, {"a"}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := place(file, 1, len(file), tt.groups, false)
			if (why == "") != tt.ok {
				t.Fatalf("reason %q, want ok=%v", why, tt.ok)
			}
			if tt.ok && !slices.Equal(got, tt.want) {
				t.Errorf("starts %v, want %v", got, tt.want)
			}
		})
	}
}

// TestParseGrepArgs: options that keep a line a file line are read, others refuse.
func TestParseGrepArgs(t *testing.T) {
	tests := []struct {
		args []string
		rg   bool
		ok   bool
		want grepSpec
	}{
		{[]string{"-rnC2", "x", "src"}, false, true, grepSpec{operands: []string{"src"}, numbers: true, recursive: true, context: true}},
		{[]string{"-n", "-e", "x", "-e", "y", "f"}, false, true, grepSpec{operands: []string{"f"}, numbers: true}},
		{[]string{"--line-number", "--context=1", "x", "a", "b"}, false, true, grepSpec{operands: []string{"a", "b"}, numbers: true, context: true}},
		{[]string{"-rl", "x", "."}, false, true, grepSpec{operands: []string{"."}, recursive: true, names: true}},
		{[]string{"-n", "--include=*.go", "x", "."}, false, true, grepSpec{operands: []string{"."}, numbers: true}},
		{[]string{"-n", "-B", "x", "f"}, false, false, grepSpec{}},
		{[]string{"-nZ", "x", "f"}, false, false, grepSpec{}},
		{[]string{"-n", "--no-heading", "x"}, true, true, grepSpec{rg: true, recursive: true, numbers: true, noHeading: true}},
		{[]string{"-n"}, false, false, grepSpec{}},
	}
	for _, tt := range tests {
		got, ok := parseGrepArgs(tt.args, tt.rg)
		if ok != tt.ok {
			t.Errorf("%q: ok %v, want %v", tt.args, ok, tt.ok)
			continue
		}
		if ok && !equalSpec(got, tt.want) {
			t.Errorf("%q: %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

func equalSpec(a, b grepSpec) bool {
	return slices.Equal(a.operands, b.operands) && a.rg == b.rg && a.numbers == b.numbers &&
		a.noNumbers == b.noNumbers && a.recursive == b.recursive && a.context == b.context &&
		a.names == b.names && a.count == b.count && a.only == b.only && a.withFile == b.withFile &&
		a.noFile == b.noFile && a.noHeading == b.noHeading && a.heading == b.heading
}

// TestGlobExpansion: an unquoted glob in the last path segment expands
// against the files now, sorted, without dot files; others are refused.
func TestGlobExpansion(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.txt", "a.txt", ".h.txt", "c.md", "sub/d.txt"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		cmd  string
		want []string
		why  string
	}{
		{"cat *.txt", []string{"cat", "a.txt", "b.txt"}, ""},
		{"cat sub/*.txt c.md", []string{"cat", "sub/d.txt", "c.md"}, ""},
		{"cat .*.txt", []string{"cat", ".h.txt"}, ""},
		{"cat ?.md", []string{"cat", "c.md"}, ""},
		{"cat '*.txt'", []string{"cat", "*.txt"}, ""},
		{"cat *.go", nil, "a word the shell would expand"},
		{"cat */d.txt", nil, "a word the shell would expand"},
		{"*.txt", nil, "a word the shell would expand"},
	}
	r := &recognizer{call: Call{Runtime: OpenCode}, files: OS{}}
	for _, tt := range tests {
		p, why := r.parseShell(tt.cmd, dir)
		if why != tt.why {
			t.Errorf("%s: reason %q, want %q", tt.cmd, why, tt.why)
			continue
		}
		if why == "" && !slices.Equal(p.stages[0], tt.want) {
			t.Errorf("%s: argv %q, want %q", tt.cmd, p.stages[0], tt.want)
		}
	}
}
