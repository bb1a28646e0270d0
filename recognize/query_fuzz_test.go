package recognize_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/recognize"
)

// FuzzQuery: a query result names one source whose URI parses back to a
// pipeline the allowlist accepts, run in the call's directory, and its
// unchanged text renders back as the output the model was shown.
func FuzzQuery(f *testing.F) {
	seedFromCorpus(f)
	f.Add(uint8(0), "grep -rl TODO src", "src/main.go", 0)
	f.Add(uint8(1), "find . -name '*.go' | grep main | sort", "./src/main.go\n", 0)
	f.Add(uint8(0), "ls a.txt noeol", "a.txt  noeol", 0)
	f.Add(uint8(1), "cat a.txt noeol | grep -n a", "1:alpha\n", 0)
	f.Add(uint8(1), "rg -l beta", "a.txt\n", 0)
	f.Add(uint8(0), "find . -name '*.txt' -exec grep -l a {} \\;", "./a.txt", 0)
	f.Add(uint8(1), "find . -type f -exec grep -c a {} + | sort", "./a.txt:1\n", 0)
	f.Add(uint8(1), "find . -name '*.txt' -print0 | xargs -0 grep -L beta", "./noeol.txt\n", 0)
	f.Add(uint8(0), "cd /ws && grep -rl a . | xargs grep -l b | head -5", "./a.txt", 0)
	files := fuzzWorkspace()
	f.Fuzz(func(t *testing.T, tool uint8, command, output string, exit int) {
		call := fuzzCall(tool%2, command, output, exit)
		slow := time.AfterFunc(5*time.Second, func() { panic("recognize took over 5s: " + command) })
		res, err := recognize.Recognize(context.Background(), call, files)
		slow.Stop()
		if err != nil || res.Kind != recognize.KindQuery {
			return
		}
		if len(res.Parts) != 1 {
			t.Fatalf("a query with %d parts", len(res.Parts))
		}
		p := res.Parts[0]
		s, err := query.Parse(p.URI)
		if err != nil {
			t.Fatalf("uri %q: %v", p.URI, err)
		}
		if _, err := s.Check(); err != nil {
			t.Fatalf("uri %q is off the allowlist: %v", p.URI, err)
		}
		if s.Cwd != p.Path || !strings.HasPrefix(s.Cwd, "/ws") {
			t.Fatalf("uri %q runs in %q, part path %q", p.URI, s.Cwd, p.Path)
		}
		if p.Text == "" {
			t.Fatalf("a query registered with no text: %q", output)
		}
		got, want := res.Render(res.Parts), output
		if call.Tool == "terminal" {
			got, want = screenText(got), screenText(want)
		}
		if got != want {
			t.Fatalf("renders back as %q, want %q", got, want)
		}
	})
}
