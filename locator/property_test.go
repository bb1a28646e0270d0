package locator

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// genLine writes a code-like line: mostly unique (an id inside), sometimes
// one of the lines every code base repeats.
func genLine(rng *rand.Rand, id int) string {
	common := []string{"}", "", "\t}", "\treturn nil", "\tif err != nil {", "\t\treturn err", "// ---", "else {"}
	if rng.IntN(5) == 0 {
		return common[rng.IntN(len(common))]
	}
	switch rng.IntN(4) {
	case 0:
		return fmt.Sprintf("\tv%d := compute(%d, %q)", id, rng.IntN(100), "k")
	case 1:
		return fmt.Sprintf("func handler%d(w io.Writer) error {", id)
	case 2:
		return fmt.Sprintf("\t// step %d: check the input", id)
	default:
		return fmt.Sprintf("\tlog.Printf(\"item %%d\", %d)", id)
	}
}

type pline struct {
	text   string
	origin int // index in the old file, -1 for lines the script wrote
}

// editScript applies 1-4 random operations (insert, delete, replace,
// modify one line) and returns the new file with each line's origin.
func editScript(rng *rand.Rand, old []string, nextID *int) []pline {
	cur := make([]pline, len(old))
	for i, l := range old {
		cur[i] = pline{l, i}
	}
	fresh := func(k int) []pline {
		out := make([]pline, k)
		for i := range out {
			*nextID++
			out[i] = pline{genLine(rng, *nextID), -1}
		}
		return out
	}
	for ops := 1 + rng.IntN(4); ops > 0; ops-- {
		pos := rng.IntN(len(cur) + 1)
		k := 1 + rng.IntN(8)
		end := min(len(cur), pos+k)
		var repl []pline
		switch rng.IntN(4) {
		case 0: // insert
			end = pos
			repl = fresh(k)
		case 1: // delete
		case 2: // replace
			repl = fresh(1 + rng.IntN(8))
		case 3: // modify one line in place
			if pos == len(cur) {
				continue
			}
			end = pos + 1
			repl = []pline{{cur[pos].text + " // edited", -1}}
		}
		cur = append(cur[:pos], append(repl, cur[end:]...)...)
	}
	return cur
}

// TestPropertyUntouchedSpans: for spans an edit script did not touch, the
// result is unchanged or moved at exactly the shifted range. The rate is
// measured, logged and must be 100%, for spans of unique text and for spans
// that contain lines repeated elsewhere ("}", blank lines) alike, in small
// files and in large ones (the anchored split of lineDiff).
func TestPropertyUntouchedSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 12))
	p := DefaultParams()
	var total, hit, totalDup, hitDup, touched int
	statuses := map[Status]int{}
	for script := 0; script < 430; script++ {
		nextID := 0
		n := 50 + rng.IntN(400)
		if script >= 400 {
			// Large files: edits far apart leave a middle above
			// directDiffMax, diffed through unique-line anchors.
			n = 4000 + rng.IntN(4000)
		}
		old := make([]string, n)
		for i := range old {
			nextID++
			old[i] = genLine(rng, nextID)
		}
		cur := editScript(rng, old, &nextID)
		newLines := make([]string, len(cur))
		where := make([]int, n) // old line -> new index, -1 when gone
		for i := range where {
			where[i] = -1
		}
		for i, l := range cur {
			newLines[i] = l.text
			if l.origin >= 0 {
				where[l.origin] = i
			}
		}
		oldText, newText := JoinLines(old)+"\n", JoinLines(newLines)+"\n"
		e := Diff(oldText, newText, p)
		counts := map[string]int{}
		for _, l := range old {
			counts[l]++
		}
		for _, l := range newLines {
			counts[l]++
		}
		for k := 0; k < 40; k++ {
			s := rng.IntN(n)
			l := 1 + rng.IntN(min(15, n-s))
			r := Range{s + 1, s + l}
			res := e.Locate(r)
			checkInvariant(t, newText, res)
			ns := where[s]
			intact := ns >= 0
			for i := 0; intact && i < l; i++ {
				intact = ns+i < len(cur) && cur[ns+i].origin == s+i
			}
			if !intact {
				touched++
				statuses[res.Status]++
				continue
			}
			dup := false
			for _, line := range old[s : s+l] {
				dup = dup || counts[line] > 2
			}
			want := Range{ns + 1, ns + l}
			ok := (res.Status == Unchanged || res.Status == Moved) && res.Range == want
			total++
			if ok {
				hit++
			}
			if dup {
				totalDup++
				if ok {
					hitDup++
				}
			}
			if !ok {
				t.Errorf("script %d span %v: untouched, want %v, got %s %v (%s)", script, r, want, res.Status, res.Range, res.Reason)
			}
		}
	}
	t.Logf("untouched spans: %d/%d located at the shifted range (%.2f%%); with repeated lines: %d/%d",
		hit, total, 100*float64(hit)/float64(total), hitDup, totalDup)
	t.Logf("touched spans: %d, verdicts %v", touched, statuses)
	if total < 1000 || totalDup < 100 {
		t.Errorf("too few untouched spans sampled: %d (%d with repeated lines)", total, totalDup)
	}
}

// TestPropertyCutPaste measures relocation of blocks that were cut and
// pasted elsewhere (touched by the edit, so not part of the 100% property):
// found as moved when their text is unique, never reported at a wrong place.
func TestPropertyCutPaste(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	p := DefaultParams()
	var total, moved, invalid int
	for script := 0; script < 300; script++ {
		n := 40 + rng.IntN(200)
		old := make([]string, n)
		for i := range old {
			old[i] = genLine(rng, i+1)
		}
		s := rng.IntN(n - 5)
		l := 1 + rng.IntN(min(8, n-s-1))
		block := old[s : s+l]
		rest := append(append([]string{}, old[:s]...), old[s+l:]...)
		at := rng.IntN(len(rest) + 1)
		for at == s { // pasting back in place is no move
			at = rng.IntN(len(rest) + 1)
		}
		newLines := append(append(append([]string{}, rest[:at]...), block...), rest[at:]...)
		newText := JoinLines(newLines) + "\n"
		res := Locate(JoinLines(old)+"\n", newText, Range{s + 1, s + l}, p)
		checkInvariant(t, newText, res)
		total++
		switch res.Status {
		case Moved:
			moved++
			if res.Range != (Range{at + 1, at + l}) {
				t.Errorf("cut-paste %d: %q moved to %v, pasted at %d", script, block, res.Range, at+1)
			}
		case Invalid:
			invalid++
		}
	}
	t.Logf("cut-and-paste: %d/%d moved (%.1f%%), %d invalid (ambiguous or drift), rest patched", moved, total, 100*float64(moved)/float64(total), invalid)
}
