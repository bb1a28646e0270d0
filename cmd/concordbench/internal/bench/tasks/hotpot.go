package tasks

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
)

// Record is one HotpotQA example in the official format.
type Record struct {
	ID              string    `json:"_id"`
	Question        string    `json:"question"`
	Answer          string    `json:"answer"`
	Type            string    `json:"type"`
	Level           string    `json:"level"`
	SupportingFacts []Fact    `json:"supporting_facts"`
	Context         []Passage `json:"context"`
}

// Fact is a supporting fact: [title, sentence index].
type Fact struct {
	Title string
	Index int
}

// UnmarshalJSON reads the [title, index] pair.
func (f *Fact) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("supporting fact: %w", err)
	}
	if len(raw) != 2 {
		return fmt.Errorf("supporting fact: want [title, index], got %d elements", len(raw))
	}
	if err := json.Unmarshal(raw[0], &f.Title); err != nil {
		return fmt.Errorf("supporting fact title: %w", err)
	}
	if err := json.Unmarshal(raw[1], &f.Index); err != nil {
		return fmt.Errorf("supporting fact index: %w", err)
	}
	return nil
}

// Passage is a context paragraph: [title, [sentence, ...]].
type Passage struct {
	Title     string
	Sentences []string
}

// UnmarshalJSON reads the [title, sentences] pair.
func (p *Passage) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("context paragraph: %w", err)
	}
	if len(raw) != 2 {
		return fmt.Errorf("context paragraph: want [title, sentences], got %d elements", len(raw))
	}
	if err := json.Unmarshal(raw[0], &p.Title); err != nil {
		return fmt.Errorf("context title: %w", err)
	}
	if err := json.Unmarshal(raw[1], &p.Sentences); err != nil {
		return fmt.Errorf("context sentences of %q: %w", p.Title, err)
	}
	return nil
}

// ParseHotpot reads HotpotQA examples from a JSON array (the official files)
// or from JSON Lines (one example per line; blank lines ignored).
func ParseHotpot(data []byte) ([]Record, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("hotpotqa: empty input")
	}
	if trimmed[0] == '[' {
		var recs []Record
		if err := json.Unmarshal(trimmed, &recs); err != nil {
			return nil, fmt.Errorf("hotpotqa: JSON array: %w", err)
		}
		for i := range recs {
			if err := recs[i].check(); err != nil {
				return nil, fmt.Errorf("hotpotqa: example %d: %w", i, err)
			}
		}
		return recs, nil
	}
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(data)) // untrimmed: line numbers count from the top
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("hotpotqa: line %d: %w", line, err)
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("hotpotqa: line %d: %w", line, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hotpotqa: line %d: %w", line+1, err)
	}
	return recs, nil
}

func (r Record) check() error {
	switch {
	case strings.TrimSpace(r.Question) == "":
		return errors.New("missing question")
	case strings.TrimSpace(r.Answer) == "":
		return errors.New("missing answer")
	case len(r.Context) == 0:
		return errors.New("missing context")
	case len(r.SupportingFacts) == 0:
		return errors.New("missing supporting_facts")
	}
	return nil
}

// LoadHotpot reads a HotpotQA file and builds tasks from it. Examples no
// mutation can be built for are returned in skipped with the reason.
func LoadHotpot(path string) (ts []Task, skipped []Skip, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load tasks: %w", err)
	}
	recs, err := ParseHotpot(data)
	if err != nil {
		return nil, nil, fmt.Errorf("load %s: %w", path, err)
	}
	ts, skipped = BuildAll(recs)
	return ts, skipped, nil
}

// Skip names an example left out and why.
type Skip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// BuildAll builds a task per record, collecting the ones that fail.
func BuildAll(recs []Record) ([]Task, []Skip) {
	var ts []Task
	var skipped []Skip
	for _, r := range recs {
		t, err := Build(r)
		if err != nil {
			skipped = append(skipped, Skip{ID: recordID(r), Reason: err.Error()})
			continue
		}
		ts = append(ts, t)
	}
	return ts, skipped
}

func recordID(r Record) string {
	if r.ID != "" {
		return r.ID
	}
	h := sha256.Sum256([]byte(r.Question))
	return "q-" + hex.EncodeToString(h[:6])
}

// Build turns one HotpotQA example into a task: paragraphs become files,
// the supporting facts become evidence, and the answer-bearing evidence line
// gets a mutation and a cloze.
func Build(r Record) (Task, error) {
	return buildWith(r, func(t Task, facts []lineRef) (racePlan, error) {
		if a := Normalize(r.Answer); a == "yes" || a == "no" {
			return planSame(t, facts, a == "yes")
		}
		return planSpan(t, facts)
	})
}

type planner func(t Task, facts []lineRef) (racePlan, error)

func buildWith(r Record, plan planner) (Task, error) {
	t := Task{ID: recordID(r), Question: r.Question, Answer: r.Answer, Type: r.Type, Source: "hotpotqa"}
	files := map[string]bool{}
	byTitle := map[string]int{}
	for _, p := range r.Context {
		sents := make([]string, len(p.Sentences))
		for i, s := range p.Sentences {
			sents[i] = cleanSentence(s)
		}
		f := fileName(p.Title, files)
		if _, dup := byTitle[p.Title]; !dup {
			byTitle[p.Title] = len(t.Paragraphs)
		}
		t.Paragraphs = append(t.Paragraphs, Paragraph{Title: p.Title, File: f, Sentences: sents})
	}
	// Supporting facts, validated, one line per distinct title (the first).
	var facts []lineRef
	seen := map[string]bool{}
	for _, f := range r.SupportingFacts {
		pi, ok := byTitle[f.Title]
		if !ok {
			return Task{}, fmt.Errorf("supporting fact %q: no such paragraph", f.Title)
		}
		p := t.Paragraphs[pi]
		if f.Index < 0 || f.Index >= len(p.Sentences) {
			return Task{}, fmt.Errorf("supporting fact %q: sentence %d out of range (%d sentences)", f.Title, f.Index, len(p.Sentences))
		}
		facts = append(facts, lineRef{para: pi, line: f.Index + 1, first: !seen[f.Title]})
		seen[f.Title] = true
	}
	pl, err := plan(t, facts)
	if err != nil {
		return Task{}, err
	}
	return pl.apply(t, facts)
}

type lineRef struct {
	para  int
	line  int
	first bool // first supporting fact of its paragraph
}

func cleanSentence(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.TrimSpace(s)
}

// fileName turns a title into a unique, shell-safe file name.
func fileName(title string, used map[string]bool) string {
	var b strings.Builder
	underscore := false
	for _, r := range title {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			underscore = false
		} else if !underscore && b.Len() > 0 {
			b.WriteByte('_')
			underscore = true
		}
	}
	base := strings.TrimRight(b.String(), "_")
	if base == "" {
		base = "paragraph"
	}
	if rs := []rune(base); len(rs) > 80 {
		base = string(rs[:80])
	}
	name := base + ".txt"
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s_%d.txt", base, i)
	}
	used[name] = true
	return name
}
