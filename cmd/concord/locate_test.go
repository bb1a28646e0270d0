package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/concord-ctx/concord/locator"
)

const (
	exampleOld = "../../testdata/locator/example/old.yaml"
	exampleNew = "../../testdata/locator/example/new.yaml"
)

func TestLocateHuman(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings of stdout, in order
	}{
		{"patched", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "10-14"},
			[]string{"status:     patched", "range:      11-15 (was 10-14)", "1 substituted", "  13 |   port: 6432"}},
		{"moved", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "5-8"},
			[]string{"status:     moved", "range:      6-9 (was 5-8)", "  6 | server:"}},
		{"drift", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "16-18"},
			[]string{"status:     invalid", "range:      none (was 16-18)", "drift: similarity 0.46 < 0.78", "now:        17-18", "Re-read " + exampleNew + " lines 17-18"}},
		{"threshold lowered", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "16-18", "--min-similarity", "0.4"},
			[]string{"status:     patched", "range:      17-18 (was 16-18)", "  18 |   sink: stderr"}},
		{"single line", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "2"},
			[]string{"status:     unchanged", "range:      2-2 (was 2-2)"}},
		{"anchored from old", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "10-14", "--anchored", "--context-lines", "2"},
			[]string{"status:     patched", "method:     anchored", "anchors:    before, after"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := runLocate(context.Background(), tt.args, &out, &errb); err != nil {
				t.Fatalf("runLocate: %v (stderr %q)", err, errb.String())
			}
			rest := out.String()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out.String())
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestLocateJSON(t *testing.T) {
	var out bytes.Buffer
	args := []string{"--old", exampleOld, "--new", exampleNew, "--lines", "10-14", "--json", "--context-lines", "2"}
	if err := runLocate(context.Background(), args, &out, &out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Mode   string
		Lines  locator.Range
		Params locator.Params
		Result locator.Result
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if got.Mode != "diff" || got.Lines != (locator.Range{Start: 10, End: 14}) || got.Params.ContextLines != 2 {
		t.Errorf("header = %+v", got)
	}
	newText, err := os.ReadFile(exampleNew)
	if err != nil {
		t.Fatal(err)
	}
	lines := locator.SplitLines(string(newText))
	r := got.Result
	if r.Status != locator.Patched || r.Text != locator.JoinLines(lines[r.Range.Start-1:r.Range.End]) {
		t.Errorf("result = %+v", r)
	}
}

func TestLocateSpanFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	span := write("span", "database:\n  host: db.internal\n  port: 5432\n  user: app\n  pool: 10\n")
	before := write("before", "  timeout: 30s\n\n")
	after := write("after", "\nlogging:\n")
	var out bytes.Buffer
	args := []string{"--span-file", span, "--before-file", before, "--after-file", after, "--new", exampleNew, "--lines", "10-14", "--json"}
	if err := runLocate(context.Background(), args, &out, &out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Mode   string
		Result locator.Result
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Mode != "anchored" || got.Result.Status != locator.Patched || got.Result.Range != (locator.Range{Start: 11, End: 15}) {
		t.Errorf("got %+v", got)
	}
}

func TestLocateErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no new", []string{"--old", exampleOld, "--lines", "1-2"}, true, "--new is required"},
		{"no lines", []string{"--old", exampleOld, "--new", exampleNew}, true, "--lines is required"},
		{"no old", []string{"--new", exampleNew, "--lines", "1-2"}, true, "one of --old or --span-file"},
		{"both", []string{"--old", exampleOld, "--span-file", exampleOld, "--new", exampleNew, "--lines", "1"}, true, "exclude each other"},
		{"bad lines", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "x-3"}, true, "want A-B"},
		{"reversed lines", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "9-2"}, true, "1 <= A <= B"},
		{"line zero", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "0-2"}, true, "1 <= A <= B"},
		{"bad similarity", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "1", "--min-similarity", "1.5"}, true, "want 0..1"},
		{"negative context", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "1", "--context-lines", "-1"}, true, "must not be negative"},
		{"unknown flag", []string{"--bogus"}, true, "unknown flag"},
		{"stray argument", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "1", "extra"}, true, "unexpected argument"},
		{"context without span", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "1", "--at-end"}, true, "go with --span-file"},
		{"lines past the end", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "50-60"}, true, "--lines 50-60: " + exampleOld + " has only 18 lines"},
		{"lines past the end, anchored", []string{"--old", exampleOld, "--new", exampleNew, "--lines", "17-19", "--anchored"}, true, "has only 18 lines"},
		{"missing file", []string{"--old", missing, "--new", exampleNew, "--lines", "1"}, false, "read " + missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runLocate(context.Background(), tt.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ue usageError
			if errors.As(err, &ue) != tt.usage {
				t.Errorf("usage error = %v, want %v", !tt.usage, tt.usage)
			}
			if out.Len() != 0 {
				t.Errorf("printed %q on error", out.String())
			}
		})
	}
}

func TestLocateHelp(t *testing.T) {
	var out bytes.Buffer
	err := runLocate(context.Background(), []string{"--help"}, &out, &out)
	if !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
	for _, w := range []string{"concord locate --old OLD", "--min-similarity", "--span-file", "unchanged"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help lacks %q", w)
		}
	}
}

// TestLocateBinary runs the real binary: exit status 0 with the verdict on
// stdout, 2 on a usage error with the message on stderr.
func TestLocateBinary(t *testing.T) {
	if concordBin == "" {
		t.Skip("binary not built")
	}
	cmd := exec.Command(concordBin, "locate", "--old", exampleOld, "--new", exampleNew, "--lines", "10-14")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("concord locate: %v", err)
	}
	if !strings.Contains(string(out), "status:     patched") {
		t.Errorf("stdout = %s", out)
	}
	cmd = exec.Command(concordBin, "locate", "--lines", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "--new is required") {
		t.Errorf("usage error: err %v, stderr %q", err, stderr.String())
	}
}

// TestLocateREADMEExample: the README's locator example shows what the
// command prints (issue 37: it left out the method: and text: lines).
func TestLocateREADMEExample(t *testing.T) {
	out, stderr, code := runBinIn(t, "../..", "locate", "--old", "testdata/locator/example/old.yaml",
		"--new", "testdata/locator/example/new.yaml", "--lines", "10-14")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	if !strings.Contains(string(readme), strings.Join(lines, "\n")+"\n") {
		t.Errorf("README.md (\"The locator on its own\") does not show this output:\n%s", out)
	}
}
