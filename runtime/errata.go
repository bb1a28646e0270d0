package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// Errata: what goes after the newest message when a repair is placed at the
// tail. An erratum names the tool call whose output it corrects and is
// self-contained relative to that output as the model has it in place (a
// later erratum for the same call replaces an earlier one, they never have
// to be read together). It stays small, because every later call carries it:
// a moved span is a clause, the agent's own edit is a pointer to that edit
// (its new text is already in the context), an outside change carries the
// changed lines only, up to MaxHunkBytes, and anything else is the re-read
// notice. The errata of one sync are grouped by source, one line per source
// ("[concord] Outdated in PATH: ..."), and calls that share a statement share
// its clause: real sessions touch a few files often, so one edit typically
// outdates several reads of the same file at once.

// MaxHunkBytes bounds the changed lines one erratum carries; a larger change
// is reported with a re-read notice instead.
const MaxHunkBytes = 800

// holds says how long an erratum stays true, and so when a later change
// needs a new one.
type holds uint8

const (
	holdsNow      holds = iota // claims current lines or text: any later change may falsify it
	holdsSameText              // claims only that the text in place is unchanged: true while it is
	holdsAlways                // only warns that the copy is outdated: true whatever changes next
)

// clause is one statement about one call's copy of one source.
type clause struct {
	anchor string
	path   string // the source's display name; "" for a line of its own (raw)
	shown  string // "lines A-B" the copy in place shows; "" for a whole source
	pred   string // what is true now: "is now at lines 5-7", "changed by your edit in call_7"
	body   string // changed lines ("+N: text"), after the clause
	alone  bool   // on a line of its own: it has a body, or its sentence ends the line
	raw    string // a whole line, for path == ""
}

// newClause starts a clause about anchor's copy of l.
func newClause(anchor string, l *link) clause {
	c := clause{anchor: anchor, path: l.name()}
	if !l.whole {
		c.shown = linesOf(l.shownRange())
	}
	return c
}

// erratum returns the clauses that correct b's in-place copy (none when the
// in-place copy needs no correction), and how long they stay true. Caller
// holds m.mu.
func erratum(b *block) ([]clause, holds) {
	if b.pl.inplace.status() == protocol.Invalid {
		return nil, holdsNow // in place it shows a notice only: nothing there can look current
	}
	switch b.status() {
	case protocol.Invalid, protocol.Stale, protocol.Superseded:
		return []clause{{anchor: b.anchor, raw: "[concord] About the output of " + b.anchor + ": " + thatRead(b.notice())}}, holdsAlways
	}
	var cs []clause
	h := holdsAlways
	for _, l := range b.links {
		if l.text == l.shownText() && (l.whole || l.rng == l.shownRange()) {
			continue
		}
		c, lh := linkErratum(b.anchor, l, b.pl.note != noteNone)
		cs = append(cs, c)
		h = min(h, lh)
	}
	if len(cs) == 0 {
		if b.pl.note != noteNone {
			// An earlier erratum said otherwise; the copy in place is true again.
			return []clause{{anchor: b.anchor, raw: "[concord] The output of " + b.anchor + " is current again."}}, holdsNow
		}
		return nil, holdsNow
	}
	return cs, h
}

// textUnchanged reports whether every link of b is live and still has the
// text its copy in place shows (at most its lines moved).
func textUnchanged(b *block) bool {
	if b.status() != protocol.Valid && b.status() != protocol.Patched {
		return false
	}
	for _, l := range b.links {
		if l.state != linkOK || l.text != l.shownText() {
			return false
		}
	}
	return true
}

// erratumSuperseded points from a superseded read whose lines changed to
// the newer read of them. It claims no current text: the newer read's own
// clause (same sync) says what changed since.
func erratumSuperseded(s, by *block) []clause {
	cs := make([]clause, 0, len(s.links))
	for _, l := range s.links {
		c := newClause(s.anchor, l)
		c.pred = "was read again in " + by.anchor
		cs = append(cs, c)
	}
	return cs
}

// thatRead turns a notice written for the message it replaces ("this
// read") into one that sits after it and names it.
func thatRead(notice string) string {
	lines := strings.Split(notice, "\n")
	for i, l := range lines {
		l = strings.TrimPrefix(l, "[concord] ")
		l = strings.NewReplacer("this earlier read", "that read", "this read", "that read", "this one", "that one").Replace(l)
		lines[i] = l
	}
	return strings.Join(lines, " ")
}

// linkErratum corrects one link whose text or lines differ from the copy in
// place, and says how long that stays true. noted: an erratum for the call
// was delivered before (since its copy in place).
func linkErratum(anchor string, l *link, noted bool) (clause, holds) {
	c := newClause(anchor, l)
	now := ""
	switch {
	case !l.whole && l.rng != l.shownRange():
		now = ", now " + linesOf(l.rng)
	case l.whole && lineCount(l.text) != lineCount(l.shownText()):
		// A whole read names no lines: the new length tells an insertion
		// from a replacement of the same lines.
		now = fmt.Sprintf(", now %d lines", lineCount(l.text))
	}
	lp := l.placed()
	own := len(lp.edits) > 0 && lp.outside == 0
	switch {
	case l.text == l.shownText() && own:
		// The agent's own edits moved it: the edit results show where its
		// lines went. Naming no lines keeps this true through the next
		// moves, the commonest change in a coding session.
		c.pred = "moved with " + yourEdits(lp.edits) + ", text unchanged"
		return c, holdsSameText
	case l.text == l.shownText() && noted:
		// Moved again after an erratum: new numbers on every move would
		// be one erratum per edit for as long as the session runs.
		c.pred = "moved, text unchanged"
		return c, holdsSameText
	case l.text == l.shownText():
		c.pred = "is now at " + linesOf(l.rng)
		return c, holdsNow
	case own:
		// The new text is in the edit's own result: point to it. No
		// lines, so the warning stays true through the next edits.
		c.pred = "changed by " + yourEdits(lp.edits)
		return c, holdsAlways
	case noted && lp.ownSince && lp.lastOutside <= lp.notedAt:
		// Only the agent's edits since the latest erratum: point to the
		// last one rather than repeat every change since the copy in
		// place, which would grow with each edit.
		c.pred = "changed again by your edit in " + lp.edits[len(lp.edits)-1]
		return c, holdsAlways
	}
	if h, ok := hunk(l); ok {
		c.pred, c.body, c.alone = "changed"+now+":", h, true
		return c, holdsNow
	}
	c.pred, c.alone = "changed"+now+". Re-read "+l.target()+" before relying on it.", true
	return c, holdsAlways
}

// yourEdits names the agent's edits that changed a link, the latest last.
func yourEdits(edits []string) string {
	if n := len(edits) - 1; n > 0 {
		return fmt.Sprintf("your edits (the last in %s)", edits[n])
	}
	return "your edit in " + edits[0]
}

// item is "call_1 (lines 3-5)", or "call_1" for a whole source.
func (c clause) item() string {
	if c.shown == "" {
		return c.anchor
	}
	return c.anchor + " (" + c.shown + ")"
}

// errLine is one line of the note.
type errLine struct {
	text  string
	view  int // the first view whose clauses it holds: the line goes to that view
	first int // index of its first clause: lines of one view keep the clauses' order
}

// renderErrata groups the clauses of one sync (owner: the index of the view
// each belongs to) into lines: one per source for the one-line clauses,
// calls with the same statement listed together, and one per clause that
// carries changed lines. Each line goes to the first view it speaks for, so
// joining the views' errata in order gives every line once; a view whose
// clauses all sit on earlier views' lines gets none.
func renderErrata(cs []clause, owner []int, nviews int) []string {
	var lines []errLine
	type group struct {
		path  string
		first int
		preds []string         // in first-appearance order
		items map[string][]int // pred -> clause indices
	}
	var groups []*group
	byPath := map[string]*group{}
	for i, c := range cs {
		switch {
		case c.path == "":
			lines = append(lines, errLine{text: c.raw, view: owner[i], first: i})
			continue
		case c.alone:
			text := "[concord] Outdated in " + c.path + ": " + c.item() + " " + c.pred
			if c.body != "" {
				text += "\n" + c.body
			}
			lines = append(lines, errLine{text: text, view: owner[i], first: i})
			continue
		}
		g := byPath[c.path]
		if g == nil {
			g = &group{path: c.path, first: i, items: map[string][]int{}}
			byPath[c.path] = g
			groups = append(groups, g)
		}
		if _, ok := g.items[c.pred]; !ok {
			g.preds = append(g.preds, c.pred)
		}
		g.items[c.pred] = append(g.items[c.pred], i)
	}
	for _, g := range groups {
		var parts []string
		view := nviews
		for _, p := range g.preds {
			var items []string
			for _, i := range g.items[p] {
				items = append(items, cs[i].item())
				view = min(view, owner[i])
			}
			parts = append(parts, strings.Join(items, ", ")+" "+p)
		}
		lines = append(lines, errLine{text: "[concord] Outdated in " + g.path + ": " + strings.Join(parts, "; ") + ".", view: view, first: g.first})
	}
	out := make([][]string, nviews)
	slices.SortFunc(lines, func(a, b errLine) int {
		if a.view != b.view {
			return a.view - b.view
		}
		return a.first - b.first
	})
	for _, l := range lines {
		out[l.view] = append(out[l.view], l.text)
	}
	texts := make([]string, nviews)
	for i, ls := range out {
		texts[i] = strings.Join(ls, "\n")
	}
	return texts
}

// hunkLine writes "+12: text\n" (or "-").
func hunkLine(b *strings.Builder, sign byte, n int, text string) {
	b.WriteByte(sign)
	b.WriteString(itoa(n))
	b.WriteString(": ")
	b.WriteString(text)
	b.WriteByte('\n')
}

// hunk lists the lines that differ between the copy in place and the
// current text, change by change: "+N: new" at the new line numbers, and
// "-N: old" at the old ones unless each old line of that change has a new
// one in its place (the copy in place shows them); a pure insertion is
// headed "(inserted after line N)" in the copy's numbering. It fails
// beyond MaxHunkBytes.
func hunk(l *link) (string, bool) {
	var old, cur []string
	oldStart, curStart := 1, 1
	if l.whole {
		old, cur = locator.SplitLines(l.shownText()), locator.SplitLines(l.text)
	} else {
		old, cur = spanLines(l.shownText(), l.shownRange()), spanLines(l.text, l.rng)
		oldStart, curStart = l.shownRange().Start, l.rng.Start
	}
	var b strings.Builder
	for _, h := range locator.Hunks(old, cur, locator.DefaultParams()) {
		if h.OldEnd == h.OldStart {
			// Pure insertion: with no "-" line it would read as a
			// replacement of the lines now at these numbers.
			if h.NewStart == 0 {
				b.WriteString("(inserted before line " + itoa(oldStart) + ")\n")
			} else {
				b.WriteString("(inserted after line " + itoa(oldStart+h.OldStart-1) + ")\n")
			}
		}
		if h.OldEnd-h.OldStart != h.NewEnd-h.NewStart {
			for i := h.OldStart; i < h.OldEnd; i++ {
				hunkLine(&b, '-', oldStart+i, old[i])
			}
		}
		for i := h.NewStart; i < h.NewEnd; i++ {
			hunkLine(&b, '+', curStart+i, cur[i])
		}
		if b.Len() > MaxHunkBytes {
			return "", false
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}
