package locator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// maxPairs bounds the context pairs tried in anchored mode: context that
// occurs that often anchors nothing.
const maxPairs = 64

// NewAnchor captures the lines of text at r and up to contextLines lines on
// each side. r is clamped to the text; a range with no line inside the text
// yields an Anchor with an empty Span (Relocate reports it Invalid). The
// lines are copied, so the anchor does not keep the whole text alive.
func NewAnchor(text string, r Range, contextLines int) Anchor {
	lines := SplitLines(text)
	s, e := max(r.Start, 1), min(r.End, len(lines))
	if s > e {
		return Anchor{Range: r}
	}
	c := max(contextLines, 0)
	return Anchor{
		Range:  Range{s, e},
		Span:   cloneLines(lines[s-1 : e]),
		Before: cloneLines(lines[max(0, s-1-c) : s-1]),
		After:  cloneLines(lines[e:min(len(lines), e+c)]),
		AtEnd:  e == len(lines),
	}
}

func cloneLines(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.Clone(l)
	}
	return out
}

// normLines strips a trailing "\r" from hand-built anchor lines, like SplitLines.
func normLines(ls []string) []string {
	for i, l := range ls {
		if strings.HasSuffix(l, "\r") {
			out := make([]string, len(ls))
			copy(out, ls)
			for j := i; j < len(out); j++ {
				out[j] = strings.TrimSuffix(out[j], "\r")
			}
			return out
		}
	}
	return ls
}

// Relocate finds an anchored span in the new text when the old text is not
// known. In order:
//
//  1. the span's exact text: one occurrence wins; several are told apart
//     by how much of the recorded context surrounds each; a tie is Invalid.
//  2. the context on both sides ("before", "after"; the file's start or end
//     stand in for missing context at the edges): the lines between them,
//     judged by the locality policy. Context now adjacent means deleted.
//     The file's edges are reported as the anchors "start" and "end".
//  3. single anchors, each used only when it occurs exactly once: the span's
//     first and last lines, then one side's context with the span's length.
//
// An ambiguous match is Invalid, never a guess.
func Relocate(a Anchor, newText string, p Params) Result {
	span, before, after := normLines(a.Span), normLines(a.Before), normLines(a.After)
	ev := Evidence{Method: "anchored", Tokens: countTokens(span)}
	if len(span) == 0 {
		return invalid(ev, "not locatable: the anchor holds no lines")
	}
	nl := SplitLines(newText)
	if len(nl) == 0 {
		return removed(invalid(ev, "deleted: the new text is empty"))
	}
	L := len(span)

	// 1. The exact text.
	if cands := findBlock(nl, span); len(cands) > 0 {
		best, anchors, ok := pickByContext(nl, cands, L, before, after)
		if !ok {
			ev.Anchors = []string{"span"}
			return invalid(ev, fmt.Sprintf("ambiguous: the span's text occurs %d times and its context does not single one out", len(cands)))
		}
		return same(a.Range, best, nl, L, ev.Tokens, "anchored", anchors, "")
	}

	// 2. Both sides' context.
	ctx := findContext(nl, before, after, a)
	if r, ok := relocateBetween(span, nl, ctx, p, ev); ok {
		return r
	}

	// 3. Single anchors, strongest first.
	if r, ok := relocateSingle(span, nl, ctx, p, ev); ok {
		return r
	}
	return invalid(ev, "not locatable: neither the span nor its context occurs in the new text")
}

// sideContext holds where the recorded context occurs in the new text, and the
// names of the anchors that stand for each side.
type sideContext struct {
	befores []int // new index just past each before-context
	afters  []int // new index of the start of each after-context
	start   string
	end     string
}

// findContext locates both sides' context; the file's start or end stand in
// for missing context at the edges.
func findContext(nl, before, after []string, a Anchor) sideContext {
	c := sideContext{start: "before", end: "after"}
	switch {
	case len(before) > 0:
		for _, i := range findBlock(nl, before) {
			c.befores = append(c.befores, i+len(before))
		}
	case a.Range.Start == 1:
		c.befores, c.start = []int{0}, "start"
	}
	switch {
	case len(after) > 0:
		c.afters = findBlock(nl, after)
	case a.AtEnd:
		c.afters, c.end = []int{len(nl)}, "end"
	}
	return c
}

// contextPair is one region between a before-context (b) and the nearest
// after-context following it (a).
type contextPair struct{ b, a int }

// pairContext pairs each before-context with the first after-context at or
// past it; when several share an after-context, the nearer before wins.
func pairContext(c sideContext) []contextPair {
	var pairs []contextPair
	for _, b := range c.befores {
		i := sort.SearchInts(c.afters, b)
		switch {
		case i == len(c.afters):
		case len(pairs) > 0 && pairs[len(pairs)-1].a == c.afters[i]:
			pairs[len(pairs)-1].b = b // the nearer before-context wins
		default:
			pairs = append(pairs, contextPair{b, c.afters[i]})
		}
	}
	return pairs
}

// relocateBetween is step 2 of Relocate: the lines between both sides'
// context. It reports false when the context settles nothing, so the
// single anchors get their turn.
func relocateBetween(span, nl []string, c sideContext, p Params, ev Evidence) (Result, bool) {
	if len(c.befores) == 0 || len(c.afters) == 0 {
		return Result{}, false
	}
	pairs := pairContext(c)
	if len(pairs) > maxPairs {
		ev.Anchors = []string{c.start, c.end}
		return invalid(ev, fmt.Sprintf("ambiguous: the context occurs at %d places", len(pairs))), true
	}
	if len(pairs) == 1 {
		b, e := pairs[0].b, pairs[0].a
		ev.Anchors = []string{c.start, c.end}
		if e == b {
			return removed(invalid(ev, "deleted: the lines around the span are now adjacent")), true
		}
		return judged(span, nl, b, e, p, ev), true
	}
	var found []Result
	for _, pr := range pairs {
		if pr.a == pr.b {
			continue
		}
		e := ev
		e.Anchors = []string{c.start, c.end}
		if r := judged(span, nl, pr.b, pr.a, p, e); r.Status != Invalid {
			found = append(found, r)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	if len(found) > 1 {
		ev.Anchors = []string{c.start, c.end}
		return invalid(ev, fmt.Sprintf("ambiguous: %d places between the recorded context qualify as a local edit", len(found))), true
	}
	return Result{}, false
}

// singleCand is a region [b, e) placed by one anchor alone.
type singleCand struct {
	b, e   int
	anchor string
}

// singleCands lists the regions the single anchors place, strongest first:
// the span's first and last lines together, each alone, then one side's
// context with the span's length. Each anchor counts only when unique.
func singleCands(span, nl []string, c sideContext) []singleCand {
	L := len(span)
	var cs []singleCand
	firsts, lasts := findBlock(nl, span[:1]), findBlock(nl, span[L-1:])
	if L > 1 && len(firsts) == 1 && len(lasts) == 1 && lasts[0] >= firsts[0] {
		cs = append(cs, singleCand{firsts[0], lasts[0] + 1, "span"})
	}
	if len(firsts) == 1 {
		cs = append(cs, singleCand{firsts[0], min(len(nl), firsts[0]+L), "span"})
	}
	if len(lasts) == 1 {
		cs = append(cs, singleCand{max(0, lasts[0]+1-L), lasts[0] + 1, "span"})
	}
	if len(c.befores) == 1 {
		cs = append(cs, singleCand{c.befores[0], min(len(nl), c.befores[0]+L), c.start})
	}
	if len(c.afters) == 1 {
		cs = append(cs, singleCand{max(0, c.afters[0]-L), c.afters[0], c.end})
	}
	return cs
}

// relocateSingle is step 3 of Relocate: the first single-anchor region the
// locality policy accepts, or else the most similar rejected one (without
// a Near range). It reports false when no anchor placed anything.
func relocateSingle(span, nl []string, c sideContext, p Params, ev Evidence) (Result, bool) {
	var best Result
	for _, sc := range singleCands(span, nl, c) {
		if sc.e <= sc.b {
			continue
		}
		e := ev
		e.Anchors = []string{sc.anchor}
		r := judged(span, nl, sc.b, sc.e, p, e)
		if r.Status != Invalid {
			return r, true
		}
		if best.Reason == "" || r.Evidence.Similarity > best.Evidence.Similarity {
			best = r
			best.Near = nil // one anchor and a length: a guess, not a place
		}
	}
	return best, best.Reason != ""
}

// judged applies the locality policy to new lines [b, e).
func judged(span, nl []string, b, e int, p Params, ev Evidence) Result {
	region := nl[b:e]
	v := judge(span, region, p)
	ev.Similarity, ev.Tokens, ev.Substitutions = v.similarity, v.tokens, v.substitutions
	if !v.local {
		res := invalid(ev, v.reason)
		res.Near = &Range{b + 1, e}
		return res
	}
	return Result{Status: Patched, Range: Range{b + 1, e}, Text: JoinLines(region), Evidence: ev, Reason: v.reason}
}

// findBlock returns every index where block occurs in lines, ascending.
func findBlock(lines, block []string) []int {
	var out []int
	if len(block) == 0 {
		return nil
	}
	for i := 0; i+len(block) <= len(lines); i++ {
		if lines[i] == block[0] && slices.Equal(lines[i:i+len(block)], block) {
			out = append(out, i)
		}
	}
	return out
}

// pickByContext chooses among candidate starts of a span of n lines by the
// recorded context: each candidate scores the number of context lines that
// match, counted outward from the span until the first mismatch. One
// candidate wins outright or none does. It also names the anchors used.
func pickByContext(lines []string, cands []int, n int, before, after []string) (int, []string, bool) {
	if len(cands) == 1 {
		return cands[0], []string{"span"}, true
	}
	bestScore, best, tie := -1, -1, false
	var bestB, bestA int
	for _, c := range cands {
		b := 0
		for b < len(before) && c-1-b >= 0 && lines[c-1-b] == before[len(before)-1-b] {
			b++
		}
		a := 0
		for a < len(after) && c+n+a < len(lines) && lines[c+n+a] == after[a] {
			a++
		}
		switch score := a + b; {
		case score > bestScore:
			bestScore, best, tie, bestB, bestA = score, c, false, b, a
		case score == bestScore:
			tie = true
		}
	}
	if tie || bestScore == 0 {
		return 0, nil, false
	}
	anchors := []string{"span"}
	if bestB > 0 {
		anchors = append(anchors, "before")
	}
	if bestA > 0 {
		anchors = append(anchors, "after")
	}
	return best, anchors, true
}
