package runtime

import "github.com/concord-ctx/concord/locator"

// Most of the cost of a change to a big, much-read source is the diff and
// the locator's verdicts on the spans it overlaps. Neither needs the
// index, only the old and new texts and the ranges, so they are computed
// before the manager lock is taken (prepare); under the lock the
// reconciliation takes them from the memo and only swaps results in. A
// source's content moves only under its io lock, which every caller holds,
// so what was prepared still holds when applied; applyContent checks the
// base text all the same and prepares nothing it cannot trust.

// prepared is the index-free part of applying one new content of a source.
type prepared struct {
	base     string   // the source's text it was computed against
	oldLines []string // base's lines
	text     string   // the new content as the model would see it (sourceText)
	lines    []string // text's lines
	pre, suf int      // lines shared at the start and the end (commonEnds)
	edit     *locator.Edit
	memo     map[Range]locator.Result // the locator's verdict per distinct overlapping range
}

// prepareAhead turns prepare on (a test runs the same session without it).
var prepareAhead = true

// prepare computes, outside the manager lock, what applying c to src will
// need; nil when the read failed or there is nothing to compare. Caller
// holds src.io and not m.mu.
func (m *Manager) prepare(src *source, c Content, err error) *prepared {
	if err != nil || !prepareAhead {
		return nil
	}
	var base string
	var oldLines []string
	var known, same bool
	m.withLock(func() {
		known = src.state == statePresent && src.known && src.nlinks > 0
		same = src.version == c.Version
		base, oldLines = src.text, src.lines
	})
	if !known || same {
		return nil
	}
	p := &prepared{base: base, oldLines: oldLines, text: sourceText(c.Text)}
	if p.oldLines == nil {
		p.oldLines = locator.SplitLines(base)
	}
	p.lines = locator.SplitLines(p.text)
	p.pre, p.suf = commonEnds(p.oldLines, p.lines)
	if p.pre == len(p.oldLines) && p.pre == len(p.lines) {
		return p // the same lines: nothing to locate
	}
	var ranges []Range
	m.withLock(func() { ranges = p.overlapping(src) })
	if len(ranges) == 0 {
		return p
	}
	p.edit = locator.Diff(p.base, p.text, m.params)
	p.memo = make(map[Range]locator.Result, len(ranges))
	for _, r := range ranges {
		if _, ok := p.memo[r]; !ok {
			p.memo[r] = p.edit.Locate(r)
		}
	}
	return p
}

// overlapping returns the ranges of src's tracked spans that the change
// overlaps: the ones reconciler.locate would judge with the diff (a span
// wholly before the change stays, one wholly after it moves). Caller holds
// m.mu.
func (p *prepared) overlapping(src *source) []Range {
	var rs []Range
	n := len(p.oldLines)
	for _, l := range src.order {
		if l.src != src || l.whole || l.state != linkOK || !l.tracked || l.rng.End > n {
			continue
		}
		if l.rng.End > p.pre && l.rng.Start <= n-p.suf {
			rs = append(rs, l.rng)
		}
	}
	return rs
}

// fits reports whether p was computed against src's current text. Caller
// holds m.mu.
func (p *prepared) fits(src *source) bool {
	return p != nil && src.state == statePresent && src.known && sharesBytes(p.base, src.text)
}

// use gives the reconciler what was prepared: the new lines, the changed
// region, the diff and the verdicts.
func (rc *reconciler) use(p *prepared) {
	rc.oldLines, rc.newLines = p.oldLines, p.lines
	rc.pre, rc.suf, rc.regionOK = p.pre, p.suf, true
	rc.edit, rc.memo = p.edit, p.memo
}
