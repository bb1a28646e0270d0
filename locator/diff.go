package locator

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// hunk is one change of a line diff: old lines [os, oe) became new lines
// [ns, ne). A pure insertion has os == oe, a pure deletion ns == ne.
type hunk struct{ os, oe, ns, ne int }

// Edit is one line diff between an old and a new text, computed once and
// queried for any number of spans. Each Locate costs O(span length + log
// hunks) plus the span's own result text; it never copies the file. An Edit
// is safe for concurrent use.
type Edit struct {
	p         Params
	old, new  []string
	identical bool   // same lines: the content-hash fast path
	coarse    bool   // part of the diff is approximate (too many distinct lines, or too costly): one hunk there
	hunks     []hunk // sorted, disjoint, separated by equal lines

	insOnce sync.Once
	insIdx  map[string][]int // inserted new line -> positions (moved-block search)
}

// maxLineRunes keeps the line diff within go-diff's rune encoding, which
// holds at most 1,112,060 distinct lines (and panics beyond).
const maxLineRunes = 1_100_000

// Locate is Diff followed by one Edit.Locate: the old text is known.
func Locate(old, new string, r Range, p Params) Result {
	return Diff(old, new, p).Locate(r)
}

// Diff computes the line diff of old and new once (line endings normalised:
// lines are split on "\n" with a trailing "\r" stripped). p.DiffTimeout is
// passed to go-diff as is: 0 means no deadline, so the result never depends
// on timing; a positive deadline trades exactness for bounded time.
func Diff(old, new string, p Params) *Edit {
	e := &Edit{p: p, old: SplitLines(old), new: SplitLines(new)}
	// Comparing the texts tells what comparing content hashes would, without
	// hashing; equal lines cover a change of line endings only.
	if old == new || slices.Equal(e.old, e.new) {
		e.identical = true
		return e
	}
	e.hunks, e.coarse = lineDiff(e.old, e.new, p)
	return e
}

// lineDiff returns the hunks turning a into b. The common prefix and suffix
// are trimmed first (most edits are small); the middle goes through go-diff
// in line mode (DiffLinesToRunes, then DiffMainRunes on the line runes).
// Large middles are first split at lines unique to both sides (see differ).
func lineDiff(a, b []string, p Params) ([]hunk, bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	whole := []hunk{{pre, pre + len(ma), pre, pre + len(mb)}}
	if len(ma) == 0 || len(mb) == 0 || len(ma) == 1 && len(mb) == 1 {
		// An insertion, a deletion or one line replaced: one hunk, what
		// the diff would find, without its setup (the commonest edit).
		return whole, false
	}
	if len(ma)+len(mb) > maxLineRunes {
		return whole, true
	}
	d := &differ{dmp: diffmatchpatch.New()}
	d.dmp.DiffTimeout = p.DiffTimeout
	// Every line gets its "\n" back so the last line encodes like the others.
	ra, rb, _ := d.dmp.DiffLinesToRunes(strings.Join(ma, "\n")+"\n", strings.Join(mb, "\n")+"\n")
	d.diff(ra, rb, pre, pre)
	return d.hunks, d.coarse
}

// directDiffMax is the largest middle (lines of both sides) handed to
// go-diff whole. Its Myers search costs O((N+M)·D) steps, up to about
// (N+M)²/2 for unrelated texts: ~8M steps here, but 0.4G for two unrelated
// 10,000-line files, and with DiffTimeout 0 nothing would bound it.
const directDiffMax = 4096

// maxMyersWork bounds go-diff on a region without unique anchors, using the
// proven lower bound of its edit distance.
const maxMyersWork = 50_000_000

// differ diffs line runes (one rune per distinct line). Big regions are cut
// patience-style at lines that occur exactly once on each side, in an order
// both sides agree on (a longest increasing subsequence); the gaps between
// those anchors are diffed on their own. This keeps the work bounded and
// deterministic, and a line unique to both texts is never mis-paired.
type differ struct {
	dmp    *diffmatchpatch.DiffMatchPatch
	hunks  []hunk
	coarse bool // a region was too costly to diff: it stands as one hunk
}

func (d *differ) add(os, oe, ns, ne int) {
	if n := len(d.hunks); n > 0 && d.hunks[n-1].oe == os && d.hunks[n-1].ne == ns {
		d.hunks[n-1].oe, d.hunks[n-1].ne = oe, ne
		return
	}
	d.hunks = append(d.hunks, hunk{os, oe, ns, ne})
}

func (d *differ) diff(ra, rb []rune, oa, ob int) {
	for len(ra) > 0 && len(rb) > 0 && ra[0] == rb[0] {
		ra, rb, oa, ob = ra[1:], rb[1:], oa+1, ob+1
	}
	for len(ra) > 0 && len(rb) > 0 && ra[len(ra)-1] == rb[len(rb)-1] {
		ra, rb = ra[:len(ra)-1], rb[:len(rb)-1]
	}
	switch {
	case len(ra) == 0 && len(rb) == 0:
		return
	case len(ra) == 0 || len(rb) == 0:
		d.add(oa, oa+len(ra), ob, ob+len(rb))
		return
	case len(ra)+len(rb) <= directDiffMax:
		d.myers(ra, rb, oa, ob)
		return
	}
	anchors := uniqueAnchors(ra, rb)
	if len(anchors) == 0 {
		n, common := len(ra)+len(rb), commonCount(ra, rb)
		if common > 0 && n*(n-2*common) <= maxMyersWork {
			d.myers(ra, rb, oa, ob)
		} else {
			// Nothing in common is exactly one hunk; otherwise it is an
			// approximation, flagged.
			d.coarse = d.coarse || common > 0
			d.add(oa, oa+len(ra), ob, ob+len(rb))
		}
		return
	}
	pa, pb := 0, 0
	for _, an := range anchors {
		d.diff(ra[pa:an[0]], rb[pb:an[1]], oa+pa, ob+pb)
		pa, pb = an[0]+1, an[1]+1
	}
	d.diff(ra[pa:], rb[pb:], oa+pa, ob+pb)
}

// myers runs go-diff on line runes. DiffCharsToLines would rebuild the
// changed text; only line counts are needed, and each rune is one line.
func (d *differ) myers(ra, rb []rune, oa, ob int) {
	oi, ni := oa, ob
	open := false
	for _, df := range d.dmp.DiffMainRunes(ra, rb, false) {
		n := utf8.RuneCountInString(df.Text)
		if df.Type == diffmatchpatch.DiffEqual {
			oi += n
			ni += n
			open = false
			continue
		}
		if !open {
			d.add(oi, oi, ni, ni)
			open = true
		}
		h := &d.hunks[len(d.hunks)-1]
		if df.Type == diffmatchpatch.DiffDelete {
			oi += n
			h.oe = oi
		} else {
			ni += n
			h.ne = ni
		}
	}
}

// uniqueAnchors returns index pairs (i in ra, j in rb) of runes occurring
// exactly once in each, as a longest chain increasing on both sides.
func uniqueAnchors(ra, rb []rune) [][2]int {
	type seen struct{ na, nb, ia, ib int }
	m := make(map[rune]*seen, len(ra))
	for i, r := range ra {
		s := m[r]
		if s == nil {
			s = &seen{}
			m[r] = s
		}
		s.na++
		s.ia = i
	}
	for j, r := range rb {
		if s := m[r]; s != nil {
			s.nb++
			s.ib = j
		}
	}
	var pairs [][2]int
	for i, r := range ra {
		if s := m[r]; s.na == 1 && s.nb == 1 {
			pairs = append(pairs, [2]int{i, s.ib})
		}
	}
	// Longest increasing subsequence of the b-indexes (pairs are in a order).
	tails := []int{} // tails[k]: index into pairs ending an increasing run of length k+1
	prev := make([]int, len(pairs))
	for k, pr := range pairs {
		i := sort.Search(len(tails), func(x int) bool { return pairs[tails[x]][1] >= pr[1] })
		if i > 0 {
			prev[k] = tails[i-1]
		} else {
			prev[k] = -1
		}
		if i == len(tails) {
			tails = append(tails, k)
		} else {
			tails[i] = k
		}
	}
	if len(tails) == 0 {
		return nil
	}
	out := make([][2]int, len(tails))
	for k, x := len(tails)-1, tails[len(tails)-1]; k >= 0; k, x = k-1, prev[x] {
		out[k] = pairs[x]
	}
	return out
}

// commonCount is the size of the common multiset of two sequences.
func commonCount[T comparable](a, b []T) int {
	count := make(map[T]int, len(a))
	for _, x := range a {
		count[x]++
	}
	n := 0
	for _, x := range b {
		if count[x] > 0 {
			count[x]--
			n++
		}
	}
	return n
}

// Locate finds where the old range r now lives. A range outside the old text
// is not clamped: it is Invalid with a reason naming the line count.
func (e *Edit) Locate(r Range) Result {
	if msg := checkRange(r, len(e.old)); msg != "" {
		return invalid(Evidence{Method: "diff"}, msg)
	}
	s, end := r.Start-1, r.End
	span := e.old[s:end]
	if e.identical {
		return same(r, s, e.new, len(span), countTokens(span), "hash", nil, "unchanged: identical content")
	}
	h := sort.Search(len(e.hunks), func(i int) bool { return e.hunks[i].oe > s })
	if h == len(e.hunks) || e.hunks[h].os >= end {
		ns := e.mapLine(s)
		return same(r, ns, e.new, len(span), countTokens(span), "diff", nil, "")
	}
	ns, ne := e.startBoundary(s), e.endBoundary(end)
	if len(e.new) == 0 {
		return removed(invalid(Evidence{Method: "diff", Tokens: countTokens(span)}, "deleted: the new text is empty"))
	}
	if ne <= ns {
		if res, ok := e.findMoved(span, s, end, true); ok {
			return res
		}
		return removed(invalid(Evidence{Method: "diff", Tokens: countTokens(span)},
			fmt.Sprintf("deleted: the edit removed lines %s", rangeString(r))))
	}
	region := e.new[ns:ne]
	if slices.Equal(region, span) {
		return same(r, ns, e.new, len(span), countTokens(span), "diff", nil, "")
	}
	// The span's exact text, newly inserted elsewhere, beats a patch guess:
	// a cut-and-paste, or a diff that aligned repeated lines its own way.
	if res, ok := e.findMoved(span, s, end, false); ok {
		return res
	}
	v := judge(span, region, e.p)
	ev := Evidence{Method: "diff", Similarity: v.similarity, Tokens: v.tokens, Substitutions: v.substitutions}
	if !v.local {
		res := invalid(ev, v.reason)
		res.Near = &Range{ns + 1, ne}
		return res
	}
	if e.coarse {
		ev.Method = "diff-coarse"
	}
	return Result{Status: Patched, Range: Range{ns + 1, ne}, Text: JoinLines(region), Evidence: ev, Reason: v.reason}
}

// mapLine maps an old line outside every deletion to its new index.
func (e *Edit) mapLine(i int) int {
	j := sort.Search(len(e.hunks), func(k int) bool { return e.hunks[k].oe > i }) - 1
	if j < 0 {
		return i
	}
	h := e.hunks[j]
	return i + h.ne - h.oe
}

// deletedIn returns the hunk whose deleted lines contain old line i.
func (e *Edit) deletedIn(i int) (hunk, bool) {
	j := sort.Search(len(e.hunks), func(k int) bool { return e.hunks[k].oe > i })
	if j < len(e.hunks) && e.hunks[j].os <= i {
		return e.hunks[j], true
	}
	return hunk{}, false
}

// startBoundary is the new index where a span starting at old line s starts.
// Inside a replaced block lines pair up by position (exact for the common
// line-for-line rewrite); insertions just before the span stay outside it.
func (e *Edit) startBoundary(s int) int {
	if h, ok := e.deletedIn(s); ok {
		return h.ns + min(s-h.os, h.ne-h.ns)
	}
	return e.mapLine(s)
}

// endBoundary is the new index just past a span ending before old line x.
// A replaced block that ends with the span belongs to it entirely;
// insertions just after the span stay outside it.
func (e *Edit) endBoundary(x int) int {
	if h, ok := e.deletedIn(x - 1); ok {
		if x == h.oe {
			return h.ne
		}
		return h.ns + min(x-h.os, h.ne-h.ns)
	}
	return e.mapLine(x-1) + 1
}

// insertedIndex maps the text of every inserted new line (a line no old
// line is aligned to) to its positions. Built once, on first need; its size
// is the edit's, not the file's.
func (e *Edit) insertedIndex() map[string][]int {
	e.insOnce.Do(func() {
		e.insIdx = map[string][]int{}
		for _, h := range e.hunks {
			for j := h.ns; j < h.ne; j++ {
				e.insIdx[e.new[j]] = append(e.insIdx[e.new[j]], j)
			}
		}
	})
	return e.insIdx
}

// findMoved looks for the span's exact text elsewhere in the new text, at a
// place the diff calls (at least partly) inserted: text that was already
// there in the old file is another copy, not the span. Only a span whose
// text is unique in the old file has an identity to follow (a lone "}" that
// vanished here and appeared there is no move). Several candidates are told
// apart by the old context; a tie is ambiguous, never a guess. With
// reportAmbiguous, a tie yields an Invalid result.
func (e *Edit) findMoved(span []string, s, end int, reportAmbiguous bool) (Result, bool) {
	idx := e.insertedIndex()
	var cands []int
	for j, l := range span {
		for _, p := range idx[l] {
			c := p - j
			if c < 0 || c+len(span) > len(e.new) || slices.Contains(cands, c) {
				continue
			}
			if slices.Equal(e.new[c:c+len(span)], span) {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		return Result{}, false
	}
	for _, c := range findBlock(e.old, span) {
		if c != s {
			return Result{}, false
		}
	}
	slices.Sort(cands)
	before := e.old[max(0, s-e.p.ContextLines):s]
	after := e.old[end:min(len(e.old), end+e.p.ContextLines)]
	best, anchors, ok := pickByContext(e.new, cands, len(span), before, after)
	r := Range{s + 1, end}
	if !ok {
		if !reportAmbiguous {
			return Result{}, false
		}
		return invalid(Evidence{Method: "anchored", Tokens: countTokens(span), Anchors: []string{"span"}},
			fmt.Sprintf("ambiguous: the text of lines %s was inserted at %d places and its context does not single one out", rangeString(r), len(cands))), true
	}
	return same(r, best, e.new, len(span), countTokens(span), "anchored", anchors, ""), true
}

// same builds the result for a span found verbatim at new index ns.
func same(old Range, ns int, newLines []string, n, tokens int, method string, anchors []string, reason string) Result {
	nr := Range{ns + 1, ns + n}
	st := Unchanged
	if nr != old {
		st = Moved
	}
	if reason == "" {
		if st == Unchanged {
			reason = "unchanged: same lines, same place"
		} else {
			// Built by hand: this runs for every shifted span of a batch.
			var buf [64]byte
			b := append(buf[:0], "moved: lines "...)
			b = appendRange(b, old)
			b = append(b, " are now "...)
			reason = string(appendRange(b, nr))
		}
	}
	return Result{
		Status:   st,
		Range:    nr,
		Text:     JoinLines(newLines[ns : ns+n]),
		Evidence: Evidence{Method: method, Similarity: 1, Tokens: tokens, Anchors: anchors},
		Reason:   reason,
	}
}

func invalid(ev Evidence, reason string) Result {
	return Result{Status: Invalid, Evidence: ev, Reason: reason}
}

func removed(r Result) Result {
	r.Removed = true
	return r
}

func rangeString(r Range) string { return string(appendRange(nil, r)) }

func appendRange(b []byte, r Range) []byte {
	b = strconv.AppendInt(b, int64(r.Start), 10)
	b = append(b, '-')
	return strconv.AppendInt(b, int64(r.End), 10)
}

func itoa(n int) string { return fmt.Sprint(n) }

// Hunk is one change of a line diff: old lines [OldStart, OldEnd) became
// new lines [NewStart, NewEnd) (0-based, end exclusive). A pure insertion
// has OldStart == OldEnd, a pure deletion NewStart == NewEnd.
type Hunk struct{ OldStart, OldEnd, NewStart, NewEnd int }

// Hunks returns the changes turning the lines old into the lines new, in
// order, separated by equal lines: what a reader of old needs to know to
// have new.
func Hunks(old, new []string, p Params) []Hunk {
	if slices.Equal(old, new) {
		return nil
	}
	hs, _ := lineDiff(old, new, p)
	out := make([]Hunk, len(hs))
	for i, h := range hs {
		out[i] = Hunk{OldStart: h.os, OldEnd: h.oe, NewStart: h.ns, NewEnd: h.ne}
	}
	return out
}
