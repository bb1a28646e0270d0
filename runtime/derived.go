package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// Derived context (docs/protocol.md, "Derived context"). A runtime that
// compacts its history replaces tool results by a summary the model wrote
// from them. The summary restates what those results showed, so it goes
// stale with them; but its text is the model's, not a source's, and is never
// rewritten. The server keeps it as a derived block: the summary's text and,
// per range the replaced results showed (its provenance), the lines as they
// were shown. When a source changes in such a range, the block carries a
// correction: which lines the summary was built from and what they say now.
//
// A derived block holds no link: a link keeps its source's whole text alive
// (the reconciler diffs old against new), while a summary must cost no more
// than the ranges it depends on. Each range is found again in the new text by
// its own lines (locator.Relocate, no context), judged in place when it
// cannot be found.

// derivation is a derived block's own state (blockExtra.derived).
type derivation struct {
	summary string
	provs   []*prov
	// said is the correction the model has in force for the summary: what
	// the latest in-place view or tail erratum said ("" none).
	said string
}

// prov is one range a summary was built from. Guarded by Manager.mu.
type prov struct {
	block   *block
	src     *source
	whole   bool
	orig    Range    // the lines the replaced result showed, numbered as then
	at      Range    // where those lines, or what replaced them, were last found
	old     []string // the lines as shown: all a derived block keeps of a source
	version string   // the version they were shown at
	clause  string   // the correction owed for this range now ("" none)
	reason  string   // why, for the view's reason
}

// derivation returns b's derived state, nil for a block of tool output.
func (b *block) derivation() *derivation {
	if b.x == nil {
		return nil
	}
	return b.x.derived
}

// correction is what the summary's readers must be told now: one line (and
// its changed lines) per range that changed ("" when none).
func (d *derivation) correction() string {
	var parts []string
	for _, p := range d.provs {
		if p.clause != "" {
			parts = append(parts, p.clause)
		}
	}
	return strings.Join(parts, "\n")
}

// bytes is what the block holds: the summary, the ranges' lines and the
// corrections.
func (d *derivation) bytes() int64 {
	n := int64(len(d.summary) + len(d.said))
	for _, p := range d.provs {
		n += int64(len(p.clause))
		for _, l := range p.old {
			n += int64(len(l))
		}
	}
	return n
}

// Compacted records a compaction: the summary anchored at p.Anchor (its full
// text p.Text) replaced the agent's tool results anchored at p.Replaced. What
// those results showed becomes the provenance of a derived block at the
// summary's anchor, and they are released as Release does. Anchors not
// tracked are ignored; when nothing shown is tracked there is no derived
// block. A derived block among the replaced (a summary compacted again), or
// one already at the summary's anchor, hands its provenance on.
func (m *Manager) Compacted(ctx context.Context, p protocol.CompactedParams) (protocol.CompactedResult, error) {
	if err := p.Validate(); err != nil {
		return protocol.CompactedResult{}, err
	}
	res, err := locked(m, func(ix *index) (protocol.CompactedResult, error) { return m.compact(p), nil })
	if err != nil {
		return protocol.CompactedResult{}, err
	}
	m.syncPendingWatches()
	m.flushNotify(p.Agent)
	return res, nil
}

// compact is Compacted under the lock.
func (m *Manager) compact(p protocol.CompactedParams) protocol.CompactedResult {
	res := protocol.CompactedResult{Provenance: []protocol.Provenance{}, Released: []string{}}
	ag := m.ix.agents[p.Agent]
	if ag == nil {
		return res // nothing of this agent is tracked
	}
	if p.Turn > ag.turn {
		ag.turn = p.Turn
	}
	var olds []*block
	seen := map[*block]bool{}
	for _, a := range append(slices.Clone(p.Replaced), p.Anchor) {
		if b := ag.byAnchor[a]; b != nil && !seen[b] {
			seen[b] = true
			olds = append(olds, b)
		}
	}
	slices.SortFunc(olds, func(a, b *block) int { return int(a.seq) - int(b.seq) })
	d := &derivation{summary: p.Text}
	for _, b := range olds {
		if od := b.derivation(); od != nil {
			for _, pv := range od.provs {
				d.add(pv)
			}
			od.provs = nil // handed on: dropping b leaves them attached
			continue
		}
		if st := b.pl.inplace.status(); st == protocol.Invalid || st == protocol.Superseded {
			continue // the model was shown a notice, not the text
		}
		for _, l := range b.links {
			if pv := provOf(l); pv != nil {
				d.add(pv)
			}
		}
	}
	d.prune()
	hadAnchor := ag.byAnchor[p.Anchor] != nil
	var nb *block
	if len(d.provs) > 0 {
		nb = m.ix.newBlock(ag, p.Anchor, ag.turn, 0)
		nb.ext().derived = d
		for _, pv := range d.provs {
			if pv.block == nil { // new: attach it to its source, which stays (or is again) watched
				pv.src.provs = append(pv.src.provs, pv)
				m.ix.unwatch = append(m.ix.unwatch, pv.src)
				if ag.provRefs == nil {
					ag.provRefs = map[*source]int{}
				}
				ag.provRefs[pv.src]++
			}
			pv.block = nb
			m.judge(pv) // against the text the source has now, before the links let it go
		}
	}
	for _, b := range olds {
		m.ix.drop(b, "released")
		if b.anchor != p.Anchor { // the summary's own anchor is not gone: the new summary holds it
			res.Released = append(res.Released, b.anchor)
		}
	}
	if nb == nil {
		return res
	}
	m.ix.count("compacted")
	m.ix.addBlock(nb)
	m.ix.addAnchor(nb)
	placeRegistered(nb, hadAnchor)
	m.recompute(nb)
	if d.correction() != "" {
		m.ix.markReported(nb) // the next sync carries the correction
	}
	res.Derived = nb.id()
	for _, pv := range d.provs {
		res.Provenance = append(res.Provenance, protocol.Provenance{URI: pv.src.id, StartLine: pv.orig.Start, EndLine: pv.orig.End, Version: pv.version})
	}
	return res
}

// provOf is the provenance of what l's copy shows: the model's copy of the
// link, its lines cloned (so that nothing else of the source stays alive).
// Nil when the copy is not known.
func provOf(l *link) *prov {
	src := l.src
	if src == nil && l.x != nil {
		src = l.x.from
	}
	if src == nil {
		return nil
	}
	text := l.shownText()
	pv := &prov{src: src, whole: l.whole, version: l.shownVersion}
	if pv.version == "" {
		pv.version = l.version
	}
	if l.whole {
		pv.old = wholeLines(text)
		pv.orig = Range{Start: 1, End: len(pv.old)}
	} else {
		pv.orig = l.shownRange()
		pv.old = spanLines(text, pv.orig)
	}
	for i, s := range pv.old {
		pv.old[i] = strings.Clone(s)
	}
	pv.at = pv.orig
	return pv
}

// add appends pv unless a range with the same source, lines and text is
// there already (two results that showed the same lines).
func (d *derivation) add(pv *prov) {
	for _, q := range d.provs {
		if q.src == pv.src && q.whole == pv.whole && q.orig == pv.orig && slices.Equal(q.old, pv.old) {
			if pv.block != nil { // handed on from another summary: let it go
				pv.src.detach(pv)
			}
			return
		}
	}
	d.provs = append(d.provs, pv)
}

// prune drops a range that another range of the same source holds with
// the same lines (a grep hit inside a read of its file): one change would
// otherwise be corrected twice.
func (d *derivation) prune() {
	keep := d.provs[:0]
	for i, p := range d.provs {
		inside := false
		for j, q := range d.provs {
			if i != j && q.src == p.src && q.holds(p) && (!p.holds(q) || j < i) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, p)
		} else if p.block != nil {
			p.src.detach(p)
		}
	}
	clear(d.provs[len(keep):])
	d.provs = keep
}

// holds reports whether q's lines contain p's, with the same text there.
func (q *prov) holds(p *prov) bool {
	if p.orig.Start < q.orig.Start || p.orig.End > q.orig.End || p.whole && !q.whole {
		return false
	}
	off := p.orig.Start - q.orig.Start
	return off+len(p.old) <= len(q.old) && slices.Equal(q.old[off:off+len(p.old)], p.old)
}

// detach removes pv from s's ranges (and its agent's count of them).
func (s *source) detach(pv *prov) {
	if i := slices.Index(s.provs, pv); i >= 0 {
		s.provs = slices.Delete(s.provs, i, i+1)
	}
	if pv.block != nil {
		ag := pv.block.agent
		if ag.provRefs[s] <= 1 {
			delete(ag.provRefs, s)
		} else {
			ag.provRefs[s]--
		}
	}
}

// dropDerived detaches a derived block's ranges from their sources when it
// leaves the context. Caller holds Manager.mu; watches are synced after.
func (ix *index) dropDerived(b *block) {
	d := b.derivation()
	if d == nil {
		return
	}
	for _, pv := range d.provs {
		pv.src.detach(pv)
		pv.src.free()
		ix.unwatch = append(ix.unwatch, pv.src)
	}
	d.provs = nil
}

// judgeSource re-judges every range of src after its content or state
// changed, and returns the derived blocks whose correction changed (marked
// dirty). Caller holds Manager.mu.
func (m *Manager) judgeSource(src *source) []*block {
	var out []*block
	for _, pv := range src.provs {
		if !m.judge(pv) || slices.Contains(out, pv.block) {
			continue
		}
		out = append(out, pv.block)
	}
	for _, b := range out {
		m.recompute(b)
		m.ix.markDirty(b)
	}
	return out
}

// judge sets pv's correction from its source's current state, and reports
// whether it changed. Caller holds Manager.mu.
func (m *Manager) judge(pv *prov) bool {
	src := pv.src
	before := pv.clause
	switch {
	case src.state == stateDeleted:
		pv.clause, pv.reason = "", ""
		if m.owed(pv, pv.old, nil) {
			pv.clause = fmt.Sprintf("%s %s, which it was built from%s, was deleted.", pv.head(), src.display, pv.shownLines())
			pv.reason = src.display + " deleted"
		}
	case src.state == stateUnreadable:
		pv.clause, pv.reason = "", ""
		if m.owed(pv, pv.old, nil) {
			pv.clause = fmt.Sprintf("%s %s, which it was built from%s, could not be re-read (%s).", pv.head(), src.display, pv.shownLines(), src.readErr)
			pv.reason = src.display + " unreadable"
		}
	case !src.known:
		return false // a keyed source known by its version alone: nothing to compare yet
	default:
		m.judgeText(pv)
	}
	return pv.clause != before
}

// judgeText judges pv against its source's current text.
func (m *Manager) judgeText(pv *prov) {
	src := pv.src
	lines := src.getLines()
	if pv.whole {
		lines = wholeLines(src.text)
	}
	pv.clause, pv.reason = "", ""
	cur, found := m.locate(pv, lines)
	if !found {
		if m.owed(pv, pv.old, nil) {
			pv.clause = fmt.Sprintf("%s %s, which it was built from, %s removed (%s now has %s).", pv.head(), pv.target(), pv.were(), src.display, plural(len(lines), "line"))
			pv.reason = pv.target() + " removed"
		}
		return
	}
	pv.at = cur
	now := lines[cur.Start-1 : cur.End]
	if slices.Equal(now, pv.old) {
		return
	}
	var body strings.Builder
	for _, h := range changes(pv.old, now) {
		o, n := pv.old[h.OldStart:h.OldEnd], now[h.NewStart:h.NewEnd]
		if !m.owed(pv, o, n) {
			continue
		}
		if h.OldEnd == h.OldStart {
			body.WriteString("(inserted after line " + itoa(pv.orig.Start+h.OldStart-1) + ")\n")
		}
		for i, l := range o {
			hunkLine(&body, '-', pv.orig.Start+h.OldStart+i, l)
		}
		for i, l := range n {
			hunkLine(&body, '+', cur.Start+h.NewStart+i, l)
		}
	}
	if body.Len() == 0 {
		return // nothing the rule counts changed
	}
	nowAt := "now " + linesOf(cur)
	if pv.whole {
		nowAt = fmt.Sprintf("now %d lines", len(lines))
	}
	pv.reason = pv.target() + " changed"
	if body.Len() > MaxHunkBytes {
		re := src.display
		if !pv.whole {
			re += " " + linesOf(cur)
		}
		pv.clause = fmt.Sprintf("%s %s, which it was built from, changed (%s). Re-read %s before relying on it.", pv.head(), pv.target(), nowAt, re)
		return
	}
	pv.clause = fmt.Sprintf("%s %s, which it was built from, changed (%s):\n%s", pv.head(), pv.target(), nowAt, strings.TrimSuffix(body.String(), "\n"))
}

// changes are the line diff of old and cur, a replacement of as many lines
// as it removes cut into one change per line: each line is then judged on
// its own, so an unmentioned line next to a mentioned one stays out.
func changes(old, cur []string) []locator.Hunk {
	var out []locator.Hunk
	for _, h := range locator.Hunks(old, cur, locator.DefaultParams()) {
		if n := h.OldEnd - h.OldStart; n > 1 && n == h.NewEnd-h.NewStart {
			for i := range n {
				out = append(out, locator.Hunk{OldStart: h.OldStart + i, OldEnd: h.OldStart + i + 1, NewStart: h.NewStart + i, NewEnd: h.NewStart + i + 1})
			}
			continue
		}
		out = append(out, h)
	}
	return out
}

// locate finds pv's lines in the source's current lines: where they are now
// (unchanged or moved), where what replaced them is (a local edit), or, when
// neither can be told, the same line numbers; found is false when the lines
// are gone.
func (m *Manager) locate(pv *prov, lines []string) (Range, bool) {
	if pv.whole {
		return Range{Start: 1, End: len(lines)}, true // emptied: every line changed
	}
	if len(lines) == 0 {
		return Range{}, false
	}
	at := pv.at
	if at.Start >= 1 && at.End <= len(lines) && slices.Equal(lines[at.Start-1:at.End], pv.old) {
		return at, true
	}
	res := locator.Relocate(locator.Anchor{Range: at, Span: pv.old}, pv.src.text, m.params)
	switch {
	case res.Status != locator.Invalid && res.Range.Lines() > 0:
		return res.Range, true
	case res.Removed:
		return Range{}, false
	case res.Near != nil && res.Near.Lines() > 0 && res.Near.End <= len(lines):
		return *res.Near, true
	case at.Start > len(lines):
		return Range{}, false
	}
	// Not locatable by its lines: the same numbers, as far as the source goes.
	return Range{Start: at.Start, End: min(at.End, len(lines))}, true
}

// owed reports whether a change of old lines into cur (nil: gone) is worth
// a correction under the policy for pv's source: any change (range), or
// only one the summary mentions (mentioned, the default).
func (m *Manager) owed(pv *prov, old, cur []string) bool {
	if m.resolve(nil, pv.src).derived == protocol.DerivedRange {
		return true
	}
	return mentions(pv.block.derivation().summary, old, cur)
}

// head starts a clause: "[concord] The summary in ANCHOR is outdated:".
func (pv *prov) head() string {
	return "[concord] The summary in " + pv.block.anchor + " is outdated:"
}

// target is "PATH lines A-B" (the lines the summary saw), or PATH for a
// whole source.
func (pv *prov) target() string {
	if pv.whole {
		return pv.src.display
	}
	return pv.src.display + " " + linesOf(pv.orig)
}

// shownLines is " (lines A-B)", or "" for a whole source.
func (pv *prov) shownLines() string {
	if pv.whole {
		return ""
	}
	return " (" + linesOf(pv.orig) + ")"
}

func (pv *prov) were() string {
	if pv.orig.Lines() == 1 && !pv.whole {
		return "was"
	}
	return "were"
}

// derivedView is the view of a derived block: its status, and its
// correction as the notice.
func derivedView(b *block) protocol.BlockView {
	v := protocol.BlockView{Block: b.id(), Anchor: b.anchor, Agent: b.agent.name, Turn: b.turn, Status: b.status(), Notice: b.notice(), Reason: b.reason()}
	return v
}

// placeDerived places a derived block's view (where: decide's answer). In
// place, Show is the summary as written followed by its correction (absent:
// the summary stands); at the tail, the erratum is the correction, or that
// the summary is current again once an earlier one no longer holds. A
// correction is said once: nothing is sent while the one in force is still
// the truth. Caller holds Manager.mu.
func placeDerived(b *block, w where, tail *tailErrata, out []protocol.BlockView) []protocol.BlockView {
	d := b.derivation()
	cur := d.correction()
	switch w {
	case inPlace:
		v := derivedView(b)
		if cur != "" {
			s := d.summary + "\n\n" + cur
			v.Show = &s
		}
		d.said = cur
		b.pl = blockPlace{sentAfter: b.pl.sentAfter, at: b.pl.at, inplace: codeOf(v.Status)}
		return append(out, v)
	case atTail:
		b.pl.deferred = true
		if cur == d.said {
			return out
		}
		text := cur
		if cur == "" {
			text = "[concord] The summary in " + b.anchor + " is current again."
		}
		d.said = cur
		b.pl.note = noteClaim
		return tail.add(out, derivedView(b), []clause{{anchor: b.anchor, raw: text}})
	}
	b.pl.deferred = true
	return out
}

// recomputeDerived sets a derived block's status and notice from its
// ranges' corrections.
func recomputeDerived(b *block, d *derivation) {
	c := d.correction()
	st := protocol.Valid
	var reasons []string
	for _, pv := range d.provs {
		if pv.clause != "" {
			reasons = append(reasons, pv.reason)
		}
	}
	if c != "" {
		st = protocol.DerivedStale
	}
	b.setStatus(st)
	b.setNotice(c)
	if len(reasons) > 0 || b.reason() != "" {
		b.ext().reason = strings.Join(reasons, "; ")
	}
}

// DefaultDerived is the rule when no policy layer sets derived: which
// changes to a summary's sources are worth a correction (docs/protocol.md,
// "Derived context", has the figures it was chosen on).
const DefaultDerived = protocol.DerivedMentioned

// mentions reports whether summary mentions a change of old lines into cur
// (nil: removed): one of the old lines, or a word the change took out of
// them (a name, a number, an identifier, not a common word), appears in
// it. Lines inserted with none removed mention nothing the summary could
// have said.
func mentions(summary string, old, cur []string) bool {
	if len(old) == 0 {
		return false
	}
	low := strings.ToLower(summary)
	for _, l := range old {
		if t := strings.ToLower(strings.TrimSpace(l)); len(t) >= minQuoted && strings.Contains(low, t) {
			return true
		}
	}
	kept := map[string]bool{}
	for _, l := range cur {
		for _, w := range words(l) {
			kept[w] = true
		}
	}
	var gone []string
	for _, l := range old {
		for _, w := range words(l) {
			if !kept[w] && !slices.Contains(gone, w) && telling(w) {
				gone = append(gone, w)
			}
		}
	}
	if len(gone) == 0 {
		return false
	}
	said := map[string]bool{}
	for _, w := range words(summary) {
		said[w] = true
	}
	for _, w := range gone {
		if said[w] {
			return true
		}
	}
	return false
}

// minQuoted is the shortest line (trimmed) that counts as quoted when the
// summary contains it: shorter ones ("}", "end") are everywhere.
const minQuoted = 8

// words splits s into lower-cased words: runs of letters, digits and "_".
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// telling reports whether a word names something a summary would restate
// as a fact: a number of any length, or a word of three letters or more
// that is not a common English or code word.
func telling(w string) bool {
	if w == "" {
		return false
	}
	if w[0] >= '0' && w[0] <= '9' {
		return true
	}
	return len(w) >= 3 && !commonWords[w]
}

// commonWords are words too common to tie a change to a summary.
var commonWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are was were with this that from has have had not but its his her their
		into onto than then also which who whom been being there here they them these those you your our all any can
		will would should could may might must shall does did done out over under about after before when where why how
		what some such only other more most very just get set use used
		return def func function var let const else elif import package self end`) {
		m[w] = true
	}
	return m
}()

// plural is "1 line", "3 lines".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(n) + " " + what + "s"
}

// wholeLines are a whole source's lines as a summary's range keeps them:
// without the blank lines at its end, which tools show differently (with
// or without a final newline) and which state nothing.
func wholeLines(text string) []string {
	ls := locator.SplitLines(text)
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}
