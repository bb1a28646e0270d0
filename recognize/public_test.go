package recognize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/recognize"
)

// publicCorpus is the public set of agent commands (testdata/recognize/public,
// made by extract.py from permissively licensed trajectories). Only the
// commands are kept: their files and outputs are not reproducible, so the
// golden is the recognizer's decision about each command (recognize.Classify).
const (
	publicCorpus = "../testdata/recognize/public/commands.json"
	publicGolden = "../testdata/recognize/public/commands.golden.json"
	// publicCwd is where the trajectories' commands ran (SWE-bench's /testbed).
	publicCwd = "/testbed"
)

type publicCommand struct {
	Command string `json:"command"`
	Source  string `json:"source"`
	License string `json:"license"`
}

// publicOutcome is one command's classification as the golden holds it.
type publicOutcome struct {
	Command string `json:"command"`
	recognize.Intent
}

// publicGoldenFile: the shares per kind and the commonest shapes left
// untracked among commands that name a read program, then every outcome.
type publicGoldenFile struct {
	Commands int            `json:"commands"`
	Shares   map[string]int `json:"shares"`
	// ShellWrites: untracked commands that write a file by their shape.
	ShellWrites int `json:"shellWrites"`
	// ReadLike: commands that look like reads (readLike, not a shell
	// write); ReadLikeTracked: those recognized as a read, a listing or a
	// query source (the share issue 34 asks to raise).
	ReadLike        int             `json:"readLike"`
	ReadLikeTracked int             `json:"readLikeTracked"`
	Left            []shapeCount    `json:"leftReadLike"`
	Outcomes        []publicOutcome `json:"outcomes"`
}

type shapeCount struct {
	Shape string `json:"shape"`
	Count int    `json:"count"`
}

func loadPublic() ([]publicCommand, error) {
	data, err := os.ReadFile(publicCorpus)
	if err != nil {
		return nil, err
	}
	var cs []publicCommand
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w", publicCorpus, err)
	}
	return cs, nil
}

// readLike: a statement of the command (not a later pipeline stage)
// starts with a program whose output can be file content. shellWrite: the
// command writes a file by its shape (a heredoc, > or >>, sed -i, tee; a
// heuristic: a > inside a quoted script counts too). The terminal
// recognizer never calls a command a write (fsnotify sees what it wrote),
// so these are counted apart.
var (
	readLike   = regexp.MustCompile(`(^|&&|;|\|\||\n)\s*(cat|head|tail|sed|nl|grep|rg|ls|find)\s`)
	shellWrite = regexp.MustCompile(`<<|(^|[^0-9&2])>>?\s*[^&\s/=]|\bsed\s+-i|\btee\s`)
)

// position strips a parse error's line:column, so equal errors group.
var position = regexp.MustCompile(`\d+:\d+: `)

func classifyPublic(t *testing.T) publicGoldenFile {
	cs, err := loadPublic()
	if err != nil {
		t.Fatal(err)
	}
	g := publicGoldenFile{Commands: len(cs), Shares: map[string]int{}}
	left := map[string]int{}
	seen := map[string]bool{}
	for _, c := range cs {
		if c.Command == "" || c.Source == "" || c.License == "" {
			t.Fatalf("entry %q: every command records its source and license", c.Command)
		}
		if seen[c.Command] {
			t.Fatalf("command %q twice: the corpus is deduplicated", c.Command)
		}
		seen[c.Command] = true
		in := recognize.Classify(c.Command, publicCwd)
		agree(t, c.Command, in)
		g.Shares[string(in.Kind)]++
		g.Outcomes = append(g.Outcomes, publicOutcome{Command: c.Command, Intent: in})
		untracked := in.Kind == recognize.KindEvent || in.Kind == recognize.KindUnparsed
		write := shellWrite.MatchString(c.Command)
		if untracked && write {
			g.ShellWrites++
		}
		if !write && readLike.MatchString(c.Command) {
			g.ReadLike++
			if !untracked {
				g.ReadLikeTracked++
			}
		}
		if untracked && !write && readLike.MatchString(c.Command) {
			shape := string(in.Kind) + ": "
			if in.Format != "" {
				shape += in.Format + ": "
			}
			left[shape+position.ReplaceAllString(in.Reason, "")]++
		}
	}
	for s, n := range left {
		g.Left = append(g.Left, shapeCount{s, n})
	}
	sort.Slice(g.Left, func(i, j int) bool {
		if g.Left[i].Count != g.Left[j].Count {
			return g.Left[i].Count > g.Left[j].Count
		}
		return g.Left[i].Shape < g.Left[j].Shape
	})
	return g
}

// agree checks a classification against Recognize itself where the two
// decide alike without files: an OpenCode bash call with no output and no
// workspace. A command the parse refuses, and a program that is never file
// content, are the same event in both (same reason); anything else
// Recognize cannot confirm without the files and the output.
func agree(t *testing.T, command string, in recognize.Intent) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	zero := 0
	res, err := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.OpenCode, Tool: "bash",
		Args: args, ExitCode: &zero, Cwd: publicCwd}, nil)
	if err != nil {
		t.Fatalf("%q: %v", command, err)
	}
	switch {
	case in.Kind == recognize.KindUnparsed:
		if res.Kind != recognize.KindEvent || res.Reason != in.Reason {
			t.Errorf("%q: classified unparsed (%s), recognized %s (%s)", command, in.Reason, res.Kind, res.Reason)
		}
	case in.Kind == recognize.KindEvent && strings.HasPrefix(in.Reason, "a program whose output"):
		if res.Kind != recognize.KindEvent || res.Format != in.Format || res.Reason != in.Reason {
			t.Errorf("%q: classified %+v, recognized %s %s (%s)", command, in, res.Kind, res.Format, res.Reason)
		}
	case res.Kind == recognize.KindRead || res.Kind == recognize.KindListing:
		// Nothing shown can be a read only of empty files, which no
		// workspace holds here.
		t.Errorf("%q: recognized a %s without files", command, res.Kind)
	}
}

// TestPublicCorpus classifies every public command and compares with the
// golden file (-update rewrites it, as for TestGolden).
func TestPublicCorpus(t *testing.T) {
	g := classifyPublic(t)
	if g.Commands < 100 {
		t.Fatalf("%d commands: the public corpus is a few hundred", g.Commands)
	}
	data, err := json.MarshalIndent(g, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	var b strings.Builder
	for _, k := range []recognize.Kind{recognize.KindRead, recognize.KindListing, recognize.KindQuery, recognize.KindWrite, recognize.KindEvent, recognize.KindUnparsed} {
		fmt.Fprintf(&b, "| %s | %d | %.1f%% |\n", k, g.Shares[string(k)], 100*float64(g.Shares[string(k)])/float64(g.Commands))
	}
	t.Logf("public corpus, %d commands:\n| kind | commands | share |\n|---|---:|---:|\n%s(untracked shell writes: %d)\nread-like commands tracked: %d of %d (%.1f%%)",
		g.Commands, b.String(), g.ShellWrites, g.ReadLikeTracked, g.ReadLike, 100*float64(g.ReadLikeTracked)/float64(g.ReadLike))
	if *update {
		if err := os.WriteFile(publicGolden, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(publicGolden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(data, want) {
		var old publicGoldenFile
		_ = json.Unmarshal(want, &old)
		for i, o := range g.Outcomes {
			if i < len(old.Outcomes) && fmt.Sprint(old.Outcomes[i]) != fmt.Sprint(o) {
				t.Errorf("first change: %q was %+v, now %+v", o.Command, old.Outcomes[i].Intent, o.Intent)
				break
			}
		}
		t.Errorf("%s differs from the classification; run `go test ./recognize -run TestPublicCorpus -update` and review the diff", publicGolden)
	}
}

// TestClassify pins the classification of each shape on its own, so the
// golden's numbers rest on decisions checked here.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		command string
		kind    recognize.Kind
		files   string
		window  string
		dir     string
	}{
		{"cat src/a.py", recognize.KindRead, "/testbed/src/a.py", "all", ""},
		{"cd /repo && sed -n '10,20p' a.py", recognize.KindRead, "/repo/a.py", "10-20", ""},
		{"sed -n 5,\\$p a.py", recognize.KindRead, "/testbed/a.py", "5-$", ""},
		{"head -n 30 a.py", recognize.KindRead, "/testbed/a.py", "1-30", ""},
		{"tail -5 a.py", recognize.KindRead, "/testbed/a.py", "last 5", ""},
		{"tail -n +7 a.py", recognize.KindRead, "/testbed/a.py", "7-$", ""},
		{"nl -ba a.py | sed -n '3,9p'", recognize.KindRead, "/testbed/a.py", "filtered all", ""},
		{"cat -n a.py b.py", recognize.KindRead, "/testbed/a.py /testbed/b.py", "all", ""},
		{"grep -n def a.py", recognize.KindRead, "/testbed/a.py", "hits", ""},
		{"grep -rn TODO src", recognize.KindRead, "/testbed/src", "hits", ""},
		{"grep -rl TODO src", recognize.KindQuery, "", "", ""},
		{"ls -la", recognize.KindListing, "", "", "/testbed"},
		{"find src -name '*.py'", recognize.KindListing, "", "", "/testbed/src"},
		{"find . -type f -name '*.py' | grep -E 'x|y' | head -20", recognize.KindQuery, "", "", ""},
		{"python reproduce.py", recognize.KindEvent, "", "", ""},
		{"grep -o x a.py", recognize.KindQuery, "", "", ""},
		{"wc -l a.py", recognize.KindEvent, "", "", ""},
		{"cat a.py > b.py", recognize.KindUnparsed, "", "", ""},
		{"cat src/*.py", recognize.KindUnparsed, "", "", ""},
		{"echo hi; cat a.py", recognize.KindUnparsed, "", "", ""},
		{"cat 'unterminated", recognize.KindUnparsed, "", "", ""},
		{"", recognize.KindUnparsed, "", "", ""},
	} {
		in := recognize.Classify(tc.command, publicCwd)
		if in.Kind != tc.kind || strings.Join(in.Files, " ") != tc.files || in.Window != tc.window || in.Dir != tc.dir {
			t.Errorf("%q: got %+v, want %s files %q window %q dir %q", tc.command, in, tc.kind, tc.files, tc.window, tc.dir)
		}
		if (in.Kind == recognize.KindEvent || in.Kind == recognize.KindUnparsed) && in.Reason == "" {
			t.Errorf("%q: a %s without a reason", tc.command, in.Kind)
		}
	}
}

// seedFromPublic adds the public corpus's commands to a fuzz target as
// OpenHands terminal and OpenCode bash calls (no output: it is not kept).
// An absent corpus adds nothing: it is seed material, not the target.
func seedFromPublic(f *testing.F) {
	cs, err := loadPublic()
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cs {
		f.Add(uint8(0), c.Command, "", 0)
		f.Add(uint8(1), c.Command, "", 0)
	}
}
