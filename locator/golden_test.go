package locator

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"strings"
	"testing"

	"github.com/concord-ctx/concord/locator/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/locator/*.txtar")

const goldenDir = "../testdata/locator"

// goldenCase is one case file: a comment of "key: value" lines (status,
// range, mode, params, atEnd) and sections old, new (diff mode, or anchored
// mode built by NewAnchor), or span/before/after (anchored mode, old text
// unknown), and want (the expected Result as JSON, rewritten by -update).
//
// A section name may carry flags after the role: "crlf" turns every "\n" of
// the section into "\r\n", "noeol" drops its final "\n" (a file without a
// trailing newline). Raw "\r" bytes are kept as written (mixed endings).
type goldenCase struct {
	status Status
	mode   string
	r      Range
	p      Params
	atEnd  bool
	texts  map[string]string // role -> text, flags applied
}

func parseGolden(a *golden.Archive) (goldenCase, error) {
	c := goldenCase{mode: "diff", p: DefaultParams(), texts: map[string]string{}}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "status":
			c.status = Status(v)
		case "mode":
			c.mode = v
		case "range":
			r, err := ParseRange(v)
			if err != nil {
				return c, err
			}
			c.r = r
		case "params":
			if err := json.Unmarshal([]byte(v), &c.p); err != nil {
				return c, fmt.Errorf("params: %w", err)
			}
		case "atEnd":
			c.atEnd = v == "true"
		}
	}
	for _, s := range a.Sections {
		f := strings.Fields(s.Name)
		role, text := f[0], string(s.Data)
		for _, flag := range f[1:] {
			switch flag {
			case "crlf":
				text = strings.ReplaceAll(text, "\n", "\r\n")
			case "noeol":
				text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
			default:
				return c, fmt.Errorf("section %q: unknown flag %q", s.Name, flag)
			}
		}
		c.texts[role] = text
	}
	switch {
	case c.status == "":
		return c, fmt.Errorf("no status: line")
	case c.r == Range{}:
		return c, fmt.Errorf("no range: line")
	}
	return c, nil
}

func (c goldenCase) run() Result {
	if span, ok := c.texts["span"]; ok {
		a := Anchor{Range: c.r, Span: SplitLines(span), Before: SplitLines(c.texts["before"]),
			After: SplitLines(c.texts["after"]), AtEnd: c.atEnd}
		return Relocate(a, c.texts["new"], c.p)
	}
	if c.mode == "anchored" {
		return Relocate(NewAnchor(c.texts["old"], c.r, c.p.ContextLines), c.texts["new"], c.p)
	}
	return Locate(c.texts["old"], c.texts["new"], c.r, c.p)
}

// checkInvariant is the contract every caller relies on.
func checkInvariant(t *testing.T, newText string, res Result) {
	t.Helper()
	if res.Status == Invalid {
		if res.Range != (Range{}) || res.Text != "" {
			t.Errorf("invalid result carries range %v text %q", res.Range, res.Text)
		}
		return
	}
	lines := SplitLines(newText)
	if res.Range.Start < 1 || res.Range.End < res.Range.Start || res.Range.End > len(lines) {
		t.Fatalf("%s result has range %v outside the new text (%d lines)", res.Status, res.Range, len(lines))
	}
	if want := JoinLines(lines[res.Range.Start-1 : res.Range.End]); res.Text != want {
		t.Errorf("%s result text %q != new text at %v %q", res.Status, res.Text, res.Range, want)
	}
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Errorf("%d golden cases, want at least 40", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			a, err := golden.Parse(data)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			c, err := parseGolden(a)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			res := c.run()
			checkInvariant(t, c.texts["new"], res)
			if res.Status != c.status {
				t.Errorf("status %s (%s), want %s", res.Status, res.Reason, c.status)
			}
			if _, ok := c.texts["span"]; !ok && c.mode == "diff" {
				// The batch path must agree with the one-shot path.
				if b := Diff(c.texts["old"], c.texts["new"], c.p).Locate(c.r); !sameResult(b, res) {
					t.Errorf("batch result %+v != one-shot %+v", b, res)
				}
			}
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if *update {
				a.Set("want", got)
				if err := os.WriteFile(file, golden.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := a.Get("want")
			if !ok {
				t.Fatalf("no want section; run go test ./locator -update")
			}
			if !bytes.Equal(got, want) {
				t.Errorf("result differs from golden (go test ./locator -update to accept):\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func sameResult(a, b Result) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
