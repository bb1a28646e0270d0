package locator

import (
	"strings"
	"testing"
)

// fuzzEdit builds an old and a new text from fuzz input: old's lines with
// lines [pos, pos+del) replaced by ins's lines, written with one of several
// line-ending styles. Lines lose trailing "\r" so that the line model (split
// on "\n", strip one "\r") round-trips.
func fuzzEdit(old, ins string, pos, del uint16, style uint8) (oldText, newText string, oldLines, newLines []string, p, d, n int) {
	// Small inputs keep executions (and the fuzzer's minimisation) fast;
	// long lines are covered by the golden cases and benchmarks.
	old, ins = old[:min(len(old), 4096)], ins[:min(len(ins), 1024)]
	oldLines = normFuzzLines(SplitLines(old))
	insLines := normFuzzLines(SplitLines(ins))
	if len(oldLines) > 200 {
		oldLines = oldLines[:200]
	}
	if len(insLines) > 50 {
		insLines = insLines[:50]
	}
	p = int(pos) % (len(oldLines) + 1)
	d = int(del) % (len(oldLines) - p + 1)
	newLines = append(append(append([]string{}, oldLines[:p]...), insLines...), oldLines[p+d:]...)
	return render(oldLines, style), render(newLines, style>>2), oldLines, newLines, p, d, len(insLines)
}

func normFuzzLines(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.TrimRight(l, "\r")
	}
	return out
}

// render writes lines with LF, CRLF, mixed endings, or no final newline.
func render(lines []string, style uint8) string {
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(l)
		switch {
		case i == len(lines)-1 && style&3 == 3 && l != "":
			// no trailing newline (an empty last line needs its "\n" to exist)
		case style&3 == 1 || (style&3 == 2 && i%2 == 0):
			b.WriteString("\r\n")
		default:
			b.WriteString("\n")
		}
	}
	return b.String()
}

func uniqueIn(lines []string, span []string) bool {
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	for _, l := range span {
		if count[l] != 1 {
			return false
		}
	}
	return true
}

// FuzzLocate checks the invariant on random edits: a result that is not
// Invalid carries exactly the new text at its range (one-shot, batch and
// anchored paths), and a span the edit did not touch whose lines are each
// unique in both texts is never lost: it comes back unchanged or moved at
// exactly the shifted range.
func FuzzLocate(f *testing.F) {
	f.Add("a\nb\nc\nd\n", "x\n", uint16(1), uint16(0), uint16(2), uint16(1), uint8(0))
	f.Add("a\r\nb\r\nc\r\n", "", uint16(0), uint16(1), uint16(1), uint16(1), uint8(5))
	f.Add("k: 1\nv: 2\n\nk: 1\nv: 2\n", "k: 1\nv: 3\n", uint16(3), uint16(2), uint16(0), uint16(2), uint8(2))
	f.Add("", "new\n", uint16(0), uint16(0), uint16(0), uint16(0), uint8(3))
	f.Add("one line", "", uint16(0), uint16(1), uint16(0), uint16(0), uint8(15))
	f.Add("é\n🚀 go\nz\n", "🚀 go\n", uint16(0), uint16(0), uint16(1), uint16(0), uint8(9))
	f.Fuzz(func(t *testing.T, old, ins string, pos, del, start, length uint16, style uint8) {
		oldText, newText, oldLines, newLines, p, d, n := fuzzEdit(old, ins, pos, del, style)
		if len(oldLines) == 0 {
			r := Locate(oldText, newText, Range{1, 1}, DefaultParams())
			if r.Status != Invalid {
				t.Fatalf("located a line of an empty text: %+v", r)
			}
			return
		}
		s := int(start) % len(oldLines)
		e := s + int(length)%min(len(oldLines)-s, 20) // exclusive end
		e = max(e, s+1)
		r := Range{s + 1, e}
		params := DefaultParams()

		if ed := Diff(oldText, newText, params); !ed.identical {
			checkHunks(t, ed.old, ed.new, ed.hunks)
		}
		res := Locate(oldText, newText, r, params)
		checkInvariant(t, newText, res)
		if b := Diff(oldText, newText, params).Locate(r); !sameResult(b, res) {
			t.Fatalf("batch %+v != one-shot %+v", b, res)
		}
		ares := Relocate(NewAnchor(oldText, r, params.ContextLines), newText, params)
		checkInvariant(t, newText, ares)

		untouched := e <= p || s >= p+d
		if !untouched || !uniqueIn(oldLines, oldLines[s:e]) || !uniqueIn(newLines, oldLines[s:e]) {
			return
		}
		shift := 0
		if s >= p+d || (d == 0 && s >= p) {
			shift = n - d
		}
		want := Range{r.Start + shift, r.End + shift}
		for name, got := range map[string]Result{"diff": res, "anchored": ares} {
			if (got.Status != Unchanged && got.Status != Moved) || got.Range != want {
				t.Fatalf("%s: untouched unique span %v lost: got %s %v (%s), want %v\nold %q\nnew %q",
					name, r, got.Status, got.Range, got.Reason, want, oldText, newText)
			}
		}
	})
}
