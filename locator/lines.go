package locator

import (
	"fmt"
	"strconv"
	"strings"
)

// SplitLines splits text into lines without terminators. Lines end at "\n";
// a trailing "\r" on a line is stripped, so CRLF, mixed endings and a lone
// final "\r" all normalise the same way. "" has no lines, and a trailing
// "\n" does not create an empty last line. The lines share text's memory.
func SplitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(text, "\n")+1)
	for len(text) > 0 {
		i := strings.IndexByte(text, '\n')
		var line string
		if i < 0 {
			line, text = text, ""
		} else {
			line, text = text[:i], text[i+1:]
		}
		lines = append(lines, strings.TrimSuffix(line, "\r"))
	}
	return lines
}

// JoinLines joins lines with "\n", without a trailing newline.
func JoinLines(lines []string) string {
	return strings.Join(lines, "\n")
}

// checkRange validates a 1-based inclusive range against n lines. Out of
// range is an error, not clamped: a caller that asks about lines the old text
// never had has a bug worth reporting, and guessing would hide it.
func checkRange(r Range, n int) string {
	switch {
	case r.Start < 1 || r.End < r.Start:
		return "bad range " + rangeString(r) + ": want 1 <= start <= end"
	case r.End > n:
		return "range " + rangeString(r) + " outside the old text (" + itoa(n) + " lines)"
	}
	return ""
}

// ParseRange reads "A-B" or "A" (one line) as a Range. It checks syntax
// only; whether the range fits a text is Locate's business.
func ParseRange(s string) (Range, error) {
	a, b, found := strings.Cut(strings.TrimSpace(s), "-")
	start, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil || start < 0 {
		return Range{}, fmt.Errorf("range %q: want A-B with line numbers", s)
	}
	end := start
	if found {
		if end, err = strconv.Atoi(strings.TrimSpace(b)); err != nil || end < 0 {
			return Range{}, fmt.Errorf("range %q: want A-B with line numbers", s)
		}
	}
	return Range{Start: start, End: end}, nil
}
