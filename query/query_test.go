package query

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestCheck: the allowlist accepts read-only searches and listings and
// refuses whatever runs, writes, follows symlinks out or reads stdin.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		stages    [][]string
		ok        bool
		paths     []string
		recursive bool
	}{
		{[][]string{{"grep", "-rl", "TODO", "src"}}, true, []string{"/w/src"}, true},
		{[][]string{{"grep", "-l", "-e", "x", "a.txt", "/w/b.txt"}}, true, []string{"/w/a.txt", "/w/b.txt"}, false},
		{[][]string{{"grep", "-c", "--include=*.go", "-r", "x"}}, true, []string{"/w"}, true},
		{[][]string{{"grep", "-A3", "x", "f"}}, true, []string{"/w/f"}, false},
		{[][]string{{"rg", "-l", "x"}}, true, []string{"/w"}, true},
		{[][]string{{"find", "src", "-name", "*.py"}, {"grep", "pkg"}}, true, []string{"/w/src"}, true},
		{[][]string{{"find", "-type", "f"}, {"sort"}, {"head", "-n", "5"}}, true, []string{"/w"}, true},
		{[][]string{{"ls", "-la", "sub"}}, true, []string{"/w/sub"}, false},
		{[][]string{{"ls", "-R"}}, true, []string{"/w"}, true},
		{[][]string{{"cat", "a", "b"}, {"grep", "-n", "x"}}, true, []string{"/w/a", "/w/b"}, false},
		{[][]string{{"tail", "-n", "5", "c"}, {"grep", "-n", "v"}}, true, []string{"/w/c"}, false},
		{[][]string{{"grep", "-R", "x", "."}}, false, nil, false},                       // follows symlinks
		{[][]string{{"grep", "-f", "/etc/passwd", "."}}, false, nil, false},             // reads another file
		{[][]string{{"grep", "--exclude-from=/etc/x", "-r", "x"}}, false, nil, false},   // same
		{[][]string{{"grep", "x"}}, false, nil, false},                                  // stdin
		{[][]string{{"find", ".", "-exec", "rm", "{}", ";"}}, false, nil, false},        // runs
		{[][]string{{"find", ".", "-delete"}}, false, nil, false},                       // writes
		{[][]string{{"find", ".", "-fprint", "/tmp/x"}}, false, nil, false},             // writes
		{[][]string{{"find", "-L", "."}}, false, nil, false},                            // follows
		{[][]string{{"find", ".", "-mmin", "-5"}}, false, nil, false},                   // the clock
		{[][]string{{"rg", "--pre", "sh", "x"}}, false, nil, false},                     // runs
		{[][]string{{"rg", "-L", "x"}}, false, nil, false},                              // follows
		{[][]string{{"ls", "-L"}}, false, nil, false},                                   // follows
		{[][]string{{"tail", "-f", "log"}}, false, nil, false},                          // never ends
		{[][]string{{"ls"}, {"sort", "-o", "/tmp/x"}}, false, nil, false},               // writes
		{[][]string{{"ls"}, {"uniq", "-", "/tmp/x"}}, false, nil, false},                // writes
		{[][]string{{"ls"}, {"grep", "x", "/etc/passwd"}}, false, nil, false},           // reads a file
		{[][]string{{"ls"}, {"xargs", "rm"}}, false, nil, false},                        // runs
		{[][]string{{"sh", "-c", "ls"}}, false, nil, false},                             // a shell
		{[][]string{{"python3", "-c", "print(1)"}}, false, nil, false},                  // not a query
		{[][]string{{"ls"}, {"grep", "-r", "x"}}, false, nil, false},                    // a filter that searches
		{[][]string{{"cat", "-"}}, false, nil, false},                                   // stdin
		{[][]string{{"head", "--bytes=5", "f"}}, false, nil, false},                     // unknown option
		{[][]string{{"grep", "--color=always", "x", "f"}}, false, nil, false},           // escape codes
		{[][]string{{"grep", "-d", "recurse", "x", "."}}, false, nil, false},            // directory action
		{[][]string{{"grep", "-l", "x", "f"}, {"head", "-n", "-5"}}, false, nil, false}, // negative count
		// find -exec grep and xargs grep: the server runs grep itself.
		{[][]string{{"find", "src", "-name", "*.py", "-exec", "grep", "-l", "x", "{}", ";"}}, true, []string{"/w/src"}, true},
		{[][]string{{"find", ".", "-type", "f", "-exec", "grep", "-c", "x", "{}", "+"}, {"head", "-5"}}, true, []string{"/w"}, true},
		{[][]string{{"find", "src", "-name", "*.py"}, {"xargs", "grep", "-l", "x"}, {"head", "-n", "3"}}, true, []string{"/w/src"}, true},
		{[][]string{{"find", "src", "-print0"}, {"xargs", "-0", "grep", "-L", "x"}}, true, []string{"/w/src"}, true},
		{[][]string{{"grep", "-rl", "x", "src"}, {"grep", "-v", "test"}, {"xargs", "-r", "grep", "-l", "y"}}, true, []string{"/w/src"}, true},
		{[][]string{{"find", ".", "-exec", "grep", "-l", "x", "{}", ";"}, {"xargs", "grep", "-c", "y"}}, true, []string{"/w"}, true},
		{[][]string{{"find", ".", "-exec", "cat", "{}", ";"}}, false, nil, false},                                       // runs a program other than grep
		{[][]string{{"find", ".", "-exec", "grep", "-l", "x", "{}", ";", "-print"}}, false, nil, false},                 // two outputs, -exec not last
		{[][]string{{"find", ".", "-print", "-exec", "grep", "-l", "x", "{}", "+"}}, false, nil, false},                 // two outputs
		{[][]string{{"find", ".", "-exec", "grep", "-l", "x", "{}", "/etc/passwd", ";"}}, false, nil, false},            // {} not last
		{[][]string{{"find", ".", "-exec", "grep", "-l", "-f", "/etc/passwd", "{}", "+"}}, false, nil, false},           // grep reads another file
		{[][]string{{"find", ".", "-exec", "grep", "-rl", "x", "{}", "+"}}, false, nil, false},                          // recursion: find names the files
		{[][]string{{"find", ".", "-execdir", "grep", "-l", "x", "{}", "+"}}, false, nil, false},                        // -execdir
		{[][]string{{"find", ".", "-exec", "grep", "-l", "x", "{}", ";", "-exec", "rm", "{}", ";"}}, false, nil, false}, // a second program
		{[][]string{{"find", "."}, {"xargs", "rm"}}, false, nil, false},                                                 // runs
		{[][]string{{"find", "."}, {"xargs", "-I", "{}", "grep", "x", "{}"}}, false, nil, false},                        // an xargs option
		{[][]string{{"find", "."}, {"xargs", "grep", "-l", "x", "/etc/passwd"}}, false, nil, false},                     // a file of its own
		{[][]string{{"cat", "list"}, {"xargs", "grep", "-l", "x"}}, false, nil, false},                                  // names from a file's text
		{[][]string{{"find", "."}, {"uniq", "-c"}, {"xargs", "grep", "-l", "x"}}, false, nil, false},                    // counts, not names
		{[][]string{{"grep", "-rn", "x", "."}, {"xargs", "grep", "-l", "y"}}, false, nil, false},                        // lines, not names
		{[][]string{{"find", "."}, {"xargs", "grep", "-c", "x"}, {"xargs", "grep", "-l", "y"}}, false, nil, false},      // counts, not names
	} {
		sc, err := Spec{Cwd: "/w", Stages: tc.stages}.Check()
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok %v", tc.stages, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Errorf("%q: %v does not wrap ErrRefused", tc.stages, err)
			}
			continue
		}
		if !reflect.DeepEqual(sc.Paths, tc.paths) || sc.Recursive != tc.recursive {
			t.Errorf("%q: scope %+v, want %q recursive %v", tc.stages, sc, tc.paths, tc.recursive)
		}
	}
}

// TestURIRoundTrip: a spec written as a URI parses back to itself, with
// arguments holding the characters a query gives meaning to.
func TestURIRoundTrip(t *testing.T) {
	for _, s := range []Spec{
		{Cwd: "/w", Stages: [][]string{{"grep", "-rl", "a&b=c#d%e+f?g h", "src"}}},
		{Cwd: "/w/dir with space/ü", Stages: [][]string{{"find", ".", "-name", "*.py"}, {"grep", "-v", "test"}}, Screen: true},
		{Cwd: "/", Stages: [][]string{{"rg", "-l", "x"}}, Sorted: true, Screen: true},
		{Cwd: "/w", Stages: [][]string{{"grep", "-l", "", "f"}}},
	} {
		u := s.URI()
		if !strings.HasPrefix(u, "query:///") {
			t.Errorf("%+v: uri %q", s, u)
		}
		got, err := Parse(u)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("%q: parsed %+v %v, want %+v", u, got, err, s)
		}
	}
}

// TestParseRefuses: malformed URIs are clear errors.
func TestParseRefuses(t *testing.T) {
	for _, u := range []string{
		"query:relative?run=ls", "file:///w?run=ls", "query:///w", "query:///w?arg=x", "query:///w?run=ls&bogus=1",
		"query:///w?run=ls&sorted=2", "query:///w?run=ls&screen=1&run=grep", "query:///w?run=ls#x", "query://host/w?run=ls",
		"query:///w?run=ls&arg=%00", "query:///w?run=ls&arg=%zz",
	} {
		if _, err := Parse(u); err == nil {
			t.Errorf("%q parsed", u)
		}
	}
}

// TestText: the content of an output, as shown on a terminal screen.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		s        Spec
		out, txt string
	}{
		{Spec{}, "a\nb\n", "a\nb"},
		{Spec{}, "a\nb", "a\nb"},
		{Spec{Sorted: true}, "b\na\n", "a\nb"},
		{Spec{Screen: true}, "a\tb  \nc\n\n", "a       b\nc"},
		{Spec{}, "", ""},
	} {
		if got := tc.s.Text(tc.out); got != tc.txt {
			t.Errorf("%+v %q: %q, want %q", tc.s, tc.out, got, tc.txt)
		}
	}
}
