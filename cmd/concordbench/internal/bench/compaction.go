package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/race"
)

// The compaction workload (docs/bench.md): once the agent has read every
// evidence file, the session is compacted into a scripted summary that
// restates the evidence lines as the agent saw them; then the files change
// (the mutations restored, and one line the summary never restated), and
// the question comes again. Concord is told of the compaction
// (compacted) as a binding tells it, and the next sync says the prompt
// was rebuilt.

// summaryAnchor is the summary message's anchor.
const summaryAnchor = "compact_1"

// restated is one line the summary restates: the evidence as the agent saw it.
type restated struct {
	file string
	line int
	text string
}

// compactIfDue compacts the session once every evidence file was read.
func (e *episode) compactIfDue(ctx context.Context, step int) error {
	if e.task.Race != race.Compaction || e.compacted {
		return nil
	}
	for _, ev := range e.task.Evidence {
		if _, ok := e.known[ev.File]; !ok {
			return nil
		}
	}
	e.compacted = true
	summary := e.summary()
	var replaced []string
	for _, m := range e.msgs[2:] {
		if m.Role == "tool" {
			replaced = append(replaced, m.ToolCallID)
		}
	}
	e.msgs = append(e.msgs[:2:2], agent.Message{Role: "user", Content: summary, Anchor: summaryAnchor})
	for _, id := range replaced {
		delete(e.views, id)
	}
	if e.cc != nil {
		if _, err := e.cc.compacted(ctx, step, summaryAnchor, summary, replaced); err != nil {
			return err
		}
	}
	rs, err := e.ctl.Compact()
	if err != nil {
		return err
	}
	e.note(rs)
	if err := e.reportWrites(ctx, rs); err != nil {
		return err
	}
	e.msgs = append(e.msgs, agent.Message{Role: "user", Content: "Now answer the question: " + e.task.Question})
	return nil
}

// summary is the scripted compaction summary: what was asked, what was
// read, and the evidence lines as the agent saw them, in the read tool's
// format.
func (e *episode) summary() string {
	var b strings.Builder
	b.WriteString(agent.CompactionPrefix)
	fmt.Fprintf(&b, "\nThe user asked: %s\nI listed the workspace files, searched them and read the files below. Key lines found:\n", e.task.Question)
	want := map[string][]int{}
	var files []string
	add := func(f string, n int) {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
		if !slices.Contains(want[f], n) {
			want[f] = append(want[f], n)
		}
	}
	for _, ev := range e.task.Evidence {
		add(ev.File, ev.Line)
	}
	for _, c := range e.task.Probe.Clozes {
		add(c.File, c.Line)
	}
	for _, f := range files {
		lines := race.Lines(e.known[f])
		fmt.Fprintf(&b, "%s:\n", e.ws.DisplayPath(f))
		slices.Sort(want[f])
		for _, n := range want[f] {
			if n < 1 || n > len(lines) {
				continue
			}
			fmt.Fprintf(&b, "%d: %s\n", n, lines[n-1])
			e.restated = append(e.restated, restated{file: f, line: n, text: lines[n-1]})
		}
	}
	b.WriteString("Next: answer the question from these lines.")
	return b.String()
}

// correctionRe heads one statement of a correction about the summary.
var correctionRe = regexp.MustCompile(`^\[concord\] The summary in ` + summaryAnchor + ` is (outdated|current again)`)

// segment is one line of a correction about the summary and the changed
// lines under it.
type segment struct {
	head string
	body []string
}

// statements splits text into the runs of correction segments it holds,
// in order.
func statements(text string) [][]segment {
	var runs [][]segment
	var cur []segment
	for _, l := range strings.Split(text, "\n") {
		switch {
		case correctionRe.MatchString(l):
			cur = append(cur, segment{head: l})
		case len(cur) > 0 && bodyLine(l):
			cur[len(cur)-1].body = append(cur[len(cur)-1].body, l)
		default:
			if len(cur) > 0 {
				runs = append(runs, cur)
				cur = nil
			}
		}
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

var bodyRe = regexp.MustCompile(`^([-+])(\d+): (.*)$`)

func bodyLine(l string) bool { return bodyRe.MatchString(l) || strings.HasPrefix(l, "(inserted ") }

// countCorrections counts the lines corrected about the summary in what a
// sync delivered (each old line a correction gives, "-N: text", and each
// insertion), and those true but not needed: lines the summary never
// restated.
func (e *episode) countCorrections(vs []ViewTrace) {
	for _, v := range vs {
		if v.Anchor != summaryAnchor {
			continue
		}
		for _, run := range statements(v.Shown) {
			for _, s := range run {
				if !strings.Contains(s.head, " is outdated") {
					continue
				}
				if len(s.body) == 0 { // a file gone: one correction
					e.res.DerivedCorrections++
					if !e.restatedIn(s) {
						e.res.DerivedUnneeded++
					}
				}
				for _, l := range s.body {
					m := bodyRe.FindStringSubmatch(l)
					if m == nil && !strings.HasPrefix(l, "(inserted ") || m != nil && m[1] != "-" {
						continue
					}
					e.res.DerivedCorrections++
					if m == nil || !e.isRestated(m[3]) {
						e.res.DerivedUnneeded++
					}
				}
			}
		}
	}
}

// isRestated reports whether the summary restated a line with this text.
func (e *episode) isRestated(text string) bool {
	return slices.ContainsFunc(e.restated, func(r restated) bool { return r.text == text })
}

// restatedIn reports whether segment s corrects a line the summary
// restated (or says that a file it restated lines of is gone).
func (e *episode) restatedIn(s segment) bool {
	for _, r := range e.restated {
		path := e.ws.DisplayPath(r.file)
		if !strings.Contains(s.head, path) {
			continue
		}
		if strings.Contains(s.head, "was deleted") || strings.Contains(s.head, "removed") {
			return true
		}
		for _, l := range s.body {
			if m := bodyRe.FindStringSubmatch(l); m != nil && m[1] == "-" && m[3] == r.text {
				return true
			}
		}
	}
	return false
}

// checkCorrections is the invariant at one model call of the compaction
// workload: every line the summary restated that changed on disk has a
// correction in force (the latest statement about the summary in the
// prompt) that names it, and every current line that statement gives is
// true. A line without one is a miss (counted once per task); a wrong
// line, a false correction.
func (e *episode) checkCorrections(prompt []agent.Message) {
	var all strings.Builder
	for _, m := range prompt {
		all.WriteString(m.Content)
		all.WriteString("\n\x00\n")
	}
	runs := statements(all.String())
	var latest []segment
	if len(runs) > 0 {
		latest = runs[len(runs)-1]
	}
	if e.missed == nil {
		e.missed = map[restated]bool{}
	}
	for _, r := range e.restated {
		now, ok := e.lineNow(r.file, r.line)
		if ok && now == r.text {
			continue
		}
		if !e.names(latest, r) && !e.missed[r] {
			e.missed[r] = true
			e.res.DerivedMissed++
		}
	}
	for _, s := range latest {
		for _, l := range s.body {
			m := bodyRe.FindStringSubmatch(l)
			if m == nil || m[1] != "+" {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			if f := e.fileOf(s.head); f != "" {
				if now, ok := e.lineNow(f, n); !ok || now != m[3] {
					e.res.DerivedFalse++
				}
			}
		}
	}
}

// names reports whether statement st corrects restated line r.
func (e *episode) names(st []segment, r restated) bool {
	for _, s := range st {
		if strings.Contains(s.head, e.ws.DisplayPath(r.file)) && e.restatedIn(segment{head: s.head, body: s.body}) {
			for _, l := range s.body {
				if m := bodyRe.FindStringSubmatch(l); m != nil && m[1] == "-" && m[3] == r.text {
					return true
				}
			}
			if strings.Contains(s.head, "was deleted") || strings.Contains(s.head, "removed") {
				return true
			}
		}
	}
	return false
}

// fileOf is the workspace file a segment's head names ("" when none).
func (e *episode) fileOf(head string) string {
	for _, f := range e.ws.Files() {
		if strings.Contains(head, e.ws.DisplayPath(f)+" ") || strings.Contains(head, e.ws.DisplayPath(f)+",") {
			return f
		}
	}
	return ""
}

// lineNow is line n of file f on disk now.
func (e *episode) lineNow(f string, n int) (string, bool) {
	b, err := os.ReadFile(e.ws.Abs(f))
	if err != nil {
		return "", false
	}
	ls := race.Lines(string(b))
	if n < 1 || n > len(ls) {
		return "", false
	}
	return ls[n-1], true
}
