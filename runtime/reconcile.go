package runtime

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// sourceText is a source's content as the model would see it: CRLF as LF, and no leading byte
// order mark (an encoding signature, not content: most tools drop it when they decode).
func sourceText(s string) string { return normalizeText(strings.TrimPrefix(s, bom)) }

// observedText is what a tool showed: a read that starts at line 1 may still carry the byte
// order mark (a tool that decoded without dropping it); it is not content either way.
func observedText(s string, fromTop bool) string {
	if fromTop {
		s = strings.TrimPrefix(s, bom)
	}
	return normalizeText(s)
}

const bom = "\uFEFF"

// sameLines reports whether the lines a tool showed are the source's lines. A byte that is not
// UTF-8 is U+FFFD in the source's text; a tool that decoded such a file as Latin-1 (or cp1252)
// shows another character there, one per byte: that is the same content, not a change.
func sameLines(shown, cur []string) bool {
	if len(shown) != len(cur) {
		return false
	}
	for i := range shown {
		if shown[i] != cur[i] && !sameUndecodable(shown[i], cur[i]) {
			return false
		}
	}
	return true
}

// sameUndecodable: equal rune by rune, where the source's U+FFFD stands for any non-ASCII rune.
func sameUndecodable(shown, cur string) bool {
	if !strings.ContainsRune(cur, utf8.RuneError) {
		return false
	}
	a, b := []rune(shown), []rune(cur)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && (b[i] != utf8.RuneError || a[i] < utf8.RuneSelf) {
			return false
		}
	}
	return true
}

// normalizeText turns CRLF into LF, as the protocol promises.
func normalizeText(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// spanLines splits a ranged link's text into its lines. Unlike SplitLines it
// keeps a final empty line: lines "x" and "" joined by "\n" are "x\n", which
// is two lines when the range says so. A text that ends in "\n" and has one
// line too many for its range carries a terminator instead.
func spanLines(text string, r Range) []string {
	ls := strings.Split(text, "\n")
	if n := len(ls); n == r.Lines()+1 && ls[n-1] == "" {
		ls = ls[:n-1]
	}
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

// wholeText is a whole-source link's model-visible text: no trailing newline.
func wholeText(s string) string { return strings.TrimSuffix(s, "\n") }

// commonEnds returns how many leading and trailing lines a and b share
// (pre+suf never exceeds the shorter slice).
func commonEnds(a, b []string) (pre, suf int) {
	n := min(len(a), len(b))
	for pre < n && a[pre] == b[pre] {
		pre++
	}
	for suf < n-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return pre, suf
}

// wholeVerdict judges a whole-source link: unchanged, a local edit or drift,
// by the token similarity of the old and new content (the locator's measure;
// it trims the common ends first, so a small edit in a big file is cheap).
func wholeVerdict(old, cur []string, p locator.Params) (locator.Status, string) {
	pre, suf := commonEnds(old, cur)
	if pre == len(old) && pre == len(cur) {
		return locator.Unchanged, ""
	}
	sim := locator.Similarity(old, cur)
	region := fmt.Sprintf("%s of %d changed", linesOf(Range{Start: pre + 1, End: len(old) - suf}), len(old))
	if len(old)-suf < pre+1 {
		region = fmt.Sprintf("%d lines inserted after line %d", len(cur)-len(old), pre)
	}
	if sim >= p.MinSimilarity {
		return locator.Patched, fmt.Sprintf("local edit: %s (similarity %.2f)", region, sim)
	}
	return locator.Invalid, fmt.Sprintf("drift: %s (similarity %.2f < %.2f)", region, sim, p.MinSimilarity)
}

// reconciler applies one new state of one source to its links.
type reconciler struct {
	m        *Manager
	src      *source
	oldText  string
	oldLines []string
	oldKnown bool
	newLines []string
	edit     *locator.Edit
	memo     map[Range]locator.Result // Locate's verdict per distinct old range, for this change
	pre, suf int
	regionOK bool
	prefix   string // reason prefix ("raced read: ")
	touched  map[*block][]string
	order    []*block
}

func (m *Manager) newReconciler(src *source, oldText string, oldLines []string, oldKnown bool) *reconciler {
	src.epoch++ // link ranges may move from here on: span indexes are stale
	rc := &reconciler{m: m, src: src, oldText: oldText, oldLines: oldLines, oldKnown: oldKnown, touched: map[*block][]string{}}
	if src.state == statePresent && src.known {
		rc.newLines = src.getLines()
	}
	if oldKnown && rc.oldLines == nil {
		rc.oldLines = locator.SplitLines(oldText)
	}
	return rc
}

// touch records that l's block changed visibly, with a reason.
func (rc *reconciler) touch(l *link, reason string) {
	b := l.block
	if _, ok := rc.touched[b]; !ok {
		rc.order = append(rc.order, b)
	}
	if reason != "" {
		rc.touched[b] = append(rc.touched[b], rc.prefix+reason)
	} else if rc.touched[b] == nil {
		rc.touched[b] = []string{}
	}
}

// finish recomputes the touched blocks' views and marks them dirty.
func (rc *reconciler) finish(registered bool) []*block {
	sort.Slice(rc.order, func(i, j int) bool { return rc.order[i].seq < rc.order[j].seq })
	for _, b := range rc.order {
		if rs := rc.touched[b]; len(rs) > 0 {
			b.ext().reason = strings.Join(rs, "; ")
		}
		rc.m.recompute(b)
		if registered {
			rc.m.ix.markDirty(b)
		}
	}
	return rc.order
}

// link reconciles one link against the source's new text.
func (rc *reconciler) link(l *link) {
	l.holdShown() // the model's copy, while text and rng change
	defer l.settleShown()
	if l.whole && isListing(rc.src) {
		rc.listing(l) // (out by policy too: keep naming every entry that changed since the listing shown)
		return
	}
	if (l.state != linkOK || len(rc.newLines) == 0) && rc.shownCurrent(l) {
		// Back to what the model has (a change reverted, a deleted file
		// restored, a file read empty and emptied again): its copy is true
		// again, whatever happened between.
		l.rng = l.shownRange()
		if l.whole {
			l.text = wholeText(rc.src.text)
		} else {
			l.text = locator.JoinLines(rc.newLines[l.rng.Start-1 : l.rng.End])
		}
		rc.restore(l)
		rc.touch(l, "restored: the text shown is current again")
		rc.extendTail(l)
		return
	}
	if l.state != linkOK && l.cause == causePolicy {
		return // the model was told; the block waits for a re-read
	}
	if len(rc.newLines) == 0 && rc.src.state == statePresent && rc.src.known {
		// Emptied: most often a writer between truncate and write. Like a
		// deletion, the span is kept as an anchor and found again when the
		// content is back, instead of a drift that waits for a re-read.
		rc.gone(l, causeEmptied, "")
		return
	}
	if l.whole {
		old := rc.oldLines
		if !(l.state == linkOK && rc.oldKnown && sharesBytes(l.text, wholeText(rc.oldText))) {
			old = locator.SplitLines(l.text)
		}
		st, reason := wholeVerdict(old, rc.newLines, rc.m.params)
		rc.apply(l, locator.Result{Status: st, Reason: reason})
		return
	}
	if l.state == linkOK && l.tracked && rc.oldKnown && l.rng.End <= len(rc.oldLines) {
		rc.apply(l, rc.locate(l.rng, l.text))
	} else {
		rc.apply(l, rc.relocate(l))
	}
	rc.extendTail(l)
}

// locate maps a tracked range through the change: untouched spans before the
// changed region stay, spans after it shift, only overlapping ones go
// through the diff.
func (rc *reconciler) locate(r Range, text string) locator.Result {
	if !rc.regionOK {
		rc.pre, rc.suf = commonEnds(rc.oldLines, rc.newLines)
		rc.regionOK = true
	}
	switch {
	case r.End <= rc.pre:
		return locator.Result{Status: locator.Unchanged, Range: r, Text: text}
	case r.Start > len(rc.oldLines)-rc.suf:
		d := len(rc.newLines) - len(rc.oldLines)
		if d == 0 {
			return locator.Result{Status: locator.Unchanged, Range: r, Text: text}
		}
		return locator.Result{Status: locator.Moved, Range: Range{Start: r.Start + d, End: r.End + d}, Text: text}
	}
	if rc.edit == nil {
		rc.edit = locator.Diff(rc.oldText, rc.src.text, rc.m.params)
	}
	// Many agents read the same spans: judge each distinct span once per
	// change (the text at r is the old text's, the same for every link).
	if res, ok := rc.memo[r]; ok {
		return res
	}
	res := rc.edit.Locate(r)
	if rc.memo == nil {
		rc.memo = map[Range]locator.Result{}
	}
	rc.memo[r] = res
	return res
}

// relocate finds a span whose old surroundings are unknown (keyed source
// without full text, a source that comes back, a raced read).
func (rc *reconciler) relocate(l *link) locator.Result {
	a := l.anchor()
	if a == nil {
		a = &locator.Anchor{Range: l.rng, Span: spanLines(l.text, l.rng)}
	}
	if a.Range.Start >= 1 && a.Range.End <= len(rc.newLines) && slices.Equal(rc.newLines[a.Range.Start-1:a.Range.End], a.Span) {
		return locator.Result{Status: locator.Unchanged, Range: a.Range, Text: locator.JoinLines(a.Span)}
	}
	res := locator.Relocate(*a, rc.src.text, rc.m.params)
	if res.Status != locator.Invalid || a.Range.Start < 1 || a.Range.End > len(rc.newLines) || len(a.Span) == 0 {
		return res
	}
	// Without context a locally edited span cannot be found by its anchors;
	// judge it in place: the same lines, edited locally?
	win := rc.newLines[a.Range.Start-1 : a.Range.End]
	// A final newline keeps a last empty line a line (Locate splits its texts).
	in := locator.Locate(locator.JoinLines(a.Span)+"\n", locator.JoinLines(win)+"\n", Range{Start: 1, End: len(a.Span)}, rc.m.params)
	if in.Status == locator.Patched && in.Range == (Range{Start: 1, End: len(win)}) {
		in.Range = a.Range
		in.Reason += " (in place)"
		return in
	}
	return res
}

// apply turns a locator verdict into the link's new state under the policy.
func (rc *reconciler) apply(l *link, res locator.Result) {
	m := rc.m
	src := rc.src
	wasOK := l.state == linkOK
	m.ix.count(string(res.Status))
	switch res.Status {
	case locator.Unchanged, locator.Moved:
		if l.whole {
			if !sharesBytes(l.text, wholeText(src.text)) {
				l.text = wholeText(src.text) // same lines; share the source's copy
			}
		} else if res.Range != l.rng {
			reason := moveReason(l.rng, res.Range)
			l.rng, l.text = res.Range, res.Text
			l.patched = true
			rc.restore(l)
			rc.touch(l, reason)
			return
		}
		if !wasOK {
			rc.restore(l)
			rc.touch(l, "restored: the source is back with the same content")
			return
		}
		l.version = src.version
	case locator.Patched:
		if !l.whole && rc.readsWholeFile(l) {
			// A read of lines 1 to the end showed the whole file: patched,
			// it still shows the whole file, or a line moved to its other
			// end would fall out of the read.
			res.Range, res.Text = Range{Start: 1, End: len(rc.newLines)}, locator.JoinLines(rc.newLines)
		}
		rc.act(l, m.resolve(l.block, src).local, res, true)
	default:
		pol := m.resolve(l.block, src)
		if !pol.driftSet && rc.readsWholeFile(l) {
			// The re-read a notice would ask for returns exactly the
			// current file: refresh it all (the lines that replaced a
			// ranged read are the whole file now).
			all := Range{Start: 1, End: len(rc.newLines)}
			res.Near = &all
			pol.drift = protocol.Refresh
		}
		rc.act(l, pol.drift, res, false)
	}
}

// MaxWholeRefreshBytes bounds the default refresh of a read that showed a
// whole source: beyond it a drift is suppressed like any other.
const MaxWholeRefreshBytes = 16 << 10

// readsWholeFile: by default a drift is suppressed and the model told to
// re-read. A read that showed a whole file (a whole link, or lines 1 to
// the last) would get back exactly the current text from that re-read, so
// it is refreshed instead and the model saves the round trip, up to
// MaxWholeRefreshBytes. Other schemes keep the notice: what their tools
// show around a record is not known here.
func (rc *reconciler) readsWholeFile(l *link) bool {
	covers := l.whole || l.tail && l.rng.Start == 1 && l.tracked && l.state == linkOK
	return covers && rc.src.scheme == "file" && len(rc.src.text) <= MaxWholeRefreshBytes && len(rc.newLines) > 0
}

// shownCurrent reports whether the source's new text has, at the lines the
// model's copy of l names, exactly that copy.
func (rc *reconciler) shownCurrent(l *link) bool {
	if rc.src.state != statePresent || !rc.src.known {
		return false
	}
	if l.whole {
		return l.shownText() == wholeText(rc.src.text)
	}
	r := l.shownRange()
	return r.Start >= 1 && r.End <= len(rc.newLines) && slices.Equal(rc.newLines[r.Start-1:r.End], spanLines(l.shownText(), r))
}

func (rc *reconciler) restore(l *link) {
	l.state, l.cause, l.tracked = linkOK, causeNone, true
	l.setAnchor(nil)
	l.setNotice("")
	l.version = rc.src.version
}

// act applies a policy action to a link whose span changed.
func (rc *reconciler) act(l *link, a protocol.Action, res locator.Result, local bool) {
	src := rc.src
	switch a {
	case protocol.Patch:
		if local {
			if l.whole {
				l.text = wholeText(src.text)
			} else {
				l.rng, l.text = res.Range, res.Text
			}
			l.patched = true
			rc.restore(l)
			rc.touch(l, res.Reason)
			return
		}
		fallthrough // drift cannot be relocated: rewrite the same lines in place
	case protocol.Refresh:
		if l.whole {
			l.text = wholeText(src.text)
		} else {
			r := l.rng
			if local {
				r = res.Range
			} else if res.Near != nil && res.Near.Lines() > 0 {
				r = *res.Near // the lines that replaced the span, where it went
			}
			if r.End > len(rc.newLines) {
				r.End = len(rc.newLines)
			}
			if r.Start > r.End {
				rc.drop(l, protocol.Suppress, locator.Result{Status: locator.Invalid, Removed: true}, res.Reason+fmt.Sprintf("; refresh: %s no longer exist", linesOf(l.rng)))
				return
			}
			l.rng, l.text = r, locator.JoinLines(rc.newLines[r.Start-1:r.End])
		}
		l.patched = true
		rc.restore(l)
		rc.m.ix.count("refreshed")
		rc.touch(l, fmt.Sprintf("refreshed: %s (%s)", rc.whichLines(l), res.Reason))
	default:
		rc.drop(l, a, res, res.Reason)
	}
}

func (rc *reconciler) whichLines(l *link) string {
	if l.whole {
		return "whole source re-read"
	}
	return linesOf(l.rng) + " re-read"
}

// drop keeps the old text with a warning (annotate) or omits it (suppress).
// res is the locator's verdict: where the span went, when known, is what
// the notice asks the model to re-read.
func (rc *reconciler) drop(l *link, a protocol.Action, res locator.Result, reason string) {
	w := rc.whereNow(l, res)
	l.tracked, l.cause, l.tail = false, causePolicy, false
	l.setAnchor(nil)
	if a == protocol.Annotate {
		l.keepShown()
		l.state = linkStale
		l.setNotice(noticeAnnotate(l, w))
		rc.m.ix.count("annotated")
	} else {
		l.state = linkInvalid
		l.setNotice(noticeChanged(l, w))
		rc.m.ix.count("suppressed")
	}
	rc.touch(l, reason)
}

// gone marks a link whose source was deleted or became unreadable. The span
// is remembered as an anchor so it can be found again when the source returns.
func (rc *reconciler) gone(l *link, c cause, readErr string) {
	if l.cause == c && l.state != linkOK {
		return
	}
	if !l.whole {
		if l.state == linkOK && l.tracked && rc.oldKnown && l.rng.End <= len(rc.oldLines) {
			a := locator.NewAnchor(rc.oldText, l.rng, rc.m.params.ContextLines)
			l.setAnchor(&a)
		} else {
			l.setAnchor(&locator.Anchor{Range: l.rng, Span: spanLines(l.text, l.rng)})
		}
	}
	l.tracked, l.cause = false, c
	l.state = linkInvalid
	if rc.m.resolve(l.block, rc.src).drift == protocol.Annotate {
		// Keeps l.text: a source that comes back unchanged restores it as is.
		l.state = linkStale
	}
	reason := "deleted"
	switch c {
	case causeDeleted:
		l.setNotice(noticeDeleted(l))
	case causeEmptied:
		l.setNotice(noticeEmptied(l))
		reason = "emptied"
	default:
		l.setNotice(noticeUnreadable(l, readErr))
		reason = "unreadable: " + readErr
	}
	if l.whole && isListing(rc.src) {
		l.setNotice(noticeListingGone(l, c == causeDeleted, readErr))
	}
	rc.m.ix.count(reason[:strings.IndexByte(reason+":", ':')])
	rc.touch(l, reason)
}

// recompute derives a block's status and notice from its links.
func (m *Manager) recompute(b *block) {
	if b.stage != stageLive {
		return
	}
	if d := b.derivation(); d != nil {
		recomputeDerived(b, d)
		return
	}
	st := protocol.Valid
	var notices []string
	for _, l := range b.links {
		switch l.state {
		case linkInvalid:
			st = protocol.Invalid
			notices = append(notices, l.notice())
		case linkStale:
			if st != protocol.Invalid {
				st = protocol.Stale
			}
			notices = append(notices, l.notice())
		default:
			if l.patched && st == protocol.Valid {
				st = protocol.Patched
			}
		}
	}
	if b.aged && st != protocol.Invalid {
		st = protocol.Stale
		notices = append(notices, b.ageNotice())
	}
	b.setStatus(st)
	b.setNotice(strings.Join(notices, "\n"))
}

// applyContent installs a new content of src (read at stamp) and reconciles
// its links, with what prepare computed outside the lock when it still fits
// (p may be nil). It returns the blocks whose model-visible state changed.
// Caller holds m.mu.
func (m *Manager) applyContent(src *source, stamp string, c Content, p *prepared) []*block {
	src.stamp = stamp
	if src.state == statePresent && (src.known || src.textless() && c.Version != "") && src.version == c.Version {
		return nil
	}
	if !p.fits(src) {
		p = nil
	}
	oldText, oldLines, oldKnown := src.text, src.lines, src.state == statePresent && src.known
	text, lines := sourceText(c.Text), []string(nil)
	if p != nil {
		text, lines, oldLines = p.text, p.lines, p.oldLines
	}
	src.text, src.lines, src.version, src.known, src.state, src.readErr = text, lines, c.Version, true, statePresent, ""
	derived := m.judgeSource(src)
	if src.nlinks == 0 {
		src.free() // only summaries depend on it: its text goes once they are judged
		return derived
	}
	rc := m.newReconciler(src, oldText, oldLines, oldKnown)
	if p != nil {
		rc.use(p)
	}
	unchanged := 0
	for _, l := range src.ordered() {
		if rc.untouched(l) {
			unchanged++
			continue
		}
		rc.link(l)
	}
	if unchanged > 0 { // (a counter never counted stays out of stats)
		m.ix.countN(string(locator.Unchanged), unchanged)
	}
	return append(rc.finish(true), derived...)
}

// untouched is link's verdict for the commonest case, without its steps: a
// tracked ranged span, not at the end of the file, that lies wholly outside
// the changed region with the line count the same after it. Nothing about
// it changes but the version it reflects. On a file with tens of thousands
// of one-line reads, an edit's sync touches only the few in the region.
func (rc *reconciler) untouched(l *link) bool {
	if l.state != linkOK || l.whole || !l.tracked || l.tail || !rc.oldKnown || len(rc.newLines) == 0 || l.rng.End > len(rc.oldLines) {
		return false
	}
	if !rc.regionOK {
		rc.pre, rc.suf = commonEnds(rc.oldLines, rc.newLines)
		rc.regionOK = true
	}
	if l.rng.End <= rc.pre || (l.rng.Start > len(rc.oldLines)-rc.suf && len(rc.newLines) == len(rc.oldLines)) {
		l.version = rc.src.version
		return true
	}
	return false
}

// applyUnknown records that a client-reported source moved to version
// without its content being known (nothing to reconcile against yet).
func (m *Manager) applyUnknown(src *source, stamp, version string) {
	src.stamp, src.version, src.state, src.readErr = stamp, version, statePresent, ""
	src.text, src.lines, src.known = "", nil, false
}

// applyGone marks src deleted (ErrNotFound) or unreadable (any other error).
// Caller holds m.mu.
func (m *Manager) applyGone(src *source, stamp string, err error) []*block {
	st, c := stateUnreadable, causeUnreadable
	if isNotFound(err) {
		st, c = stateDeleted, causeDeleted
	}
	msg := readReason(err)
	if src.state == st && src.readErr == msg {
		return nil
	}
	oldText, oldLines, oldKnown := src.text, src.lines, src.state == statePresent && src.known
	src.state, src.readErr, src.stamp = st, msg, stamp
	src.text, src.lines, src.known, src.version = "", nil, false, ""
	derived := m.judgeSource(src)
	if src.nlinks == 0 {
		return derived
	}
	rc := m.newReconciler(src, oldText, oldLines, oldKnown)
	for _, l := range src.ordered() {
		rc.gone(l, c, msg)
	}
	return append(rc.finish(true), derived...)
}

// moveReason is "moved: lines A-B -> C-D" (or "moved: line A -> C").
func moveReason(from, to Range) string {
	if from.Start == from.End && to.Start == to.End {
		return fmt.Sprintf("moved: line %d -> %d", from.Start, to.Start)
	}
	return fmt.Sprintf("moved: lines %d-%d -> %d-%d", from.Start, from.End, to.Start, to.End)
}

// keepShown puts back what the model last saw, for a policy that keeps the
// old text with a warning: the model must be warned about its own copy.
func (l *link) keepShown() {
	l.text, l.rng, l.version = l.shownText(), l.shownRange(), l.shownVersion
}

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
