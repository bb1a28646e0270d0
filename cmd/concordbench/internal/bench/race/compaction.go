package race

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// The compaction schedule: the agent reads the evidence while nothing
// moves; the session is compacted into a summary that restates the
// evidence lines; then every mutation is restored (the summary's facts
// change) and one other line of an evidence file changes (the noise: a line
// the agent read, which the summary never restated), before the question
// comes. A correction about the noise is true but not needed.

// Noise kinds, by task seed: a clause added (no word taken out), a number
// changed, the paragraph's subject replaced by a pronoun. The last two take
// out words a summary may also use (a year, a name) elsewhere.
var noiseKinds = []string{"addition", "number", "name"}

// Compact restores every pending mutation and makes the noise edit: what
// changes once the session was compacted. The restores count as seen.
func (c *Controller) Compact() ([]Restore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Restore
	for _, f := range slicesSorted(c.pending) {
		r, err := c.restore(f, true, "compaction")
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	r, err := c.noise(true)
	if err != nil || r.File == "" {
		return out, err
	}
	return append(out, r), nil
}

func slicesSorted(m map[string][]tasks.Mutation) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// noise makes the task's noise edit once (caller holds mu); a zero Restore
// when the task has no line for it. seen: after the agent read the file
// (not the oracle's final files).
func (c *Controller) noise(seen bool) (Restore, error) {
	if c.noised {
		return Restore{}, nil
	}
	c.noised = true
	n, ok := NoiseOf(c.task, c.seed)
	if !ok {
		return Restore{}, nil
	}
	p := c.ws.Abs(n.File)
	b, err := os.ReadFile(p)
	if err != nil {
		return Restore{}, fmt.Errorf("noise %s: %w", n.File, err)
	}
	lines := Lines(string(b))
	if n.Line > len(lines) || lines[n.Line-1] != n.Old {
		return Restore{}, fmt.Errorf("noise %s line %d: %q is not there", n.File, n.Line, n.Old)
	}
	lines[n.Line-1] = n.New
	after := strings.Join(lines, "\n") + "\n"
	if err := writeInPlace(p, after); err != nil {
		return Restore{}, fmt.Errorf("noise %s: %w", n.File, err)
	}
	r := Restore{File: n.File, Lines: []int{n.Line}, Mutated: []string{n.Old}, Original: []string{n.New}, Seen: seen,
		Reason: "noise-" + n.Kind, Before: string(b), After: after}
	c.log = append(c.log, r)
	return r, nil
}

// Noise is one line of an evidence file that changes after the compaction
// although no evidence is on it.
type Noise struct {
	File, Old, New, Kind string
	Line                 int
}

var digitsRe = regexp.MustCompile(`\d{2,}`)

// NoiseOf picks the task's noise edit: in its first evidence file, the
// first line that holds no evidence and no mutation and that the kind (by
// seed) applies to; an addition when no line suits the kind.
func NoiseOf(t tasks.Task, seed int) (Noise, bool) {
	if len(t.Evidence) == 0 {
		return Noise{}, false
	}
	f := t.Evidence[0].File
	p, ok := t.Paragraph(f)
	if !ok {
		return Noise{}, false
	}
	busy := map[int]bool{}
	for _, e := range t.Evidence {
		if e.File == f {
			busy[e.Line] = true
		}
	}
	for _, m := range t.Mutations {
		if m.File == f {
			busy[m.Line] = true
		}
	}
	for _, cl := range t.Probe.Clozes {
		if cl.File == f {
			busy[cl.Line] = true
		}
	}
	kind := noiseKinds[seed%len(noiseKinds)]
	for _, k := range []string{kind, "addition"} {
		for i, s := range p.Sentences {
			if busy[i+1] || strings.TrimSpace(s) == "" {
				continue
			}
			if nw, ok := noisy(s, k, p.Title); ok {
				return Noise{File: f, Line: i + 1, Old: s, New: nw, Kind: k}, true
			}
		}
	}
	return Noise{}, false
}

// noisy is line s after a noise edit of kind k, if k applies to it.
func noisy(s, k, title string) (string, bool) {
	switch k {
	case "number":
		loc := digitsRe.FindStringIndex(s)
		if loc == nil {
			return "", false
		}
		n, err := strconv.Atoi(s[loc[0]:loc[1]])
		if err != nil {
			return "", false
		}
		return s[:loc[0]] + strconv.Itoa(n+1) + s[loc[1]:], true
	case "name":
		i := strings.Index(s, title)
		if title == "" || i < 0 {
			return "", false
		}
		pron := "it"
		if i == 0 {
			pron = "It"
		}
		return s[:i] + pron + s[i+len(title):], true
	}
	return strings.TrimSuffix(s, ".") + ", according to later sources.", true
}
