package runtime

import (
	"fmt"
	"strings"

	"github.com/concord-ctx/concord/locator"
)

// Errata: what goes after the newest message when a repair is placed at the
// tail. An erratum names the tool call whose output it corrects and is
// self-contained relative to that output as the model has it in place (a
// later erratum for the same call replaces an earlier one, they never have
// to be read together). It stays small, because every later call carries it:
// a moved span is one line, the agent's own edit is a pointer to that edit
// (its new text is already in the context), an outside change carries the
// changed lines only, up to MaxHunkBytes, and anything else is the re-read
// notice.

// MaxHunkBytes bounds the changed lines one erratum carries; a larger change
// is reported with a re-read notice instead.
const MaxHunkBytes = 800

// erratum returns the text that corrects b's in-place copy ("" when the
// in-place copy needs no correction), and whether it only warns: it says
// the copy is outdated and claims no current text or lines, so it stays
// true whatever changes next. Caller holds m.mu.
func erratum(b *block) (string, bool) {
	if b.pl.inplace == Invalid {
		return "", false // in place it shows a notice only: nothing there can look current
	}
	switch b.status {
	case Invalid, Stale, Superseded:
		return "[concord] About the output of " + b.anchor + ": " + thatRead(b.notice), true
	}
	var parts []string
	warns := true
	for _, l := range b.links {
		if l.text == l.shown && (l.whole || l.rng == l.shownRng) {
			continue
		}
		t, w := linkErratum(b.anchor, l)
		parts = append(parts, t)
		warns = warns && w
	}
	if len(parts) == 0 {
		if b.pl.noted {
			// An earlier erratum said otherwise; the copy in place is true again.
			return "[concord] The output of " + b.anchor + " is current again.", false
		}
		return "", false
	}
	return strings.Join(parts, "\n"), warns
}

// erratumSuperseded points from a superseded read whose lines changed to
// the newer read that covers them.
func erratumSuperseded(s, by *block) string {
	return fmt.Sprintf("[concord] Outdated: %s showed %s; a newer read of those lines (%s) is in the context. Rely on the newer read.", s.anchor, targets(s), by.anchor)
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
// place, and says whether it only warns.
func linkErratum(anchor string, l *link) (string, bool) {
	what := anchor + " showed " + l.name()
	now := ""
	if !l.whole {
		what += " " + linesOf(l.shownRng)
		now = " (now " + linesOf(l.rng) + ")"
	}
	switch {
	case l.text == l.shown:
		return fmt.Sprintf("[concord] Outdated: %s; the same text is now at %s.", what, linesOf(l.rng)), false
	case len(l.pl.edits) > 0 && l.pl.outside == 0:
		// The new text is in the edit's own result: point to it. No
		// lines, so the warning stays true through the next edits.
		by := "your edit in " + l.pl.edits[len(l.pl.edits)-1]
		if n := len(l.pl.edits) - 1; n > 0 {
			by = fmt.Sprintf("your edits (the last in %s)", l.pl.edits[n])
		}
		return fmt.Sprintf("[concord] Outdated: %s; %s changed it.", what, by), true
	}
	if h, ok := hunk(l); ok {
		return fmt.Sprintf("[concord] Outdated: %s; changed%s:\n%s", what, now, h), false
	}
	return fmt.Sprintf("[concord] Outdated: %s; changed%s. Re-read %s before relying on it.", what, now, l.target()), true
}

// hunk lists the lines that differ between the copy in place and the
// current text: "-N: old" at the old line numbers, "+N: new" at the new
// ones. It fails beyond MaxHunkBytes.
func hunk(l *link) (string, bool) {
	var old, cur []string
	oldStart, curStart := 1, 1
	if l.whole {
		old, cur = locator.SplitLines(l.shown), locator.SplitLines(l.text)
	} else {
		old, cur = spanLines(l.shown, l.shownRng), spanLines(l.text, l.rng)
		oldStart, curStart = l.shownRng.Start, l.rng.Start
	}
	pre, suf := commonEnds(old, cur)
	var b strings.Builder
	for i := pre; i < len(old)-suf; i++ {
		fmt.Fprintf(&b, "-%d: %s\n", oldStart+i, old[i])
	}
	for i := pre; i < len(cur)-suf; i++ {
		fmt.Fprintf(&b, "+%d: %s\n", curStart+i, cur[i])
	}
	if b.Len() == 0 || b.Len() > MaxHunkBytes {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}
