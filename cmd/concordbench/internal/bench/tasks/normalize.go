package tasks

import (
	"strings"
	"unicode"
)

// asciiPunct is Python's string.punctuation, which HotpotQA's evaluation
// strips.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// Normalize is HotpotQA's official normalize_answer: lower case, remove
// punctuation, remove the articles a/an/the, collapse white space.
func Normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
	s = removeArticles(s)
	return strings.Join(strings.Fields(s), " ")
}

// removeArticles replaces whole words a/an/the with a space, like Python's
// re.sub(r'\b(a|an|the)\b', ' ', s) on str (Unicode word characters).
func removeArticles(s string) string {
	var b strings.Builder
	rs := []rune(s)
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
	for i := 0; i < len(rs); {
		if !isWord(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && isWord(rs[j]) {
			j++
		}
		switch w := string(rs[i:j]); w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

// ExactMatch is HotpotQA's exact-match metric.
func ExactMatch(pred, gold string) bool { return Normalize(pred) == Normalize(gold) }
