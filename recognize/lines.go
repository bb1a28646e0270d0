package recognize

import (
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/query"
)

// splitFile splits file content the way Concord reads a source: invalid
// UTF-8 as U+FFFD, CRLF as LF, no empty last line for a final newline.
func splitFile(s string) []string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// splitOutput splits a tool's output into lines; ends reports a final newline.
func splitOutput(s string) (lines []string, ends bool) {
	if s == "" {
		return nil, true
	}
	ends = strings.HasSuffix(s, "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n"), ends
}

// screenOf is lines as the terminal tool shows them: a screen, stripped.
func screenOf(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = query.ScreenLine(l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// sameShown reports whether a file line could be what the tool showed as
// shown: equal, or equal as the screen shows both.
func sameShown(file, shown string, screen bool) bool {
	return file == shown || screen && query.ScreenLine(file) == query.ScreenLine(shown)
}

// numbered parses a `cat -n`-style line: spaces, a number, then sep (or,
// on a terminal screen, two spaces for the tab, or nothing for an empty
// line whose trailing blanks were dropped).
func numbered(line string, tab bool, screen bool) (n int, text string, ok bool) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	if j == i || j-i > 9 {
		return 0, "", false
	}
	n, _ = strconv.Atoi(line[i:j])
	if n < 1 {
		return 0, "", false // numbering starts at 1
	}
	rest := line[j:]
	switch {
	case tab && strings.HasPrefix(rest, "\t"):
		return n, rest[1:], true
	case !tab && strings.HasPrefix(rest, "  "):
		return n, rest[2:], true
	case screen && strings.HasPrefix(rest, "  "):
		return n, rest[2:], true
	case screen && rest == "":
		return n, "", true
	}
	return 0, "", false
}

// catN is `cat -n`'s and `nl -ba`'s line format.
func catN(n int, text string) string {
	s := strconv.Itoa(n)
	if len(s) < 6 {
		s = strings.Repeat(" ", 6-len(s)) + s
	}
	return s + "\t" + text
}

func join(lines []string) string { return strings.Join(lines, "\n") }

func textLines(p Part) []string {
	if p.Text == "" && p.Whole() {
		return nil
	}
	return strings.Split(p.Text, "\n")
}

// atoi parses a non-negative decimal; ok false otherwise.
func atoi(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(s)
	return n, true
}
