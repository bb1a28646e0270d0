package runtime

import (
	"errors"
	"fmt"
	"strings"
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
	case l.display != "":
		return l.display
	}
	return l.uri
}

// shownLines is " (lines A-B)" after "the content shown earlier", or "".
func (l *link) shownLines() string {
	if l.whole {
		return ""
	}
	return " (" + linesOf(l.rng) + ")"
}

func noticeChanged(l *link) string {
	return fmt.Sprintf("[concord] %s changed since this read; the content shown earlier%s is no longer accurate. Re-read %s before relying on it.",
		l.name(), l.shownLines(), l.target())
}

func noticeAnnotate(l *link) string {
	return fmt.Sprintf("[concord] %s changed since this read; the content shown%s may be outdated. Re-read %s before relying on it.",
		l.name(), l.shownLines(), l.target())
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
