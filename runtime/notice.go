package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/concord-ctx/concord/locator"
)

// Notice texts. Every notice starts with "[concord]", names the source (plain
// path for files, the URI otherwise) and the lines, and tells the model to
// re-read them.

func linesOf(r Range) string {
	if r.Start == r.End {
		return fmt.Sprintf("line %d", r.Start)
	}
	return fmt.Sprintf("lines %d-%d", r.Start, r.End)
}

// target is what to re-read: "path lines A-B", or "path" for a whole source.
func (l *link) target() string {
	name := l.name()
	if l.whole {
		return name
	}
	return name + " " + linesOf(l.rng)
}

func (l *link) name() string {
	switch {
	case l.src != nil:
		return l.src.display
	case l.x.from.display != "":
		return l.x.from.display
	}
	return l.x.from.id
}

// shownLines is " (lines A-B)" after "the content shown earlier", or "".
func (l *link) shownLines() string {
	if l.whole {
		return ""
	}
	return " (" + linesOf(l.rng) + ")"
}

// whereNow says where a ranged link's lines are after a change the locator
// could not repair, so a re-read notice never names lines that now hold
// something else.
type whereNow struct {
	known   bool  // the place is known: at
	at      Range // current lines of the span's place
	removed bool  // the lines were deleted
	total   int   // the source's current line count
}

func (rc *reconciler) whereNow(l *link, res locator.Result) whereNow {
	w := whereNow{total: len(rc.newLines)}
	switch {
	case l.whole:
	case res.Removed:
		w.removed = true
	case res.Near != nil && res.Near.Lines() > 0:
		w.known, w.at = true, *res.Near
	case !rc.shifted():
		// The edit kept every line count: the same numbers hold the same place.
		w.known, w.at = l.rng.End <= w.total, l.rng
	}
	return w
}

// shifted reports whether the change moved line numbers (lines added or
// removed), so old line numbers may now point at other lines.
func (rc *reconciler) shifted() bool {
	return !rc.oldKnown || len(rc.oldLines) != len(rc.newLines)
}

// reread is the notice's tail: where the lines went, then what to re-read.
func (l *link) reread(w whereNow) string {
	name := l.name()
	total := fmt.Sprintf("%s (now %d lines)", name, w.total)
	these, were, are := "Those lines", "were", "are"
	if l.rng.Start == l.rng.End {
		these, were, are = "That line", "was", "is"
	}
	switch {
	case l.whole:
		return "Re-read " + name
	case w.removed:
		return fmt.Sprintf("%s %s removed. Re-read %s", these, were, total)
	case !w.known:
		return fmt.Sprintf("Where %s %s now is unknown. Re-read %s", strings.ToLower(these), are, total)
	case w.at != l.rng:
		return fmt.Sprintf("%s %s now %s. Re-read %s %s", these, are, linesOf(w.at), name, linesOf(w.at))
	}
	return "Re-read " + l.target()
}

func noticeChanged(l *link, w whereNow) string {
	return fmt.Sprintf("[concord] %s changed since this read; the content shown earlier%s is no longer accurate. %s before relying on it.",
		l.name(), l.shownLines(), l.reread(w))
}

func noticeAnnotate(l *link, w whereNow) string {
	return fmt.Sprintf("[concord] %s changed since this read; the content shown%s may be outdated. %s before relying on it.",
		l.name(), l.shownLines(), l.reread(w))
}

func noticeDeleted(l *link) string {
	return fmt.Sprintf("[concord] %s was deleted after this read; the content shown earlier%s is no longer accurate. Re-read %s (check whether it still exists) before relying on it.",
		l.name(), l.shownLines(), l.target())
}

func noticeUnreadable(l *link, reason string) string {
	return fmt.Sprintf("[concord] %s changed and could not be re-read (%s); the content shown earlier%s may be outdated. Re-read %s before relying on it.",
		l.name(), reason, l.shownLines(), l.target())
}

func targets(b *block) string {
	ts := make([]string, 0, len(b.links))
	seen := map[string]bool{}
	for _, l := range b.links {
		t := l.target()
		if !seen[t] {
			seen[t] = true
			ts = append(ts, t)
		}
	}
	return strings.Join(ts, ", ")
}

func noticeAged(b *block, now, max int) string {
	t := targets(b)
	return fmt.Sprintf("[concord] this read of %s is from turn %d (now turn %d, limit %d turns) and may be outdated. Re-read %s before relying on it.",
		t, b.turn, now, max, t)
}

// noticeSuperseded names the newer read by its turn: block ids are internal
// and mean nothing to the model.
func noticeSuperseded(b *block, by *block) string {
	return fmt.Sprintf("[concord] a newer read of %s (turn %d) is in the context; this earlier read was removed. Rely on the newer read.",
		targets(b), by.turn)
}

// noticeOrphaned: the newer read that replaced this one left the context
// too (released or rewound), so nothing shows these lines any more.
func noticeOrphaned(b *block) string {
	t := targets(b)
	return fmt.Sprintf("[concord] a newer read of %s replaced this one and has since been removed from the context; the content shown earlier is not available. Re-read %s before relying on it.",
		t, t)
}

// readReason is errReason with the cases a notice must word itself: a path
// that now leads outside the roots (a symlink swapped in after the read).
func readReason(err error) string {
	if errors.Is(err, ErrOutsideRoots) {
		return "it now leads outside the workspace roots"
	}
	return errReason(err)
}

// causeEmptied: the source is present but empty (a writer between truncate
// and write, or a file cleared). Restorable like a deletion.
const causeEmptied = causeUnreadable + 1

func noticeEmptied(l *link) string {
	return fmt.Sprintf("[concord] %s is empty since this read; the content shown earlier%s is no longer accurate. Re-read %s before relying on it.",
		l.name(), l.shownLines(), l.target())
}
