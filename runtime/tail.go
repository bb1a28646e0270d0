package runtime

import (
	"fmt"
	"strings"

	"github.com/concord-ctx/concord/locator"
)

// End-of-file claims. A ranged read that reached the source's last line
// "covers the tail": tools tell the model so ("(End of file - total 60
// lines)", "only 60 lines"), and the claim must stay true. When lines are
// appended, the link's range grows to the new last line and the block is
// patched; every source view carries the current line count.

// extendTail grows a tail link over lines appended after it. The link's
// range was located first, so whatever follows its end was not in the
// source when the read reached the end.
func (rc *reconciler) extendTail(l *link) {
	if !l.tail || l.whole || l.state != linkOK || !l.tracked {
		return
	}
	n := len(rc.newLines)
	if l.rng.End >= n || l.rng.End < 1 {
		return
	}
	from := l.rng
	l.rng.End = n
	l.text = locator.JoinLines(rc.newLines[l.rng.Start-1 : n])
	l.patched = true
	rc.m.ix.count("extended")
	rc.touch(l, fmt.Sprintf("end of file: %s appended; the read now covers %s", linesOf(Range{Start: from.End + 1, End: n}), linesOf(l.rng)))
}

// totalLines is the current line count of l's source, nil when unknown.
func (l *link) totalLines() *int {
	s := l.src
	if s == nil || s.state != statePresent || !s.known {
		return nil
	}
	n := lineCount(s.text)
	return &n
}

// lineCount is len(locator.SplitLines(s)) without building the slice.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
