package tasks

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// racePlan is what a builder decided: the probe, the mutations, and for each
// cloze line the byte span of its slot (kept out of grep patterns so they
// match the line before and after the race).
type racePlan struct {
	probe     Probe
	mutations []Mutation
	slots     map[string][2]int // file:line -> [lo, hi) in the original line
}

func slotKey(file string, line int) string { return file + ":" + strconv.Itoa(line) }

// apply fills the task's probe, mutations and evidence (one per supporting
// paragraph, in supporting-fact order; a cloze line wins over the paragraph's
// first fact so the reader reads the file it answers from).
func (pl racePlan) apply(t Task, facts []lineRef) (Task, error) {
	t.Probe = pl.probe
	t.Mutations = pl.mutations
	clozeLine := map[int]int{} // para -> cloze line
	for _, c := range pl.probe.Clozes {
		for pi, p := range t.Paragraphs {
			if p.File == c.File {
				clozeLine[pi] = c.Line
			}
		}
	}
	done := map[int]bool{}
	for _, f := range facts {
		if done[f.para] {
			continue
		}
		done[f.para] = true
		line := f.line
		if cl, ok := clozeLine[f.para]; ok {
			line = cl
		}
		p := t.Paragraphs[f.para]
		pat, unique, err := anchorPattern(t, pl, p.File, line)
		if err != nil {
			return Task{}, err
		}
		if _, isCloze := clozeLine[f.para]; isCloze && !unique {
			return Task{}, fmt.Errorf("evidence %s line %d: no phrase outside the answer finds it alone", p.File, line)
		}
		t.Evidence = append(t.Evidence, Evidence{File: p.File, Line: line, Pattern: pat})
	}
	return t, nil
}

// anchorPattern picks the shortest run of whole words (3 to 8, outside the
// slot) whose pattern matches the evidence line, before and after mutation,
// and no other line of the workspace. Failing that, the longest side.
func anchorPattern(t Task, pl racePlan, file string, line int) (string, bool, error) {
	p, _ := t.Paragraph(file)
	text := p.Sentences[line-1]
	segs := []string{text}
	if sl, ok := pl.slots[slotKey(file, line)]; ok {
		segs = []string{text[:sl[0]], text[sl[1]:]}
	}
	target := []string{text}
	for _, m := range pl.mutations {
		if m.File == file && m.Line == line {
			target = append(target, m.Mutated)
		}
	}
	var fallback string
	fallbackWords := 0
	for k := 3; k <= 8; k++ {
		for _, seg := range segs {
			words := strings.Fields(seg)
			if len(words) > fallbackWords {
				fallback, fallbackWords = wordsPattern(words), len(words)
			}
			for i := 0; i+k <= len(words); i++ {
				pat := wordsPattern(words[i : i+k])
				if uniqueMatch(t, pat, file, line, target) {
					return pat, true, nil
				}
			}
		}
	}
	if fallback == "" {
		return "", false, fmt.Errorf("evidence %s line %d: no words to search for", file, line)
	}
	return fallback, uniqueMatch(t, fallback, file, line, target), nil
}

func wordsPattern(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(q, `\s+`)
}

func uniqueMatch(t Task, pat, file string, line int, target []string) bool {
	re, err := regexp.Compile(pat)
	if err != nil {
		return false
	}
	for _, s := range target {
		if !re.MatchString(s) {
			return false
		}
	}
	for _, p := range t.Paragraphs {
		for i, s := range p.Sentences {
			if p.File == file && i+1 == line {
				continue
			}
			if re.MatchString(s) {
				return false
			}
		}
	}
	return true
}

// planSpan: the answer appears in a supporting sentence; that occurrence is
// the slot, and the mutation puts another entity, date or number there.
func planSpan(t Task, facts []lineRef) (racePlan, error) {
	for _, f := range facts {
		p := t.Paragraphs[f.para]
		s := p.Sentences[f.line-1]
		lo := indexAnswer(s, t.Answer)
		if lo < 0 {
			continue
		}
		hi := lo + len(t.Answer)
		gold := s[lo:hi]
		repl, kind := replacement(t, gold, s, p.Title)
		if repl == "" {
			return racePlan{}, fmt.Errorf("answer %q: no plausible replacement", t.Answer)
		}
		cl := Cloze{File: p.File, Line: f.line, Prefix: s[:lo], Suffix: s[hi:]}
		if ambiguous(t, cl) {
			continue
		}
		return racePlan{
			probe:     Probe{Kind: ProbeSpan, Clozes: []Cloze{cl}},
			mutations: []Mutation{{File: p.File, Line: f.line, Original: s, Mutated: s[:lo] + repl + s[hi:], Kind: kind}},
			slots:     map[string][2]int{slotKey(p.File, f.line): {lo, hi}},
		}, nil
	}
	return racePlan{}, fmt.Errorf("answer %q does not appear in a distinctive supporting sentence", t.Answer)
}

// indexAnswer finds the answer in s: exact first, then ignoring case.
func indexAnswer(s, answer string) int {
	if i := strings.Index(s, answer); i >= 0 {
		return i
	}
	ls, la := strings.ToLower(s), strings.ToLower(answer)
	if len(ls) == len(s) && len(la) == len(answer) {
		return strings.Index(ls, la)
	}
	return -1
}

var digitRun = regexp.MustCompile(`[0-9]+`)

// numberRun is a whole number: digits with optional thousands separators
// ("9,984" is one number, not two digit groups).
var numberRun = regexp.MustCompile(`[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+`)

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// replacement returns a plausible wrong value for gold, deterministic in
// the task: numbers and dates are shifted as whole numbers, a nationality
// becomes another, other answers become another span of the same kind
// found in the task's paragraphs after the same word ("in Varden" ->
// "in Brightmoor", "by Alma Brekke" -> "by Hugo Thorne"): never a common
// noun for a name or a name for a common noun.
func replacement(t Task, gold, sentence, ownTitle string) (string, string) {
	if digitRun.MatchString(gold) {
		return numberReplacement(t, gold)
	}
	if slices.Contains(demonyms, gold) {
		return otherWord(t, gold, sentence, sentence), "entity"
	}
	capital := isCapital(gold)
	prev, next := neighbourWords(gold, sentence, capital)
	cands := spanCandidates(t, gold, sentence, ownTitle, spanPatterns(prev, next, capital), capital)
	if len(cands) == 0 {
		return "", ""
	}
	slices.SortFunc(cands, func(a, b string) int {
		if d := hashInt(t.ID+a) - hashInt(t.ID+b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return cands[0], "entity"
}

// numberReplacement shifts every whole number in gold and names the kind:
// a "date" when gold holds a month or a bare four-digit year, else a
// "number". It returns "" when the shift leaves gold unchanged.
func numberReplacement(t Task, gold string) (string, string) {
	h := hashInt(t.ID + gold)
	out := numberRun.ReplaceAllStringFunc(gold, func(d string) string {
		if strings.Contains(d, ",") {
			return withSeparators(shiftNumber(strings.ReplaceAll(d, ",", ""), h))
		}
		return shiftNumber(d, h)
	})
	kind := "number"
	for _, m := range monthNames {
		if strings.Contains(gold, m) {
			kind = "date"
		}
	}
	if len(digitRun.FindString(gold)) == 4 && !strings.Contains(gold, ",") {
		kind = "date"
	}
	if Normalize(out) != Normalize(gold) {
		return out, kind
	}
	return "", ""
}

// neighbourWords returns the word before the answer in sentence (for a
// common noun, the nearest lower-case one: "a British director" gives "a"),
// and the lower-case word after it: another span in the same place
// ("in Varden" -> "in Brightmoor") is of the same kind.
func neighbourWords(gold, sentence string, capital bool) (prev, next string) {
	at := strings.Index(sentence, gold)
	if at < 0 {
		at = strings.Index(strings.ToLower(sentence), strings.ToLower(gold))
	}
	ws := words(sentence[:max(at, 0)])
	for i := len(ws) - 1; i >= 0 && prev == ""; i-- {
		if capital || !isCapital(ws[i].w) {
			prev = ws[i].w
		}
	}
	if at >= 0 && at+len(gold) <= len(sentence) {
		if ws := words(sentence[at+len(gold):]); len(ws) > 0 && !isCapital(ws[0].w) {
			next = ws[0].w
		}
	}
	return prev, next
}

// spanPatterns builds the patterns that capture a span of the answer's kind
// (a capitalised name of up to five words, or one lower-case word) right
// after prev and right before next, in that order of preference.
func spanPatterns(prev, next string, capital bool) []*regexp.Regexp {
	span := `((?:\p{Lu}[\p{L}'’.-]*)(?: (?:\p{Lu}[\p{L}'’.-]*|of|de|the|and)){0,4})`
	if !capital {
		span = `(\p{Ll}[\p{L}'’-]*)`
	}
	var res []*regexp.Regexp
	if prev != "" {
		res = append(res, regexp.MustCompile(`\b`+regexp.QuoteMeta(prev)+` `+span))
	}
	if next != "" {
		res = append(res, regexp.MustCompile(span+` `+regexp.QuoteMeta(next)+`\b`))
	}
	return res
}

// spanCandidates collects, from the first pattern that yields any, the
// distinct spans in the task's paragraphs that could stand in for gold.
func spanCandidates(t Task, gold, sentence, ownTitle string, res []*regexp.Regexp, capital bool) []string {
	ng := Normalize(gold)
	var cands []string
	for _, re := range res {
		if len(cands) > 0 {
			break
		}
		for _, p := range t.Paragraphs {
			for _, s := range p.Sentences {
				for _, m := range re.FindAllStringSubmatch(s, -1) {
					c := strings.TrimRight(m[1], ".,;:")
					if !usableSpan(t, c, ng, sentence, ownTitle, capital) {
						continue
					}
					if !slices.Contains(cands, c) {
						cands = append(cands, c)
					}
				}
			}
		}
	}
	return cands
}

// usableSpan rejects a candidate c that would not read as a plausible wrong
// value: the wrong kind, a stop word, overlapping the gold answer (ng is its
// normal form), already in the sentence or the question, a nationality, or
// the paragraph's own title.
func usableSpan(t Task, c, ng, sentence, ownTitle string, capital bool) bool {
	if c == "" || isCapital(c) != capital || stopWords[strings.ToLower(c)] {
		return false
	}
	nc := Normalize(c)
	return !(nc == "" || nc == ng || strings.Contains(nc, ng) || strings.Contains(ng, nc) ||
		strings.Contains(sentence, c) || strings.Contains(strings.ToLower(t.Question), strings.ToLower(c)) ||
		slices.Contains(demonyms, c) || Normalize(stripParen(ownTitle)) == nc)
}

// withSeparators writes n's digits with thousands separators.
func withSeparators(d string) string {
	for i := len(d) - 3; i > 0; i -= 3 {
		d = d[:i] + "," + d[i:]
	}
	return d
}

func stripParen(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	return s
}

// shiftNumber moves a digit run: years by 3-11 (never into the future of the
// data), other numbers by a quarter to three quarters of their value.
func shiftNumber(d string, h int) string {
	v, err := strconv.Atoi(d)
	if err != nil || len(d) > 9 {
		return d
	}
	var n int
	switch {
	case len(d) == 4 && v >= 1000 && v <= 2099:
		step := 3 + h%9
		if v+step > 2020 {
			n = v - step
		} else {
			n = v + step
		}
	case v < 4:
		n = v + 2 + h%3
	default:
		n = v + max(1, v*(1+h%3)/4)
	}
	out := strconv.Itoa(n)
	if len(d) > 1 && d[0] == '0' && len(out) < len(d) {
		out = strings.Repeat("0", len(d)-len(out)) + out
	}
	return out
}

func hashInt(s string) int {
	h := sha256.Sum256([]byte(s))
	return int(h[0])<<16 | int(h[1])<<8 | int(h[2])
}

var demonyms = []string{"American", "British", "English", "French", "German", "Italian", "Spanish", "Canadian",
	"Australian", "Irish", "Scottish", "Welsh", "Japanese", "Chinese", "Korean", "Indian", "Russian", "Mexican",
	"Brazilian", "Dutch", "Swedish", "Norwegian", "Danish", "Turkish", "Polish", "Greek", "Austrian", "Swiss",
	"Belgian", "Argentine", "Filipino", "Egyptian", "Israeli", "Iranian", "Nigerian", "Finnish", "Portuguese"}

var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "was": true, "were": true, "are": true, "is": true, "with": true,
	"from": true, "that": true, "this": true, "which": true, "who": true, "his": true, "her": true, "its": true,
	"has": true, "had": true, "have": true, "been": true, "also": true, "into": true, "by": true, "of": true,
	"known": true, "best": true, "born": true, "one": true, "their": true, "they": true, "as": true, "an": true,
	"a": true, "in": true, "on": true, "at": true, "or": true, "to": true, "it": true, "be": true, "than": true,
}

var wordRe = regexp.MustCompile(`\p{L}[\p{L}'’-]*`)

type wordAt struct {
	w      string
	lo, hi int
}

func words(s string) []wordAt {
	var out []wordAt
	for _, m := range wordRe.FindAllStringIndex(s, -1) {
		out = append(out, wordAt{s[m[0]:m[1]], m[0], m[1]})
	}
	return out
}

func firstWord(s, w string) (int, int, bool) {
	for _, x := range words(s) {
		if x.w == w {
			return x.lo, x.hi, true
		}
	}
	return 0, 0, false
}

func isCapital(w string) bool {
	r := []rune(w)
	return len(r) > 0 && unicode.IsUpper(r[0])
}

var copulaWord = regexp.MustCompile(`\b(?:is|was|are|were)\s+(?:(?:a|an|the)\s+)?(\p{L}+)`)

// planSame: a yes/no comparison of two supporting sentences. The reader
// answers "yes" when the two slots hold the same word. A "yes" task shares a
// word (the attribute compared) and the mutation changes it in the second
// sentence; a "no" task has differing attributes (nationalities, or the word
// after "is a") and the mutation copies the first into the second.
func planSame(t Task, facts []lineRef, gold bool) (racePlan, error) {
	two, ok := twoParagraphs(facts)
	if !ok {
		return racePlan{}, errors.New("yes/no question with fewer than two supporting paragraphs")
	}
	p1, p2 := t.Paragraphs[two[0].para], t.Paragraphs[two[1].para]
	s1, s2 := p1.Sentences[two[0].line-1], p2.Sentences[two[1].line-1]
	var sl sameSlots
	if gold {
		sl, ok = sharedWord(t, s1, s2, titleWords(p1.Title+" "+p2.Title))
	} else {
		sl, ok = differingWord(s1, s2)
	}
	if !ok {
		return racePlan{}, errors.New("yes/no question: no compared attribute found in the supporting sentences")
	}
	c1 := Cloze{File: p1.File, Line: two[0].line, Prefix: s1[:sl.lo1], Suffix: s1[sl.hi1:]}
	c2 := Cloze{File: p2.File, Line: two[1].line, Prefix: s2[:sl.lo2], Suffix: s2[sl.hi2:]}
	if ambiguous(t, c1) || ambiguous(t, c2) {
		return racePlan{}, errors.New("yes/no question: a compared sentence is not distinctive")
	}
	return racePlan{
		probe:     Probe{Kind: ProbeSame, Clozes: []Cloze{c1, c2}},
		mutations: []Mutation{{File: p2.File, Line: two[1].line, Original: s2, Mutated: s2[:sl.lo2] + sl.repl + s2[sl.hi2:], Kind: "comparison"}},
		slots:     map[string][2]int{slotKey(p1.File, two[0].line): {sl.lo1, sl.hi1}, slotKey(p2.File, two[1].line): {sl.lo2, sl.hi2}},
	}, nil
}

// sameSlots are the compared word's byte spans in the two sentences and
// the word the mutation writes into the second.
type sameSlots struct {
	lo1, hi1, lo2, hi2 int
	repl               string
}

// twoParagraphs picks the first supporting fact and the first fact that
// opens another paragraph.
func twoParagraphs(facts []lineRef) ([]lineRef, bool) {
	var two []lineRef
	for _, f := range facts {
		if len(two) == 1 && two[0].para == f.para {
			continue
		}
		if len(two) == 0 || f.first {
			two = append(two, f)
		}
		if len(two) == 2 {
			break
		}
	}
	return two, len(two) == 2
}

// titleWords is the set of the lower-cased words of titles.
func titleWords(titles string) map[string]bool {
	set := map[string]bool{}
	for _, w := range words(titles) {
		set[strings.ToLower(w.w)] = true
	}
	return set
}

// sharedWord finds the word a "yes" task compares: a word of s1 (not its
// first, not a title's) that s2 has too and that another word can replace.
// A capitalised word (a nationality) wins over any other.
func sharedWord(t Task, s1, s2 string, inTitle map[string]bool) (sameSlots, bool) {
	for _, wantCap := range []bool{true, false} {
		for _, w := range words(s1) {
			lw := strings.ToLower(w.w)
			if len(w.w) < 3 || stopWords[lw] || inTitle[lw] || isCapital(w.w) != wantCap || w.lo == 0 {
				continue
			}
			if a, b, ok := firstWord(s2, w.w); ok {
				if repl := otherWord(t, w.w, s1, s2); repl != "" {
					return sameSlots{lo1: w.lo, hi1: w.hi, lo2: a, hi2: b, repl: repl}, true
				}
			}
		}
	}
	return sameSlots{}, false
}

// differingWord finds the attribute a "no" task compares: two different
// nationalities, else two different words after "is (a)"; the mutation
// copies the first into the second sentence.
func differingWord(s1, s2 string) (sameSlots, bool) {
	d2 := demonymsIn(s2)
	for _, a := range demonymsIn(s1) {
		for _, b := range d2 {
			if a.w != b.w {
				return sameSlots{lo1: a.lo, hi1: a.hi, lo2: b.lo, hi2: b.hi, repl: a.w}, true
			}
		}
	}
	m1, m2 := copulaWord.FindStringSubmatchIndex(s1), copulaWord.FindStringSubmatchIndex(s2)
	if m1 == nil || m2 == nil {
		return sameSlots{}, false
	}
	w1, w2 := s1[m1[2]:m1[3]], s2[m2[2]:m2[3]]
	if w1 == w2 || stopWords[strings.ToLower(w1)] || stopWords[strings.ToLower(w2)] {
		return sameSlots{}, false
	}
	return sameSlots{lo1: m1[2], hi1: m1[3], lo2: m2[2], hi2: m2[3], repl: w1}, true
}

func demonymsIn(s string) []wordAt {
	var out []wordAt
	for _, w := range words(s) {
		if slices.Contains(demonyms, w.w) {
			out = append(out, w)
		}
	}
	return out
}

// otherWord picks a different word of the same kind: the next nationality,
// or a word of the same case from the task's other paragraphs.
func otherWord(t Task, w, s1, s2 string) string {
	if i := slices.Index(demonyms, w); i >= 0 {
		// The next one that takes the same article (a/an).
		for j := 1; j < len(demonyms); j++ {
			d := demonyms[(i+j)%len(demonyms)]
			if isVowel(d[0]) == isVowel(w[0]) {
				return d
			}
		}
	}
	var cands []string
	for _, p := range t.Paragraphs {
		for _, s := range p.Sentences {
			ws := words(s)
			for i, x := range ws {
				lx := strings.ToLower(x.w)
				// Words right after an article are mostly nouns and adjectives:
				// a plausible stand-in for the compared attribute.
				if i == 0 || !articles[strings.ToLower(ws[i-1].w)] || isVowel(x.w[0]) != isVowel(w[0]) {
					continue
				}
				if len(x.w) < 4 || stopWords[lx] || isCapital(x.w) != isCapital(w) || x.w == w ||
					strings.Contains(s1, x.w) || strings.Contains(s2, x.w) {
					continue
				}
				cands = append(cands, x.w)
			}
		}
	}
	if len(cands) == 0 {
		return ""
	}
	slices.SortFunc(cands, func(a, b string) int {
		if d := hashInt(t.ID+a) - hashInt(t.ID+b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return cands[0]
}

var articles = map[string]bool{"a": true, "an": true, "the": true}

func isVowel(b byte) bool { return strings.IndexByte("AEIOUaeiou", b) >= 0 }

// ambiguous: some other line of the workspace also fills the cloze, so a
// reader could take its value from the wrong line.
func ambiguous(t Task, c Cloze) bool {
	for _, p := range t.Paragraphs {
		for i, s := range p.Sentences {
			if p.File == c.File && i+1 == c.Line {
				continue
			}
			if _, ok := c.Fill(s); ok {
				return true
			}
		}
	}
	return false
}
