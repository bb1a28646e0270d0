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

// erratum returns the text that corrects b's in-place copy, or "" when the
// in-place copy needs no correction. Caller holds m.mu.
func erratum(b *block) string {
	if b.pl.inplace == Invalid {
		return "" // in place it shows a notice only: nothing there can look current
	}
	switch b.status {
	case Invalid, Stale, Superseded:
		return "[concord] About the output of " + b.anchor + ": " + thatRead(b.notice)
	}
	var parts []string
	for _, l := range b.links {
		if l.text == l.shown && (l.whole || l.rng == l.shownRng) {
			continue
		}
		parts = append(parts, linkErratum(b.anchor, l))
	}
	if len(parts) == 0 {
		if b.pl.noted {
			// An earlier erratum said otherwise; the copy in place is true again.
			return "[concord] The output of " + b.anchor + " is current again."
		}
		return ""
	}
	return strings.Join(parts, "\n")
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
// place.
func linkErratum(anchor string, l *link) string {
	what := anchor + " showed " + l.name()
	now := ""
	if !l.whole {
		what += " " + linesOf(l.shownRng)
		now = " (now " + linesOf(l.rng) + ")"
	}
	switch {
	case l.text == l.shown:
		return fmt.Sprintf("[concord] Outdated: %s; the same text is now at %s.", what, linesOf(l.rng))
	case len(l.pl.edits) > 0 && l.pl.outside == 0:
		s := ""
		if len(l.pl.edits) > 1 {
			s = "s"
		}
		return fmt.Sprintf("[concord] Outdated: %s; your edit%s in %s changed it%s.", what, s, strings.Join(l.pl.edits, ", "), now)
	}
	if h, ok := hunk(l); ok {
		return fmt.Sprintf("[concord] Outdated: %s; changed%s:\n%s", what, now, h)
	}
	return fmt.Sprintf("[concord] Outdated: %s; changed%s. Re-read %s before relying on it.", what, now, l.target())
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
