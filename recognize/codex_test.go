package recognize

import (
	"strings"
	"testing"
)

func TestParseCodexExec(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		ok      bool
		exit    int
		running bool
		body    string
	}{
		{"exited", "Chunk ID: 1a\nWall time: 0.2 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nx\ny\n", true, 0, false, "x\ny\n"},
		{"failed", "Chunk ID: 1a\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 11\nOutput:\ncat: m: No such file or directory\n", true, 1, false, "cat: m: No such file or directory\n"},
		{"running", "Chunk ID: a\nWall time: 0.25 seconds\nProcess running with session ID 13575\nOriginal token count: 0\nOutput:\n", true, 0, true, ""},
		{"output looks like a header", "Process exited with code 0\nOutput:\nOutput:\nProcess exited with code 3\n", true, 0, false, "Output:\nProcess exited with code 3\n"},
		{"no exit line", "Chunk ID: 1\nOutput:\nx\n", false, 0, false, ""},
		{"two exit lines", "Process exited with code 0\nProcess exited with code 1\nOutput:\n", false, 0, false, ""},
		{"an unknown line", "Exit code: 0\nOutput:\nx\n", false, 0, false, ""},
		{"no Output line", "Process exited with code 0\n", false, 0, false, ""},
		{"not a number", "Process exited with code x\nOutput:\n", false, 0, false, ""},
		{"raw output", "alpha\nbeta\n", false, 0, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, ok := parseCodexExec(tc.out)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if x.exit != tc.exit || x.running != tc.running || x.body != tc.body || x.head+x.body != tc.out {
				t.Errorf("got %+v", x)
			}
		})
	}
}

func TestCodexCut(t *testing.T) {
	for out, cut := range map[string]bool{
		"Warning: truncated output (original token count: 42224)\nTotal output lines: 30000\n\n1\n": true,
		"1\n2\n…42124 tokens truncated…7\n29968\n":                                                  true,
		"alpha\nWarning: truncated output (original token count: 1)\n":                              false,
		"…tokens truncated…": false,
	} {
		if cxCut(out) != cut {
			t.Errorf("cxCut(%q) = %v", out, !cut)
		}
	}
}

// FuzzCodexExec: the header parse never panics, and what it accepts splits
// the output exactly into its header and the command's output.
func FuzzCodexExec(f *testing.F) {
	f.Add("Chunk ID: 1a\nWall time: 0.2 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nx\ny\n")
	f.Add("Chunk ID: a\nWall time: 0.25 seconds\nProcess running with session ID 13575\nOriginal token count: 0\nOutput:\n")
	f.Add("Process exited with code -1\nOutput:\n")
	f.Fuzz(func(t *testing.T, out string) {
		x, ok := parseCodexExec(out)
		if !ok {
			return
		}
		if x.head+x.body != out || !strings.HasSuffix(x.head, "\nOutput:\n") && x.head != "Output:\n" {
			t.Fatalf("split %q into %q + %q", out, x.head, x.body)
		}
		if x.running && x.exit != 0 {
			t.Fatalf("running with an exit code: %+v", x)
		}
	})
}
