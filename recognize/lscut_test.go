package recognize_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/recognize"
)

// clip is openhands-sdk 1.58.2's DEFAULT_TRUNCATE_NOTICE, which its
// terminal puts where it cut an output's middle (the captured corpus
// openhands-shapes holds a real one).
const clip = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"

// TestLsRecursiveCut cuts the real output of ls -R at many places, as
// OpenHands' terminal does (head, notice, tail), and checks what is
// tracked: exactly the sections shown in full (from the header to the
// next header, whole, on one side of the cut, or ending the output), each
// as its directory's listing, whose text is the directory's entries now.
func TestLsRecursiveCut(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"a/x.txt", "a/y.txt", "a/b/z.txt", "c/w.txt", "c/d/e/f.txt", "g.txt", "h/.hidden"} {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ls := exec.Command("ls", "-R")
	ls.Dir = ws
	raw, err := ls.Output()
	if err != nil {
		t.Skipf("ls -R: %v", err)
	}
	out := strings.TrimSpace(string(raw))
	// The sections and where they lie in out.
	type section struct {
		dir        string
		start, end int // the section's text; end+2 starts the next header
	}
	var secs []section
	at := 0
	for _, s := range strings.Split(out, "\n\n") {
		header, _, _ := strings.Cut(s, "\n")
		secs = append(secs, section{filepath.Join(ws, strings.TrimSuffix(header, ":")), at, at + len(s)})
		at += len(s) + 2
	}
	zero := 0
	cases := 0
	for h := 0; h <= len(out); h += 3 {
		for tl := 0; h+tl <= len(out); tl += 5 {
			head, tail := out[:h], out[len(out)-tl:]
			var want []string
			for i, s := range secs {
				inHead := i+1 < len(secs) && strings.Contains(out[s.end+2:], "\n") && s.end+2+strings.Index(out[s.end+2:], "\n")+1 <= h
				inTail := s.start-2 >= len(out)-tl
				if inHead || inTail {
					want = append(want, s.dir)
				}
			}
			args, _ := json.Marshal(map[string]string{"command": "ls -R"})
			res, err := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.OpenHands, Tool: "terminal",
				Args: args, Output: head + clip + tail, ExitCode: &zero, Cwd: ws}, recognize.OS{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range res.Parts {
				got = append(got, p.Path)
				if p.Text != listing(t, p.Path) || p.URI != "file://"+p.Path+"?depth=1" {
					t.Errorf("cut %d+%d: part %s %q, want the directory's entries %q", h, tl, p.URI, p.Text, listing(t, p.Path))
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("cut %d+%d (%s): tracked %q, want %q (%s)", h, tl, res.Kind, got, want, res.Reason)
			}
			if len(want) == 0 && res.Kind != recognize.KindEvent {
				t.Errorf("cut %d+%d: %s with nothing shown in full", h, tl, res.Kind)
			}
			cases++
		}
	}
	t.Logf("%d cuts of a %d-byte ls -R", cases, len(out))
}

// listing is a directory's canonical depth-1 listing without hidden names.
func listing(t *testing.T, dir string) string {
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		n := de.Name()
		if de.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "\n")
}
