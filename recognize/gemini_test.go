package recognize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/recognize"
)

// These were the binding's own (bindings/python/concord_openhands/fallback.py)
// until the recognizer knew them; the outputs are the tools' formats
// (bindings/python/tests/formats.py).

func readFileOut(path string, lines []string, start int, finalNewline bool) string {
	var b strings.Builder
	b.WriteString("Read file: " + path + "\n\n")
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d  %s", start+i, l)
		if i < len(lines)-1 || finalNewline {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func catN(path string, lines []string, start int) string {
	var b strings.Builder
	b.WriteString("Here's the result of running `cat -n` on " + path + ":\n")
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", start+i, l)
	}
	return b.String()
}

func numberedLines(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("l%d", i))
	}
	return out
}

func recognizeCall(t *testing.T, tool string, args map[string]any, output, cwd string) recognize.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recognize.Recognize(context.Background(),
		recognize.Call{Runtime: recognize.OpenHands, Tool: tool, Args: raw, Output: output, Cwd: cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReadFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   map[string]any
		out    string
		want   recognize.Part
		ranged bool
	}{
		{"whole", map[string]any{"file_path": "/w/b.txt"}, readFileOut("/w/b.txt", []string{"one", "  two"}, 1, true),
			recognize.Part{Path: "/w/b.txt", Text: "one\n  two"}, false},
		{"no final newline", map[string]any{"file_path": "/w/b.txt"}, readFileOut("/w/b.txt", []string{"one", "two"}, 1, false),
			recognize.Part{Path: "/w/b.txt", Text: "one\ntwo"}, false},
		{"offset", map[string]any{"file_path": "b.txt", "offset": 2}, readFileOut("/w/b.txt", []string{"c", "d"}, 3, true),
			recognize.Part{Path: "/w/b.txt", Start: 3, End: 4, Text: "c\nd"}, true},
		{"empty file", map[string]any{"file_path": "/w/e.txt"}, readFileOut("/w/e.txt", nil, 1, true),
			recognize.Part{Path: "/w/e.txt"}, false},
		{"relative, header relative", map[string]any{"file_path": "b.txt"}, readFileOut("b.txt", []string{"x"}, 1, true),
			recognize.Part{Path: "/w/b.txt", Text: "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := recognizeCall(t, "read_file", tc.args, tc.out, "/w")
			if res.Kind != recognize.KindRead || len(res.Parts) != 1 {
				t.Fatalf("got %+v", res)
			}
			if got := res.Parts[0]; got != tc.want {
				t.Errorf("part %+v, want %+v", got, tc.want)
			}
			if got := res.Render(res.Parts); got != tc.out {
				t.Errorf("renders back as %q, want %q", got, tc.out)
			}
		})
	}
}

func TestReadFileNot(t *testing.T) {
	for _, out := range []string{"", "Read file: /w/a", "Read file: /w/a\n\n     1  a\n     3  c\n", "plain",
		"Read file: /w/a\n\n     1\ta\n"} {
		if res := recognizeCall(t, "read_file", map[string]any{"file_path": "/w/a"}, out, "/w"); res.Kind != recognize.KindEvent {
			t.Errorf("%q: %s, want an event", out, res.Kind)
		}
	}
}

// A paged read's header follows the file: it names the new total, or
// nothing when the read now reaches the end.
func TestReadFileHeaderFollowsTotalLines(t *testing.T) {
	const paged = "Read file: /w/a.py (showing lines 1-100 of 200) To read more, use: read_file(file_path='a.py', offset=100, limit=100)\n\n"
	orig := strings.Replace(readFileOut("/w/a.py", numberedLines(1, 100), 1, true), "Read file: /w/a.py\n\n", paged, 1)
	res := recognizeCall(t, "read_file", map[string]any{"file_path": "a.py"}, orig, "/w")
	if res.Kind != recognize.KindRead || res.Parts[0] != (recognize.Part{Path: "/w/a.py", Start: 1, End: 100, Text: strings.Join(numberedLines(1, 100), "\n")}) {
		t.Fatalf("got %+v", res)
	}
	if got := res.Render(res.Parts); got != orig {
		t.Fatalf("renders back as %q", got)
	}
	for _, tc := range []struct {
		start, end, total int
		header            string
	}{
		{1, 100, 250, "Read file: /w/a.py (showing lines 1-100 of 250) To read more, use: read_file(file_path='a.py', offset=100, limit=100)\n\n"},
		{1, 100, 100, "Read file: /w/a.py\n\n"},
		{3, 102, 300, "Read file: /w/a.py (showing lines 3-102 of 300) To read more, use: read_file(file_path='a.py', offset=102, limit=100)\n\n"},
	} {
		lines := numberedLines(tc.start, tc.end)
		p := recognize.Part{Path: "/w/a.py", Start: tc.start, End: tc.end, Text: strings.Join(lines, "\n"), Total: tc.total}
		want := tc.header + strings.TrimPrefix(readFileOut("", lines, tc.start, true), "Read file: \n\n")
		if got := res.Render([]recognize.Part{p}); got != want {
			t.Errorf("%d-%d of %d: got\n%q\nwant\n%q", tc.start, tc.end, tc.total, got, want)
		}
	}
}

func TestGeminiWrites(t *testing.T) {
	patch := strings.Join([]string{"*** Begin Patch", "*** Update File: config.txt", "@@", "-a", "+b",
		"*** Add File: /abs/new.txt", "+x", "*** Update File: old.txt", "*** Move to: moved.txt",
		"*** Update File: config.txt", "*** End Patch"}, "\n")
	for _, tc := range []struct {
		tool string
		args map[string]any
		cwd  string
		want []string
	}{
		{"write_file", map[string]any{"file_path": "/w/new.txt", "content": "x"}, "", []string{"/w/new.txt"}},
		{"edit", map[string]any{"file_path": "sub/a.py", "old_string": "a", "new_string": "b"}, "/w", []string{"/w/sub/a.py"}},
		{"apply_patch", map[string]any{"patch": patch}, "/w", []string{"/w/config.txt", "/abs/new.txt", "/w/old.txt", "/w/moved.txt"}},
	} {
		res := recognizeCall(t, tc.tool, tc.args, "done", tc.cwd)
		if res.Kind != recognize.KindWrite || strings.Join(res.Writes, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: got %s %v, want writes %v", tc.tool, res.Kind, res.Writes, tc.want)
		}
	}
	// Without a working directory a relative path names no file.
	if res := recognizeCall(t, "edit", map[string]any{"file_path": "a.py"}, "done", ""); res.Kind != recognize.KindEvent {
		t.Errorf("a relative edit without cwd: %s", res.Kind)
	}
	if res := recognizeCall(t, "apply_patch", map[string]any{"patch": "nothing"}, "done", "/w"); res.Kind != recognize.KindEvent {
		t.Errorf("a patch naming no file: %s", res.Kind)
	}
}

// file_editor's "only N lines" note before a view_range past the end stays
// true for the lines the view shows now.
func TestPastEOFNoteFollowsTotalLines(t *testing.T) {
	note := func(n int) string {
		return fmt.Sprintf("NOTE: We only show up to %d since there're only %d lines in this file.\n", n, n)
	}
	args := map[string]any{"command": "view", "path": "/w/a.py", "view_range": []int{15, 40}}
	orig := note(20) + catN("/w/a.py", numberedLines(15, 20), 15)
	res := recognizeCall(t, "file_editor", args, orig, "")
	if res.Kind != recognize.KindRead {
		t.Fatalf("got %+v", res)
	}
	if got := res.Render(res.Parts); got != orig {
		t.Fatalf("renders back as %q", got)
	}
	for _, tc := range []struct{ newEnd, total, want int }{
		{25, 25, 25}, // grew, still short of what was asked: the new total
		{40, 45, 0},  // grew past what was asked: the note would be false
		{25, 0, 25},  // no total: the range ran to the new end
		{18, 18, 18}, // shrank
	} {
		lines := numberedLines(15, tc.newEnd)
		p := recognize.Part{Path: "/w/a.py", Start: 15, End: tc.newEnd, Text: strings.Join(lines, "\n"), Total: tc.total}
		want := catN("/w/a.py", lines, 15)
		if tc.want != 0 {
			want = note(tc.want) + want
		}
		if got := res.Render([]recognize.Part{p}); got != want {
			t.Errorf("%+v: got\n%q\nwant\n%q", tc, got, want)
		}
	}
}

// A clipped view repaired keeps its complete lines and the clip notice; the
// cut line and the tail were old text at old numbers.
func TestClippedViewKeepsTheNotice(t *testing.T) {
	const notice = "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you.</NOTE>"
	for _, tc := range []struct{ name, tail string }{
		{"cut in a line", "     3\tthi" + notice + "ail of the file\n     4\tlast\n"},
		{"cut at a line end", notice + "\n     4\tlast\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := catN("/w/huge", []string{"first", "second"}, 1) + tc.tail
			res := recognizeCall(t, "file_editor", map[string]any{"command": "view", "path": "/w/huge"}, orig, "")
			if res.Kind != recognize.KindRead || res.Parts[0] != (recognize.Part{Path: "/w/huge", Start: 1, End: 2, Text: "first\nsecond"}) {
				t.Fatalf("got %+v", res)
			}
			if got := res.Render(res.Parts); got != orig {
				t.Fatalf("renders back as %q", got)
			}
			p := res.Parts[0]
			p.Text = "FIRST\nsecond"
			want := catN("/w/huge", []string{"FIRST", "second"}, 1) + notice + "\n"
			if got := res.Render([]recognize.Part{p}); got != want {
				t.Errorf("got\n%q\nwant\n%q", got, want)
			}
		})
	}
}
