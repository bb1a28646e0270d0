package query

import (
	"reflect"
	"strings"
	"testing"
)

// TestFindExecAndXargs: the grep a find -exec or an xargs stage runs, and
// find's own arguments with -print0 where the clause stood.
func TestFindExecAndXargs(t *testing.T) {
	find, g, ok := FindExec([]string{"find", "src", "-name", "*.py", "-exec", "grep", "-l", "x", "{}", ";"})
	want := GrepRun{Argv: []string{"grep", "-l", "x"}, Each: true, Null: true, NoEmpty: true, Names: true}
	if !ok || !reflect.DeepEqual(find, []string{"find", "src", "-name", "*.py", "-print0"}) || !reflect.DeepEqual(g, want) {
		t.Errorf("FindExec ;: %q %+v %v", find, g, ok)
	}
	_, g, ok = FindExec([]string{"find", ".", "-exec", "grep", "-c", "x", "{}", "+"})
	if !ok || g.Each || g.Names || !reflect.DeepEqual(g.Argv, []string{"grep", "-c", "x"}) {
		t.Errorf("FindExec +: %+v %v", g, ok)
	}
	for _, argv := range [][]string{{"find", "."}, {"find", ".", "-exec", "cat", "{}", ";"}, {"find", ".", "-exec", "grep", "x", "{}", "a", ";"}, {"find", ".", "-exec", "grep", "{}"}} {
		if _, _, ok := FindExec(argv); ok {
			t.Errorf("FindExec %q: ok", argv)
		}
	}
	g, ok = Xargs([]string{"xargs", "-0", "-r", "grep", "-L", "x"})
	if !ok || !g.Null || !g.NoEmpty || !g.Names || g.Each {
		t.Errorf("Xargs: %+v %v", g, ok)
	}
	for _, argv := range [][]string{{"xargs"}, {"xargs", "cat"}, {"xargs", "-n1", "grep", "x"}, {"xargs", "-I{}", "grep", "x", "{}"}} {
		if _, ok := Xargs(argv); ok {
			t.Errorf("Xargs %q: ok", argv)
		}
	}
}

// TestBatches: xargs and find -exec + fill command lines up to ArgMax
// (GNU's 128 KiB, measured); find's ; is batched with -h, which prints
// what one grep per file prints, except with context groups (one run per
// file) or -H (names anyway).
func TestBatches(t *testing.T) {
	name := "./" + strings.Repeat("n", 106) // 109 bytes with its NUL, as measured: 1202 a line
	names := make([]string, 3000)
	for i := range names {
		names[i] = name
	}
	g := GrepRun{Argv: []string{"grep", "-c", "x"}}
	var sizes []int
	for _, b := range g.Batches(names) {
		sizes = append(sizes, len(b)-3)
	}
	// grep -c x: 5+3+2 = 10 bytes; (131072-10)/109 = 1202.4.
	if !reflect.DeepEqual(sizes, []int{1202, 1202, 596}) {
		t.Errorf("batches of %v names, want 1202, 1202, 596", sizes)
	}
	for _, tc := range []struct {
		g    GrepRun
		in   []string
		want [][]string
	}{
		{GrepRun{Argv: []string{"grep", "-l", "x"}, Each: true, NoEmpty: true}, []string{"a", "b"}, [][]string{{"grep", "-l", "x", "-h", "a", "b"}}},
		{GrepRun{Argv: []string{"grep", "-Hc", "x"}, Each: true, NoEmpty: true}, []string{"a", "b"}, [][]string{{"grep", "-Hc", "x", "a", "b"}}},
		{GrepRun{Argv: []string{"grep", "-A1", "x"}, Each: true, NoEmpty: true}, []string{"a", "b"}, [][]string{{"grep", "-A1", "x", "a"}, {"grep", "-A1", "x", "b"}}},
		{GrepRun{Argv: []string{"grep", "-e", "-A", "f"}, Each: true, NoEmpty: true}, []string{"a"}, [][]string{{"grep", "-e", "-A", "f", "-h", "a"}}},
		{GrepRun{Argv: []string{"grep", "-L", "x"}}, nil, [][]string{{"grep", "-L", "x"}}}, // xargs runs grep once on no names
		{GrepRun{Argv: []string{"grep", "-L", "x"}, NoEmpty: true}, nil, nil},
	} {
		if got := tc.g.Batches(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v over %q: %q, want %q", tc.g, tc.in, got, tc.want)
		}
	}
}

// TestSplitNames: names as xargs reads them; quoting xargs would undo is
// refused, not guessed.
func TestSplitNames(t *testing.T) {
	for _, tc := range []struct {
		null bool
		in   string
		want []string
		ok   bool
	}{
		{false, "a.py\nsrc/b c.py\n", []string{"a.py", "src/b", "c.py"}, true},
		{false, "\n\n", nil, true},
		{false, "it's\n", nil, false},
		{false, `a\b` + "\n", nil, false},
		{true, "a b\x00c\nd\x00", []string{"a b", "c\nd"}, true},
		{true, "", nil, true},
	} {
		got, err := GrepRun{Null: tc.null}.SplitNames([]byte(tc.in))
		if (err == nil) != tc.ok || tc.ok && strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q (null %v): %q %v", tc.in, tc.null, got, err)
		}
	}
}

// FuzzGrepRun: any argv is read or refused without a panic; the batches
// hold every name once, in order, each line within ArgMax unless one name
// alone passes it; Check accepts only a grep without file operands.
func FuzzGrepRun(f *testing.F) {
	f.Add("find\x00src\x00-exec\x00grep\x00-l\x00x\x00{}\x00;", "a\x00b\x00")
	f.Add("xargs\x00-0\x00grep\x00-c\x00x", "a\x00b c\x00")
	f.Add("xargs\x00grep\x00-A1\x00x", "a b\nc\n")
	f.Add("find\x00.\x00-exec\x00grep\x00-Hn\x00-e\x00{}\x00{}\x00+", "")
	f.Fuzz(func(t *testing.T, argv, in string) {
		args := strings.Split(argv, "\x00")
		var g GrepRun
		var ok bool
		if args[0] == "find" {
			_, g, ok = FindExec(args)
		} else {
			g, ok = Xargs(args)
		}
		if !ok {
			return
		}
		if _, err := (Spec{Cwd: "/w", Stages: [][]string{{"find", "."}, append([]string{"xargs"}, g.Argv...)}}).Check(); err == nil {
			if _, files, _ := strings.Cut(strings.Join(g.Argv, "\x00"), "{}"); files != "" {
				t.Fatalf("%q: accepted with {} among grep's arguments", g.Argv)
			}
		}
		names, err := g.SplitNames([]byte(in))
		if err != nil {
			return
		}
		var back []string
		for _, b := range g.Batches(names) {
			if !reflect.DeepEqual(b[:len(g.Argv)], g.Argv) {
				t.Fatalf("batch %q does not start with %q", b, g.Argv)
			}
			rest := b[len(g.Argv):]
			if len(rest) > 0 && rest[0] == "-h" && g.Each {
				rest = rest[1:]
			}
			size := 0
			for _, a := range b {
				size += len(a) + 1
			}
			if size > ArgMax && len(rest) > 1 {
				t.Fatalf("a batch of %d bytes", size)
			}
			back = append(back, rest...)
		}
		if len(names) > 0 && !reflect.DeepEqual(back, names) {
			t.Fatalf("batches hold %q, want %q", back, names)
		}
	})
}
