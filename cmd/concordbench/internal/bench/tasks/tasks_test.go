package tasks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot walks up to the directory holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"The Conversation", "conversation"},
		{"  An  apple, a day! ", "apple day"},
		{"Papa Gino's", "papa ginos"},
		{"4,200", "4200"},
		{"the theatre", "theatre"}, // only whole-word articles go
		{"Ánthe a", "ánthe"},       // Unicode letters are word characters
		{"Guns N' Roses", "guns n roses"},
		{"yes", "yes"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !ExactMatch("the Selva River.", "Selva River") || ExactMatch("Lanna River", "Selva River") {
		t.Error("ExactMatch disagrees with Normalize")
	}
}

func loadSmall(t *testing.T) map[string]Task {
	t.Helper()
	ts, skipped, err := LoadHotpot(filepath.Join(repoRoot(t), "testdata", "bench", "hotpot_small.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Fatalf("skipped: %v", skipped)
	}
	m := map[string]Task{}
	for _, x := range ts {
		m[x.ID] = x
	}
	return m
}

// fillAll applies each cloze to its line in the given file contents.
func fillAll(t *testing.T, x Task, files map[string]string) []string {
	t.Helper()
	var vals []string
	for _, c := range x.Probe.Clozes {
		lines := strings.Split(strings.TrimSuffix(files[c.File], "\n"), "\n")
		v, ok := c.Fill(lines[c.Line-1])
		if !ok {
			t.Fatalf("%s: cloze does not fit %s:%d %q", x.ID, c.File, c.Line, lines[c.Line-1])
		}
		vals = append(vals, v)
	}
	return vals
}

func mutatedFiles(x Task) map[string]string {
	files := x.Files()
	for _, m := range x.Mutations {
		lines := strings.Split(strings.TrimSuffix(files[m.File], "\n"), "\n")
		lines[m.Line-1] = m.Mutated
		files[m.File] = strings.Join(lines, "\n") + "\n"
	}
	return files
}

// answerOf is the probe's rule applied to slot values.
func answerOf(p Probe, vals []string) string {
	switch p.Kind {
	case ProbeSame:
		if Normalize(vals[0]) == Normalize(vals[1]) {
			return "yes"
		}
		return "no"
	case ProbeEarlier:
		best := 0
		for i := range vals {
			if strings.TrimSpace(vals[i]) < strings.TrimSpace(vals[best]) { // same-width years
				best = i
			}
		}
		return p.Options[best]
	}
	return vals[0]
}

func TestBuildMutations(t *testing.T) {
	m := loadSmall(t)
	cases := []struct {
		id, kind, mutKind string
	}{
		{"t-span-entity", ProbeSpan, "entity"},
		{"t-span-date", ProbeSpan, "date"},
		{"t-yes", ProbeSame, "comparison"},
		{"t-no", ProbeSame, "comparison"},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			x, ok := m[tc.id]
			if !ok {
				t.Fatalf("task %s not built", tc.id)
			}
			if x.Probe.Kind != tc.kind {
				t.Fatalf("probe %s, want %s", x.Probe.Kind, tc.kind)
			}
			if len(x.Mutations) == 0 || x.Mutations[0].Kind != tc.mutKind {
				t.Fatalf("mutations %+v, want kind %s", x.Mutations, tc.mutKind)
			}
			// The original evidence gives the gold answer, the mutated one
			// another answer: a reader relying on it fails.
			if got := answerOf(x.Probe, fillAll(t, x, x.Files())); !ExactMatch(got, x.Answer) {
				t.Errorf("original evidence answers %q, gold %q", got, x.Answer)
			}
			if got := answerOf(x.Probe, fillAll(t, x, mutatedFiles(x))); ExactMatch(got, x.Answer) {
				t.Errorf("mutated evidence still answers the gold %q", got)
			}
			// Evidence: one per supporting paragraph, patterns find their line.
			for _, ev := range x.Evidence {
				p, ok := x.Paragraph(ev.File)
				if !ok || ev.Line < 1 || ev.Line > len(p.Sentences) {
					t.Fatalf("evidence %+v points nowhere", ev)
				}
			}
		})
	}
}

func TestBuildRejects(t *testing.T) {
	base := func() Record {
		return Record{ID: "x", Question: "q?", Answer: "Selva", SupportingFacts: []Fact{{"A", 0}},
			Context: []Passage{{"A", []string{"The Selva flows east through the old town."}}, {"B", []string{"Nothing here at all.", "The Danube flows west."}}}}
	}
	cases := []struct {
		name string
		mod  func(*Record)
		want string
	}{
		{"fact title missing", func(r *Record) { r.SupportingFacts = []Fact{{"Z", 0}} }, "no such paragraph"},
		{"fact index out of range", func(r *Record) { r.SupportingFacts = []Fact{{"A", 3}} }, "out of range"},
		{"answer not in evidence", func(r *Record) { r.Answer = "Danube" }, "does not appear"},
		{"yes/no without two paragraphs", func(r *Record) { r.Answer = "yes" }, "fewer than two"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.mod(&r)
			_, err := Build(r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Build(base()); err != nil {
		t.Fatalf("base record: %v", err)
	}
}

// Mutations keep the answer's kind: a number stays one number in the same
// format, a common noun stays a common noun, a nationality a nationality,
// a place a place.
func TestReplacementKeepsKind(t *testing.T) {
	tk := Task{ID: "k", Question: "q?", Paragraphs: []Paragraph{
		{Title: "Alma Brekke", Sentences: []string{"Alma Brekke is a British director.", "She was born in Varden.", "Her film was produced by Hugo Thorne."}},
		{Title: "Copper Works", Sentences: []string{"Copper Works is a French company in Osterlake.", "It employs 9,984 people.", "Its founder is a painter."}},
	}}
	cases := []struct {
		gold, sentence, own string
		ok                  func(string) bool
	}{
		{"9,984", "It employs 9,984 people.", "Copper Works", regexp.MustCompile(`^[0-9]{1,3}(,[0-9]{3})+$`).MatchString},
		{"1,300", "It employs 1,300 people.", "Copper Works", regexp.MustCompile(`^[0-9]{1,3}(,[0-9]{3})+$`).MatchString},
		{"director", "Alma Brekke is a British director.", "Alma Brekke", func(s string) bool { return s == "painter" }},
		{"British", "Alma Brekke is a British director.", "Alma Brekke", func(s string) bool { return slices.Contains(demonyms, s) }},
		{"Varden", "She was born in Varden.", "Alma Brekke", func(s string) bool { return s == "Osterlake" }},
	}
	for _, tc := range cases {
		got, _ := replacement(tk, tc.gold, tc.sentence, tc.own)
		if got == "" || got == tc.gold || !tc.ok(got) {
			t.Errorf("replacement(%q) = %q", tc.gold, got)
		}
	}
}

func TestShiftNumber(t *testing.T) {
	for _, tc := range []struct{ in string }{{"1932"}, {"2019"}, {"0"}, {"7"}, {"140"}, {"007"}} {
		for h := 0; h < 20; h++ {
			out := shiftNumber(tc.in, h)
			if out == tc.in {
				t.Errorf("shiftNumber(%s,%d) unchanged", tc.in, h)
			}
			if len(tc.in) == 4 && (out > "2020" || len(out) != 4) {
				t.Errorf("year %s -> %s", tc.in, out)
			}
		}
	}
}

func TestParseHotpot(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		file string
		n    int
	}{
		{"hotpot_small.jsonl", 4},
		{"hotpot_small.json", 1},
	}
	for _, tc := range cases {
		data, err := os.ReadFile(filepath.Join(root, "testdata", "bench", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := ParseHotpot(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(recs) != tc.n {
			t.Fatalf("%s: %d records, want %d", tc.file, len(recs), tc.n)
		}
	}
	bad := []struct{ in, want string }{
		{"", "empty input"},
		{"{not json}\n", "line 1"},
		{`{"question":"q","answer":"a","context":[["T",["s"]]],"supporting_facts":[["T"]]}`, "want [title, index]"},
		{`{"question":"q","answer":"a","context":[["T","s"]],"supporting_facts":[["T",0]]}`, "context sentences"},
		{`{"question":"","answer":"a"}`, "missing question"},
		{`[{"question":"q","answer":"a","context":[["T",["s"]]]}]`, "missing supporting_facts"},
		{"\n\n" + `{"question":"q","answer":"a","context":[["T",["s"]]],"supporting_facts":[["T",0]]}` + "\n[1,2]\n", "line 4"},
	}
	for _, tc := range bad {
		_, err := ParseHotpot([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseHotpot(%q) err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseHotpot(f *testing.F) {
	root := repoRoot(f)
	for _, name := range []string{"hotpot_small.jsonl", "hotpot_small.json"} {
		if b, err := os.ReadFile(filepath.Join(root, "testdata", "bench", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"question":"q","answer":"yes","context":[["A",["x is y."]],["B",["z is y."]]],"supporting_facts":[["A",0],["B",0]]}`))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseHotpot(data)
		if err != nil {
			return
		}
		// Whatever parses must build or be rejected with an error, never panic,
		// and a built task's mutations must fit its files.
		ts, _ := BuildAll(recs)
		for _, x := range ts {
			files := x.Files()
			for _, m := range x.Mutations {
				lines := strings.Split(strings.TrimSuffix(files[m.File], "\n"), "\n")
				if m.Line < 1 || m.Line > len(lines) || lines[m.Line-1] != m.Original || m.Mutated == m.Original {
					t.Fatalf("mutation %+v does not fit %s", m, m.File)
				}
			}
		}
	})
}

func TestSyntheticDeterministic(t *testing.T) {
	a, b := Synthetic(7, 12), Synthetic(7, 12)
	if len(a) != 12 {
		t.Fatalf("%d tasks, want 12", len(a))
	}
	kinds := map[string]bool{}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Question != b[i].Question || a[i].Answer != b[i].Answer {
			t.Fatalf("task %d differs between runs of the same seed", i)
		}
		if a[i].Mutations[0].Mutated != b[i].Mutations[0].Mutated {
			t.Fatalf("task %d mutation differs between runs", i)
		}
		x := a[i]
		kinds[x.Probe.Kind] = true
		if got := answerOf(x.Probe, fillAll(t, x, x.Files())); !ExactMatch(got, x.Answer) {
			t.Errorf("%s: original evidence answers %q, gold %q", x.ID, got, x.Answer)
		}
		if got := answerOf(x.Probe, fillAll(t, x, mutatedFiles(x))); ExactMatch(got, x.Answer) {
			t.Errorf("%s: mutated evidence still answers the gold %q", x.ID, got)
		}
	}
	for _, k := range []string{ProbeSpan, ProbeSame, ProbeEarlier} {
		if !kinds[k] {
			t.Errorf("no %s task generated", k)
		}
	}
	if c := Synthetic(8, 12); c[0].Question == a[0].Question && c[1].Question == a[1].Question {
		t.Error("another seed gives the same tasks")
	}
}

func TestSubsetStable(t *testing.T) {
	ts := Synthetic(1, 30)
	rev := make([]Task, len(ts))
	for i := range ts {
		rev[len(ts)-1-i] = ts[i]
	}
	a, b := Subset(ts, 10), Subset(rev, 10)
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Fatalf("subset depends on input order at %d: %s vs %s", i, a[i].ID, b[i].ID)
		}
		if i > 0 && a[i-1].SortKey() > a[i].SortKey() {
			t.Fatal("subset not sorted by key")
		}
	}
	if len(Subset(ts, 0)) != 30 {
		t.Fatal("n=0 must keep every task")
	}
}

// The real HotpotQA sample beside the project (not in the repository).
func TestLoadRealSample(t *testing.T) {
	p := filepath.Join(repoRoot(t), "..", "shared", "data", "hotpotqa", "dev_distractor_sample.jsonl")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real HotpotQA sample absent (%s): using the project's own fixtures only", p)
	}
	ts, skipped, err := LoadHotpot(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts)+len(skipped) != 116 {
		t.Fatalf("%d tasks + %d skipped, want 116 examples", len(ts), len(skipped))
	}
	// Most examples must be usable; every skip says why.
	if len(ts) < 100 {
		t.Fatalf("only %d of 116 examples usable: %v", len(ts), skipped)
	}
	for _, s := range skipped {
		if s.Reason == "" || s.ID == "" {
			t.Fatalf("skip without id or reason: %+v", s)
		}
	}
	for _, x := range ts {
		if got := answerOf(x.Probe, fillAll(t, x, x.Files())); !ExactMatch(got, x.Answer) {
			t.Errorf("%s: original evidence answers %q, gold %q", x.ID, got, x.Answer)
		}
		if got := answerOf(x.Probe, fillAll(t, x, mutatedFiles(x))); ExactMatch(got, x.Answer) {
			t.Errorf("%s: mutated evidence still answers the gold %q", x.ID, got)
		}
	}
}
