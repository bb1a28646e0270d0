package locator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"

	"testing"
	"time"
)

// benchFile builds a code-like file of at least minLines lines and minBytes
// bytes, and the same file after one edit in its middle (3 lines replaced by
// 4). It returns 1,000 spans of 1-40 lines over the old file.
func benchFile(minLines, minBytes int) (old, new string, spans []Range) {
	rng := rand.New(rand.NewPCG(42, 42))
	var lines []string
	size := 0
	for id := 1; len(lines) < minLines || size < minBytes; id++ {
		l := genLine(rng, id)
		lines = append(lines, l)
		size += len(l) + 1
	}
	mid := len(lines) / 2
	edited := append(append(append([]string{}, lines[:mid]...),
		"\t// rewritten", "\tv0 := compute(1, \"k\")", "\tv1 := compute(2, \"k\")", "\tlog.Printf(\"item %d\", 0)"),
		lines[mid+3:]...)
	for range 1000 {
		s := rng.IntN(len(lines) - 40)
		spans = append(spans, Range{s + 1, s + 1 + rng.IntN(40)})
	}
	return JoinLines(lines) + "\n", JoinLines(edited) + "\n", spans
}

var sink Result

// gitDiffNs times `git diff --no-index --histogram` on the two texts
// written to temp files (mean of a few runs, process start included); 0
// when git is absent.
func gitDiffNs(b *testing.B, old, new string) float64 {
	git, err := exec.LookPath("git")
	if err != nil {
		return 0
	}
	dir := b.TempDir()
	a, c := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	if err := os.WriteFile(a, []byte(old), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(c, []byte(new), 0o644); err != nil {
		b.Fatal(err)
	}
	const runs = 10
	start := time.Now()
	for range runs {
		cmd := exec.Command(git, "diff", "--no-index", "--histogram", "--no-color", a, c)
		cmd.Stdout, cmd.Stderr = nil, nil
		var ee *exec.ExitError
		if err := cmd.Run(); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			b.Fatalf("git diff: %v", err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / runs
}

// BenchmarkRelocate1000: one Diff of the edited file, then 1,000 spans
// located through it (the runtime's path when a file with 1,000 dependent
// blocks changes). Metrics: ns/op for the whole batch, ns/span, and x-git,
// the ratio to one `git diff --no-index --histogram` of the same files
// timed in the same run.
func BenchmarkRelocate1000(b *testing.B) {
	for _, size := range []struct {
		name            string
		lines, minBytes int
	}{
		{"10k-lines", 10_000, 0},
		{"1MB", 0, 1 << 20},
	} {
		old, new, spans := benchFile(size.lines, size.minBytes)
		b.Run(size.name, func(b *testing.B) {
			gitNs := gitDiffNs(b, old, new)
			p := DefaultParams()
			b.SetBytes(int64(len(old)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				e := Diff(old, new, p)
				for _, r := range spans {
					sink = e.Locate(r)
				}
			}
			nsop := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(nsop/float64(len(spans)), "ns/span")
			if gitNs > 0 {
				b.ReportMetric(gitNs, "git-ns")
				b.ReportMetric(nsop/gitNs, "x-git")
			}
		})
	}
}

// BenchmarkLocateOnly: the per-span cost once the diff is done.
func BenchmarkLocateOnly(b *testing.B) {
	old, new, spans := benchFile(10_000, 0)
	e := Diff(old, new, DefaultParams())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sink = e.Locate(spans[i%len(spans)])
		i++
	}
}

// BenchmarkGitDiff: git alone, for reference (skipped without git).
func BenchmarkGitDiff(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not installed")
	}
	old, new, _ := benchFile(10_000, 0)
	dir := b.TempDir()
	a, c := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	_ = os.WriteFile(a, []byte(old), 0o644)
	_ = os.WriteFile(c, []byte(new), 0o644)
	for b.Loop() {
		cmd := exec.Command("git", "diff", "--no-index", "--histogram", "--no-color", a, c)
		var ee *exec.ExitError
		if err := cmd.Run(); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnchored: Relocate of one span after an edit above it in a
// 10,000-line file (old text unknown, exact text search).
func BenchmarkAnchored(b *testing.B) {
	old, new, spans := benchFile(10_000, 0)
	a := NewAnchor(old, spans[0], 3)
	p := DefaultParams()
	b.ReportAllocs()
	for b.Loop() {
		sink = Relocate(a, new, p)
	}

}

// BenchmarkDiffRewrite: the worst case for a line diff, a 10,000-line file
// rewritten line by line (every other line changed, then all), stays
// bounded thanks to the unique-line split.
func BenchmarkDiffRewrite(b *testing.B) {
	old, _, _ := benchFile(10_000, 0)
	lines := SplitLines(old)
	half, all := make([]string, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		half[i], all[i] = l, l+" // rewritten"
		if i%2 == 0 {
			half[i] = all[i]
		}
	}
	for _, c := range []struct{ name, new string }{{"half", JoinLines(half)}, {"all", JoinLines(all)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Diff(old, c.new, DefaultParams())
			}
		})
	}
}

// BenchmarkTokenize: the similarity measure's tokenizer on a span of Go-like
// source lines (the judge of every span a change overlaps runs it).
func BenchmarkTokenize(b *testing.B) {
	lines := make([]string, 12)
	for i := range lines {
		lines[i] = fmt.Sprintf("\tfile %d line %d: alpha beta gamma delta := compute(x%d, \"y\") // note", i, i*7, i)
	}
	for b.Loop() {
		if len(Tokenize(lines)) == 0 {
			b.Fatal("no tokens")
		}
	}
}
