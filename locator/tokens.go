package locator

import (
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"
)

// The tokenizer splits on whitespace and punctuation boundaries: a token is a
// maximal run of word runes (letters, digits, combining marks, '_'), or one
// single other non-space rune (punctuation, symbols, an invalid byte).
// Whitespace, line breaks included, separates tokens and is not a token, so a
// whitespace-only change leaves the token sequence identical.
//
// "port: 8080" -> ["port", ":", "8080"]; "a->b" -> ["a", "-", ">", "b"].

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// Tokenize returns the tokens of lines (see the tokenizer above). The
// tokens share the lines' memory.
func Tokenize(lines []string) []string {
	var toks []string
	for _, l := range lines {
		toks = appendTokens(toks, l)
	}
	return toks
}

func appendTokens(toks []string, s string) []string {
	for i := 0; i < len(s); {
		cls, w := uint8(0), 1
		if c := s[i]; c < utf8.RuneSelf {
			cls = asciiClass[c]
		} else {
			cls, w = classRune(s[i:])
		}
		switch cls {
		case clsSpace:
			i += w
		case clsWord:
			j := i + w
			for j < len(s) {
				c2, w2 := uint8(0), 1
				if c := s[j]; c < utf8.RuneSelf {
					c2 = asciiClass[c]
				} else {
					c2, w2 = classRune(s[j:])
				}
				if c2 != clsWord {
					break
				}
				j += w2
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			toks = append(toks, s[i:i+w])
			i += w
		}
	}
	return toks
}

// classRune is the class of the non-ASCII rune at the start of s, and its
// width (ASCII bytes take asciiClass).
func classRune(s string) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s)
	switch {
	case unicode.IsSpace(r):
		return clsSpace, w
	case isWordRune(r):
		return clsWord, w
	}
	return clsPunct, w
}

// Byte classes for the ASCII fast path of countTokens.
const (
	clsSpace = iota
	clsWord
	clsPunct
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		switch {
		case unicode.IsSpace(r):
			t[r] = clsSpace
		case isWordRune(r):
			t[r] = clsWord
		default:
			t[r] = clsPunct
		}
	}
	return t
}()

// countTokens counts tokens without allocating (hot path: every located span
// reports its token length), with a table lookup for ASCII bytes.
func countTokens(lines []string) int {
	n := 0
	for _, s := range lines {
		inWord := false
		for i := 0; i < len(s); {
			cls, w := uint8(0), 1
			if c := s[i]; c < utf8.RuneSelf {
				cls = asciiClass[c]
			} else {
				cls, w = classRune(s[i:])
			}
			i += w
			switch cls {
			case clsSpace:
				inWord = false
			case clsWord:
				if !inWord {
					n++
				}
				inWord = true
			default:
				n++
				inWord = false
			}
		}
	}
	return n
}

// Substitutions counts positions where two equal-length token sequences
// differ; -1 when the lengths differ (then the substitution rule does not apply).
func Substitutions(a, b []string) int {
	if len(a) != len(b) {
		return -1
	}
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// Similarity is the sequence similarity of two spans given as lines, over
// their tokens: 2*M/T like Python's difflib ratio, where T is the total token
// count and M the length of a longest common subsequence (difflib's
// Ratcliff-Obershelp M is never larger, so this ratio is >= difflib's).
// Two empty spans are identical (1).
//
// When the exact token diff would exceed its work cap (huge, very different
// spans), tokens are aligned within a line diff instead: equal lines match
// whole, changed hunks are diffed token by token. That figure is a lower
// bound, so a caller comparing it with a threshold errs toward drift.
func Similarity(a, b []string) float64 {
	ta, tb := Tokenize(a), Tokenize(b)
	if s, exact := similarity(ta, tb); exact {
		return s
	}
	return lineAlignedSimilarity(a, b, len(ta)+len(tb))
}

// lineAlignedSimilarity is the lower bound described at Similarity; total
// is the token count of a and b. Each changed hunk is diffed token by token;
// a hunk too costly for that pairs its lines by position and diffs each
// pair. Every alignment used is a valid one, so the edit distance summed is
// an upper bound. All token diffs share one work budget; what lies beyond
// it counts as entirely different.
func lineAlignedSimilarity(a, b []string, total int) float64 {
	if total == 0 {
		return 1
	}
	hs, _ := lineDiff(a, b, Params{})
	budget, d := maxDiffWork, 0
	for _, h := range hs {
		ta, tb := Tokenize(a[h.os:h.oe]), Tokenize(b[h.ns:h.ne])
		hd, exact, work := editDistanceWork(ta, tb, min(budget, maxDiffWork/10))
		budget -= work
		if !exact {
			hd = pairwiseDistance(a[h.os:h.oe], b[h.ns:h.ne], &budget)
		}
		d += hd
	}
	return float64(total-d) / float64(total)
}

// pairwiseDistance diffs lines a[i] and b[i] one pair at a time; unpaired
// lines count whole.
func pairwiseDistance(a, b []string, budget *int) int {
	d := 0
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || *budget <= 0 {
			d += countTokens(a[min(i, len(a)):min(i+1, len(a))]) + countTokens(b[min(i, len(b)):min(i+1, len(b))])
			continue
		}
		ta, tb := appendTokens(nil, a[i]), appendTokens(nil, b[i])
		pd, exact, work := editDistanceWork(ta, tb, *budget)
		*budget -= work
		if !exact {
			pd = len(ta) + len(tb)
		}
		d += pd
	}
	return d
}

// maxDiffWork caps the Myers search so a pair of huge, very different spans
// (a minified line rewritten) costs bounded time. The cap counts steps, not
// time, so results never depend on machine speed.
const maxDiffWork = 10_000_000

// similarity returns the token ratio and whether it is exact. When the work
// cap is hit it returns a proven upper bound and exact=false.
func similarity(a, b []string) (float64, bool) {
	total := len(a) + len(b)
	if total == 0 {
		return 1, true
	}
	d, exact := editDistance(a, b, maxDiffWork)
	return float64(total-d) / float64(total), exact
}

// editDistance is the number of insertions plus deletions turning a into b
// (Myers' O((N+M)D) greedy forward search, after trimming the common prefix
// and suffix). If more than maxWork steps would be needed it stops and
// returns a lower bound with exact=false.
func editDistance(a, b []string, maxWork int) (int, bool) {
	d, exact, _ := editDistanceWork(a, b, maxWork)
	return d, exact
}

// editDistanceWork is editDistance that also reports the steps it used.
func editDistanceWork(a, b []string, maxWork int) (int, bool, int) {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return n + m, true, 0
	}
	max := n + m
	off := max + 1
	v := make([]int, 2*max+3)
	work := 0
	for d := 0; d <= max; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d, true, work + 2*d + 1
			}
		}
		work += 2*d + 1
		if work > maxWork {
			return d + 1, false, work
		}
	}
	return max, true, work
}

// verdict is the locality decision on one old span and its new region.
type verdict struct {
	local         bool
	similarity    float64
	tokens        int
	substitutions int
	reason        string
}

// judge applies the locality policy: local when the token lengths are equal
// with at most max(MinSubstitutions, floor(tokens*SubstitutionRatio))
// substitutions, or when the similarity is at least MinSimilarity.
func judge(oldSpan, newSpan []string, p Params) verdict {
	ta, tb := Tokenize(oldSpan), Tokenize(newSpan)
	v := verdict{tokens: len(ta)}
	subsLocal := false
	if subs := Substitutions(ta, tb); subs >= 0 {
		v.substitutions = subs
		limit := int(math.Floor(float64(len(ta))*p.SubstitutionRatio + 1e-9))
		if limit < p.MinSubstitutions {
			limit = p.MinSubstitutions
		}
		subsLocal = subs <= limit
	}
	// For long spans a cheap bound first: the common multiset of tokens caps
	// any common subsequence, so most drift is decided in O(n) without a
	// diff. Short spans get the exact figure, which reads better in reasons.
	if !subsLocal && len(ta)+len(tb) > bagBoundMin {
		if bound := bagBound(ta, tb); bound < p.MinSimilarity {
			v.similarity = round4(bound)
			v.reason = fmt.Sprintf("drift: similarity at most %.2f < %.2f", bound, p.MinSimilarity)
			return v
		}
	}
	sim, exact := similarity(ta, tb)
	v.similarity = round4(sim)
	if subsLocal {
		v.local = true
		v.reason = fmt.Sprintf("local edit: %d of %d tokens substituted", v.substitutions, len(ta))
		return v
	}
	switch {
	case exact && sim >= p.MinSimilarity:
		v.local = true
		v.reason = fmt.Sprintf("local edit: similarity %.2f >= %.2f", sim, p.MinSimilarity)
	case exact:
		v.reason = fmt.Sprintf("drift: similarity %.2f < %.2f", sim, p.MinSimilarity)
	case sim < p.MinSimilarity:
		v.reason = fmt.Sprintf("drift: similarity at most %.2f < %.2f", sim, p.MinSimilarity)
	default:
		// The exact diff is too costly: a line-aligned lower bound decides,
		// so an unproven similarity counts as drift (patching needs evidence).
		low := lineAlignedSimilarity(oldSpan, newSpan, len(ta)+len(tb))
		v.similarity = round4(low)
		if low >= p.MinSimilarity {
			v.local = true
			v.reason = fmt.Sprintf("local edit: similarity at least %.2f >= %.2f", low, p.MinSimilarity)
		} else {
			v.reason = fmt.Sprintf("drift: similarity not proven: between %.2f and %.2f, threshold %.2f", low, sim, p.MinSimilarity)
		}
	}
	return v
}

const bagBoundMin = 2000

// bagBound is 2*M/T with M the size of the common token multiset: an upper
// bound of the similarity.
func bagBound(a, b []string) float64 {
	total := len(a) + len(b)
	if total == 0 {
		return 1
	}
	return float64(2*commonCount(a, b)) / float64(total)
}

func round4(f float64) float64 { return math.Round(f*10000) / 10000 }
