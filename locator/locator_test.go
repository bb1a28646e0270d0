package locator

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestSplitLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\n", []string{""}},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\n\n", []string{"a", ""}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\r\nb\nc", []string{"a", "b", "c"}},
		{"a\r", []string{"a"}},
		{"a\rb\n", []string{"a\rb"}},
		{"\r\n\r\n", []string{"", ""}},
		{"é\r\n🚀", []string{"é", "🚀"}},
	}
	for _, tt := range tests {
		if got := SplitLines(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := JoinLines([]string{"a", "", "b"}); got != "a\n\nb" {
		t.Errorf("JoinLines = %q", got)
	}
	if got := JoinLines(nil); got != "" {
		t.Errorf("JoinLines(nil) = %q", got)
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"port: 8080", []string{"port", ":", "8080"}},
		{"a->b_c", []string{"a", "-", ">", "b_c"}},
		{"  \t ", nil},
		{"fmt.Println(\"hi\")", []string{"fmt", ".", "Println", "(", "\"", "hi", "\"", ")"}},
		{"café noir", []string{"café", "noir"}},
		{"cafe\u0301!", []string{"cafe\u0301", "!"}},
		{"日本語 🚀go", []string{"日本語", "🚀", "go"}},
		{"x\xffy", []string{"x", "\xff", "y"}},
	}
	for _, tt := range tests {
		got := Tokenize([]string{tt.in})
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if n := countTokens([]string{tt.in}); n != len(tt.want) {
			t.Errorf("countTokens(%q) = %d, want %d", tt.in, n, len(tt.want))
		}
	}
}

func TestSubstitutionsAndSimilarity(t *testing.T) {
	tests := []struct {
		a, b string
		subs int
		sim  float64
	}{
		{"a b c", "a b c", 0, 1},
		{"a b c", "a x c", 1, 2.0 * 2 / 6},
		{"a b c", "a b", -1, 2.0 * 2 / 5},
		{"", "", 0, 1},
		{"a", "", -1, 0},
		{"a b c d", "d c b a", 4, 2.0 * 1 / 8},
	}
	for _, tt := range tests {
		ta, tb := Tokenize([]string{tt.a}), Tokenize([]string{tt.b})
		if got := Substitutions(ta, tb); got != tt.subs {
			t.Errorf("Substitutions(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.subs)
		}
		if got := Similarity([]string{tt.a}, []string{tt.b}); fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", tt.sim) {
			t.Errorf("Similarity(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.sim)
		}
	}
}

// lcs is the textbook O(n*m) reference for editDistance.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] > cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestEditDistanceMatchesLCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alpha := []string{"a", "b", "c", "d"}
	for i := 0; i < 2000; i++ {
		a := make([]string, rng.IntN(12))
		b := make([]string, rng.IntN(12))
		for j := range a {
			a[j] = alpha[rng.IntN(len(alpha))]
		}
		for j := range b {
			b[j] = alpha[rng.IntN(len(alpha))]
		}
		d, exact := editDistance(a, b, maxDiffWork)
		if want := len(a) + len(b) - 2*lcs(a, b); !exact || d != want {
			t.Fatalf("editDistance(%q, %q) = %d %v, want %d", a, b, d, exact, want)
		}
	}
}

func TestEditDistanceWorkCap(t *testing.T) {
	a, b := make([]string, 1500), make([]string, 1500)
	for i := range a {
		a[i], b[i] = fmt.Sprint("a", i), fmt.Sprint("b", i)
	}
	d, exact := editDistance(a, b, 1000)
	if exact || d <= 0 || d > 3000 {
		t.Fatalf("capped editDistance = %d %v, want a lower bound and exact=false", d, exact)
	}
	if d, exact := editDistance(a, b, maxDiffWork); !exact || d != 3000 {
		t.Fatalf("editDistance = %d %v, want 3000 exact", d, exact)
	}
}

func TestJudgeThresholds(t *testing.T) {
	p := DefaultParams()
	tests := []struct {
		old, new string
		local    bool
	}{
		{"a b c d e f g h i j", "a b c d e f g h i j", true},
		{"a b c d e f g h i j", "a X c d e f g h i Y", true},        // 2 of 10 substituted
		{"a b c d e f g h i j", "a X c d e Y g h i Z", false},       // 3 of 10, similarity 0.7
		{"a b c", "x y c", true},                                    // 2 of 3: min(2) substitutions
		{"a b c", "x y z", false},                                   // 3 of 3
		{"a b c d e f g h i j", "a b c d e f g h i j k", true},      // similarity 0.95
		{"a b c d e f g h i j", "a b c d e k l m n o p q r", false}, // similarity < 0.78
	}
	for _, tt := range tests {
		v := judge([]string{tt.old}, []string{tt.new}, p)
		if v.local != tt.local {
			t.Errorf("judge(%q, %q) local = %v (%s), want %v", tt.old, tt.new, v.local, v.reason, tt.local)
		}
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in   string
		want Range
		err  bool
	}{
		{"10-20", Range{10, 20}, false},
		{" 3 - 4 ", Range{3, 4}, false},
		{"7", Range{7, 7}, false},
		{"a-b", Range{}, true},
		{"-3", Range{}, true},
		{"3-", Range{}, true},
		{"", Range{}, true},
	}
	for _, tt := range tests {
		got, err := ParseRange(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseRange(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestNewAnchorClamps(t *testing.T) {
	text := "a\nb\nc\nd\ne\n"
	tests := []struct {
		r    Range
		want Anchor
	}{
		{Range{2, 3}, Anchor{Range: Range{2, 3}, Span: []string{"b", "c"}, Before: []string{"a"}, After: []string{"d", "e"}}},
		{Range{0, 1}, Anchor{Range: Range{1, 1}, Span: []string{"a"}, Before: []string{}, After: []string{"b", "c"}}},
		{Range{4, 99}, Anchor{Range: Range{4, 5}, Span: []string{"d", "e"}, Before: []string{"b", "c"}, After: []string{}, AtEnd: true}},
		{Range{7, 9}, Anchor{Range: Range{7, 9}}},
	}
	for _, tt := range tests {
		if got := NewAnchor(text, tt.r, 2); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("NewAnchor(%v) = %+v, want %+v", tt.r, got, tt.want)
		}
	}
	if r := Relocate(NewAnchor(text, Range{7, 9}, 2), text, DefaultParams()); r.Status != Invalid {
		t.Errorf("empty anchor relocated: %+v", r)
	}
}

func TestRelocateStripsCR(t *testing.T) {
	a := Anchor{Range: Range{1, 1}, Span: []string{"b\r"}, Before: []string{"a\r"}}
	r := Relocate(a, "a\r\nb\r\n", DefaultParams())
	if r.Status != Moved || r.Range != (Range{2, 2}) || r.Text != "b" {
		t.Fatalf("Relocate = %+v", r)
	}
}

// TestEditConcurrent: one Edit serves many goroutines (go test -race).
func TestEditConcurrent(t *testing.T) {
	var old, new strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&old, "line %d\n", i)
		if i == 150 {
			new.WriteString("line 150 changed\n")
			continue // a local edit
		}
		fmt.Fprintf(&new, "line %d\n", i)
	}
	e := Diff(old.String(), new.String(), DefaultParams())
	want := make([]Result, 300)
	for i := range want {
		want[i] = e.Locate(Range{i + 1, i + 1})
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range want {
				if got := e.Locate(Range{i + 1, i + 1}); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("span %d: %+v != %+v", i+1, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
	if want[10].Status != Unchanged || want[200].Status != Unchanged || want[150].Status != Patched {
		t.Errorf("statuses: %s %s %s", want[10].Status, want[200].Status, want[150].Status)
	}
}

// TestLineDiffTimeoutStillValid: with a deadline go-diff may return a
// coarser diff; results get worse, never wrong.
func TestLineDiffTimeoutStillValid(t *testing.T) {
	var old, new strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&old, "o%d\n", i*7%2000)
		fmt.Fprintf(&new, "o%d\n", i*11%2000)
	}
	p := DefaultParams()
	p.DiffTimeout = 1 // a deadline that has always passed: go-diff degrades, never lies
	e := Diff(old.String(), new.String(), p)
	for i := 1; i <= 2000; i += 37 {
		checkInvariant(t, new.String(), e.Locate(Range{i, i + 2}))
	}
}

// checkHunks verifies that hunks describe a valid edit from a to b: sorted,
// disjoint, separated by equal lines, and lines outside them equal.
func checkHunks(t *testing.T, a, b []string, hs []hunk) {
	t.Helper()
	oi, ni := 0, 0
	for k, h := range hs {
		if h.os < oi || h.ns < ni || h.oe < h.os || h.ne < h.ns || h.os-oi != h.ns-ni || (h.os == h.oe && h.ns == h.ne) {
			t.Fatalf("hunk %d %+v after old %d new %d", k, h, oi, ni)
		}
		if k > 0 && h.os == oi {
			t.Fatalf("hunk %d %+v touches the previous one", k, h)
		}
		for ; oi < h.os; oi, ni = oi+1, ni+1 {
			if a[oi] != b[ni] {
				t.Fatalf("old %d %q and new %d %q paired as equal", oi, a[oi], ni, b[ni])
			}
		}
		oi, ni = h.oe, h.ne
	}
	if len(a)-oi != len(b)-ni {
		t.Fatalf("tail: old %d..%d, new %d..%d", oi, len(a), ni, len(b))
	}
	for ; oi < len(a); oi, ni = oi+1, ni+1 {
		if a[oi] != b[ni] {
			t.Fatalf("old %d %q and new %d %q paired as equal", oi, a[oi], ni, b[ni])
		}
	}
}

// TestLineDiffLarge drives the anchored split (middles above directDiffMax):
// the hunks stay valid and an edit-free stretch keeps every line paired.
func TestLineDiffLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for round := 0; round < 20; round++ {
		n := 3000 + rng.IntN(4000)
		a := make([]string, n)
		for i := range a {
			if rng.IntN(6) == 0 {
				a[i] = "}"
			} else {
				a[i] = fmt.Sprint("line ", i)
			}
		}
		b := append([]string{}, a...)
		b[0] = "changed first"
		b[len(b)-1] = "changed last"
		for k := 0; k < 1+rng.IntN(30); k++ {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b = append(b[:i], b[min(len(b), i+1+rng.IntN(5)):]...)
			case 1:
				b = append(b[:i], append([]string{fmt.Sprint("new ", k), "}"}, b[i:]...)...)
			default:
				b[i] += " edited"
			}
		}
		hs, coarse := lineDiff(a, b, DefaultParams())
		checkHunks(t, a, b, hs)
		if coarse {
			t.Errorf("round %d: coarse diff for a file with many unique lines", round)
		}
	}
	// Unrelated texts: one hunk, exact, fast.
	a, b := make([]string, 10000), make([]string, 10000)
	for i := range a {
		a[i], b[i] = fmt.Sprint("a", i), fmt.Sprint("b", i)
	}
	hs, coarse := lineDiff(a, b, DefaultParams())
	checkHunks(t, a, b, hs)
	if len(hs) != 1 || coarse {
		t.Errorf("unrelated texts: %d hunks, coarse %v", len(hs), coarse)
	}
}

// TestSimilarityBeyondWorkCap: two large spans whose exact token diff is
// too costly still get a sound figure (a lower bound), and the judge
// decides on it.
func TestSimilarityBeyondWorkCap(t *testing.T) {
	a, b := make([]string, 3000), make([]string, 3000)
	for i := range a {
		a[i] = fmt.Sprintf("w%d a b c d e f g h old%d", i, i)
		b[i] = fmt.Sprintf("w%d a b c d e f g h new%d q", i, i) // every line: 1 of 10 tokens changed, 1 added
	}
	ta, tb := Tokenize(a), Tokenize(b)
	if _, exact := similarity(ta, tb); exact {
		t.Fatal("test needs a pair beyond the work cap")
	}
	// T = 30000+33000 tokens, D = 3 per line: (63000-9000)/63000.
	if got, want := Similarity(a, b), 54000.0/63000; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("Similarity = %v, want %v (line-aligned)", got, want)
	}
	v := judge(a, b, DefaultParams())
	if !v.local || !strings.Contains(v.reason, "at least 0.86") {
		t.Errorf("judge: local %v, %s", v.local, v.reason)
	}
	p := DefaultParams()
	p.MinSimilarity = 0.9
	if v := judge(a, b, p); v.local || !strings.Contains(v.reason, "drift") {
		t.Errorf("judge at 0.9: local %v, %s", v.local, v.reason)
	}
	// The same lines in reverse order: the token multisets agree (bound 1),
	// but the capped diff already proves drift.
	for i := range a {
		a[i] = fmt.Sprintf("k%d v%d", i, i)
	}
	for i := range b {
		b[i] = a[len(a)-1-i]
	}
	if v := judge(a, b, DefaultParams()); v.local || !strings.Contains(v.reason, "drift") {
		t.Errorf("reversed: local %v, %s", v.local, v.reason)
	}
	// With a threshold below the capped bound nothing proves it either way:
	// the line-aligned figure decides, and unproven is drift.
	p.MinSimilarity = 0.5
	if v := judge(a, b, p); v.local || !strings.Contains(v.reason, "not proven") {
		t.Errorf("reversed at 0.5: local %v, %s", v.local, v.reason)
	}
}
