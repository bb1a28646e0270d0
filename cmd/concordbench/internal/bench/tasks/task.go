// Package tasks holds the benchmark's tasks: HotpotQA-format questions whose
// paragraphs become a workspace (one file per paragraph, one sentence per
// line), the mutations the race plants in that workspace, and the probe a
// scripted reader answers from.
package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// Task is one question with its workspace, evidence and race plan.
type Task struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
	Type     string `json:"type"`   // HotpotQA type (bridge, comparison) or the generator's kind
	Source   string `json:"source"` // "hotpotqa" or "synthetic"

	Paragraphs []Paragraph `json:"paragraphs"`
	// Evidence is where the answer's support lives, in supporting-fact order:
	// the reader greps Pattern and reads the file of the first hit.
	Evidence []Evidence `json:"evidence"`
	// Probe says how a reader turns the evidence lines into an answer.
	Probe Probe `json:"probe"`
	// Mutations are planted before the agent starts; each replaces one
	// evidence line with a plausible wrong one.
	Mutations []Mutation `json:"mutations"`

	// Race names the race controller's schedule for the question workloads
	// ("" is hotpot's: restore right after the agent saw the mutation).
	Race string `json:"race,omitempty"`
	// Plan and Events make a session task (the long workload): the scripted
	// agent runs Plan in order, and each Event is an outside write.
	Plan   []Action `json:"plan,omitempty"`
	Events []Event  `json:"events,omitempty"`
}

// Action is one tool call of a session plan.
type Action struct {
	Tool    string `json:"tool"` // read_file, edit, grep, glob, run
	Path    string `json:"path,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	Old     string `json:"old,omitempty"` // edit: the exact text replaced (once in the file)
	New     string `json:"new,omitempty"`
	Command string `json:"command,omitempty"`
}

// Event is an outside write in a session: once plan action After has run,
// the exact text Old of File becomes New (not through the agent's tools).
// InFlight events land after the next sync, before the model's reply.
type Event struct {
	After    int    `json:"after"`
	InFlight bool   `json:"in_flight,omitempty"`
	File     string `json:"file"`
	Old      string `json:"old"`
	New      string `json:"new"`
	Kind     string `json:"kind"` // value (a probed line), shift (lines inserted above others)
}

// Paragraph is one workspace file: line i+1 is sentence i.
type Paragraph struct {
	Title     string   `json:"title"`
	File      string   `json:"file"` // relative path inside the workspace
	Sentences []string `json:"sentences"`
}

// Content is the file's text: one sentence per line, newline-terminated.
func (p Paragraph) Content() string {
	if len(p.Sentences) == 0 {
		return ""
	}
	return strings.Join(p.Sentences, "\n") + "\n"
}

// Evidence is one supporting fact as a navigation step.
type Evidence struct {
	File    string `json:"file"`
	Line    int    `json:"line"`    // 1-based
	Pattern string `json:"pattern"` // RE2, matches this line (mutated or not) and as few others as possible
}

// Probe kinds.
const (
	ProbeSpan    = "span"    // the answer is the slot of one cloze
	ProbeSame    = "same"    // "yes" when the slots of two clozes are equal, else "no"
	ProbeEarlier = "earlier" // the option whose cloze slot holds the smaller number
	ProbeAll     = "all"     // every cloze's slot, joined by "; "
)

// Probe is the reader's extraction rule. A cloze is an evidence line with a
// hole: a visible line equal to Prefix + x + Suffix (x non-empty) fills the
// slot with x.
type Probe struct {
	Kind    string   `json:"kind"`
	Clozes  []Cloze  `json:"clozes"`
	Options []string `json:"options,omitempty"` // ProbeEarlier: the answer for each cloze
}

// Cloze is one slot in one evidence line.
type Cloze struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Prefix string `json:"prefix"`
	Suffix string `json:"suffix"`
}

// Fill returns the slot value if line matches the cloze.
func (c Cloze) Fill(line string) (string, bool) {
	if len(line) <= len(c.Prefix)+len(c.Suffix) || !strings.HasPrefix(line, c.Prefix) || !strings.HasSuffix(line, c.Suffix) {
		return "", false
	}
	return line[len(c.Prefix) : len(line)-len(c.Suffix)], true
}

// Mutation replaces line Line of File (Original) with Mutated.
type Mutation struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Original string `json:"original"`
	Mutated  string `json:"mutated"`
	Kind     string `json:"kind"` // entity, number, date, comparison
}

// Paragraph returns the paragraph stored in file.
func (t Task) Paragraph(file string) (Paragraph, bool) {
	for _, p := range t.Paragraphs {
		if p.File == file {
			return p, true
		}
	}
	return Paragraph{}, false
}

// Files maps each workspace file to its original content.
func (t Task) Files() map[string]string {
	m := make(map[string]string, len(t.Paragraphs))
	for _, p := range t.Paragraphs {
		m[p.File] = p.Content()
	}
	return m
}

// SortKey orders tasks for subset selection: the hex SHA-256 of id and
// question, so a subset is stable, independent of file order and not biased
// towards the file's first rows.
func (t Task) SortKey() string {
	h := sha256.Sum256([]byte(t.ID + "\x00" + t.Question))
	return hex.EncodeToString(h[:])
}

// Subset returns the first n tasks after a stable sort by SortKey (n <= 0:
// all of them, in that order).
func Subset(ts []Task, n int) []Task {
	out := append([]Task(nil), ts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].SortKey() < out[j].SortKey() })
	if n > 0 && n < len(out) {
		out = out[:n]
	}
	return out
}
