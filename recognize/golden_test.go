package recognize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/recognize"
)

var update = flag.Bool("update", false, "rewrite testdata/recognize/*.golden.json")

// corpus is a file of real tool calls (testdata/recognize/*.corpus.json):
// where they come from, the workspace they ran in ({WS} is its root) and the
// calls. Shows labels what each call showed, for the tracked shares.
type corpus struct {
	Source    string            `json:"source"`
	License   string            `json:"license"`
	Note      string            `json:"note,omitempty"`
	Workspace map[string]string `json:"workspace"`
	Cases     []struct {
		Name  string          `json:"name"`
		Shows string          `json:"shows"`
		Call  json.RawMessage `json:"call"`
	} `json:"cases"`
}

// outcome is one call's recognition as the golden files hold it.
type outcome struct {
	Name   string           `json:"name"`
	Shows  string           `json:"shows"`
	Kind   recognize.Kind   `json:"kind"`
	Format string           `json:"format,omitempty"`
	Parts  []recognize.Part `json:"parts,omitempty"`
	Writes []string         `json:"writes,omitempty"`
	Reason string           `json:"reason,omitempty"`
}

func corpora(t *testing.T) []string {
	files, err := filepath.Glob("../testdata/recognize/*.corpus.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	return files
}

func loadCorpus(t *testing.T, file string) corpus {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if c.Source == "" || c.License == "" {
		t.Fatalf("%s: every corpus records its source and license", file)
	}
	return c
}

// workspace writes the corpus's files under a fresh directory.
func workspace(t *testing.T, c corpus) string {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for rel, text := range c.Workspace {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// recognizeCorpus runs every call of a corpus in its workspace.
func recognizeCorpus(t *testing.T, file string) ([]outcome, corpus) {
	c := loadCorpus(t, file)
	ws := workspace(t, c)
	var out []outcome
	for _, cs := range c.Cases {
		raw := strings.ReplaceAll(string(cs.Call), "{WS}", ws)
		var call recognize.Call
		if err := json.Unmarshal([]byte(raw), &call); err != nil {
			t.Fatalf("%s: %v", cs.Name, err)
		}
		res, err := recognize.Recognize(context.Background(), call, recognize.OS{})
		if err != nil {
			t.Fatalf("%s: %v", cs.Name, err)
		}
		checkRender(t, cs.Name, call, res)
		o := outcome{Name: cs.Name, Shows: cs.Shows, Kind: res.Kind, Format: res.Format, Parts: res.Parts, Writes: res.Writes, Reason: res.Reason}
		js, _ := json.Marshal(o)
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(js), ws, "{WS}")), &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out, c
}

// checkRender: a tracked read renders back exactly as the tool showed it
// (the parts hold the files' current lines, which still show the output).
func checkRender(t *testing.T, name string, call recognize.Call, res recognize.Result) {
	t.Helper()
	if res.Kind != recognize.KindRead && res.Kind != recognize.KindQuery {
		if res.Renders() {
			t.Errorf("%s: a %s result renders", name, res.Kind)
		}
		return
	}
	if len(res.Parts) == 0 {
		t.Errorf("%s: a read without parts", name)
	}
	got := res.Render(res.Parts)
	want := call.Output
	if call.Runtime == recognize.OpenHands && call.Tool == "terminal" {
		got, want = strings.TrimSpace(got), strings.TrimSpace(want)
	}
	if call.Runtime == recognize.ClaudeCode {
		// The model receives Claude Code's results trimmed (Bash at both
		// ends); Grep lists names newest first, a query holds them sorted.
		got, want = strings.TrimSpace(got), strings.TrimSpace(want)
		if res.Kind == recognize.KindQuery {
			g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
			sort.Strings(g)
			sort.Strings(w)
			got, want = strings.Join(g, "\n"), strings.Join(w, "\n")
		}
	}
	if got != want {
		t.Errorf("%s: renders back as\n%q\nwant\n%q", name, got, want)
	}
}

// TestGolden recognizes each corpus and compares with its golden file.
func TestGolden(t *testing.T) {
	for _, file := range corpora(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".corpus.json")
		t.Run(name, func(t *testing.T) {
			got, _ := recognizeCorpus(t, file)
			data, err := json.MarshalIndent(got, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, '\n')
			golden := filepath.Join("../testdata/recognize", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(data, want) {
				t.Errorf("%s differs from the recognizer's output; run `go test ./recognize -run TestGolden -update` and review the diff", golden)
			}
		})
	}
}

// TestShares reports, per kind of content a call showed, the share the
// recognizer tracks on the corpus; every labelled content-bearing kind is
// reported, and a call labelled "none" must stay untracked.
func TestShares(t *testing.T) {
	type tally struct{ all, tracked, queries int }
	shares := map[string]*tally{}
	for _, file := range corpora(t) {
		got, _ := recognizeCorpus(t, file)
		for _, o := range got {
			if o.Shows == "" {
				t.Errorf("%s: %s has no shows label", file, o.Name)
				continue
			}
			// A query source is tracked: the server re-runs it on a change.
			tr := o.Kind == recognize.KindRead || o.Kind == recognize.KindListing || o.Kind == recognize.KindWrite || o.Kind == recognize.KindQuery
			if o.Shows == "none" {
				if tr {
					t.Errorf("%s: %s is labelled none but tracked as %s", file, o.Name, o.Kind)
				}
				continue
			}
			if shares[o.Shows] == nil {
				shares[o.Shows] = &tally{}
			}
			shares[o.Shows].all++
			if tr {
				shares[o.Shows].tracked++
			}
			if o.Kind == recognize.KindQuery {
				shares[o.Shows].queries++
			}
		}
	}
	kinds := make([]string, 0, len(shares))
	for k := range shares {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	all, tracked, queries := 0, 0, 0
	for _, k := range kinds {
		s := shares[k]
		all, tracked, queries = all+s.all, tracked+s.tracked, queries+s.queries
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.0f%% |\n", k, s.all, s.tracked, s.queries, 100*float64(s.tracked)/float64(s.all))
	}
	fmt.Fprintf(&b, "| all content-bearing | %d | %d | %d | %.1f%% |\n", all, tracked, queries, 100*float64(tracked)/float64(all))
	t.Logf("tracked shares on the corpus:\n| kind | results | tracked | as query sources | share |\n|---|---:|---:|---:|---:|\n%s", b.String())
	if all == 0 {
		t.Fatal("no content-bearing call in the corpus")
	}
}
