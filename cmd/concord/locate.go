package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/concord-ctx/concord/locator"
)

// locateOptions are locate's flag values.
type locateOptions struct {
	oldPath, newPath, lines, spanPath, before, after *string
	asJSON, anchored, atEnd                          *bool
	minSim, subRatio                                 *float64
	minSubs, ctxLines                                *int
	timeout                                          *time.Duration
}

func locateFlags() (*pflag.FlagSet, *locateOptions) {
	fs := pflag.NewFlagSet("locate", pflag.ContinueOnError)
	def := locator.DefaultParams()
	return fs, &locateOptions{
		oldPath:  fs.String("old", "", "the old file (as the agent read it)"),
		newPath:  fs.String("new", "", "the new file (required)"),
		lines:    fs.String("lines", "", "the old range, 1-based inclusive: A-B or A (required)"),
		asJSON:   fs.Bool("json", false, "print the result as JSON"),
		anchored: fs.Bool("anchored", false, "forget the old file but the span and its context (anchored mode)"),
		spanPath: fs.String("span-file", "", "anchored mode without --old: the span's text as the agent saw it"),
		before:   fs.String("before-file", "", "with --span-file: the lines just before the span"),
		after:    fs.String("after-file", "", "with --span-file: the lines just after the span"),
		atEnd:    fs.Bool("at-end", false, "with --span-file: the span ended the file"),
		minSim:   fs.Float64("min-similarity", def.MinSimilarity, "local edit when the token similarity is at least this"),
		subRatio: fs.Float64("substitution-ratio", def.SubstitutionRatio, "local edit when equal-length spans differ in at most max(min-substitutions, floor(tokens*ratio)) tokens"),
		minSubs:  fs.Int("min-substitutions", def.MinSubstitutions, "see --substitution-ratio"),
		ctxLines: fs.Int("context-lines", def.ContextLines, "context lines kept around the span in anchored mode"),
		timeout:  fs.Duration("diff-timeout", 0, "line diff deadline (0: none, results independent of timing)"),
	}
}

// runLocate is `concord locate`: the locator on two files, for users tuning
// thresholds and for debugging golden cases. An Invalid verdict is a normal
// answer (status 0); only bad input is an error.
func runLocate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o := locateFlags()
	if err := parseCommand(fs, "locate", args, stderr); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	p, r, err := o.check()
	if err != nil {
		return usageError{err}
	}
	newText, err := readText(*o.newPath)
	if err != nil {
		return err
	}
	res, mode, err := o.locate(newText, r, p)
	if err != nil {
		return err
	}
	if *o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Old    string         `json:"old,omitempty"`
			New    string         `json:"new"`
			Lines  locator.Range  `json:"lines"`
			Mode   string         `json:"mode"`
			Params locator.Params `json:"params"`
			Result locator.Result `json:"result"`
		}{*o.oldPath, *o.newPath, r, mode, p, res})
	}
	printResult(stdout, *o.newPath, len(locator.SplitLines(newText)), r, res)
	return nil
}

// check validates the flags together and returns the thresholds and the
// range; its errors are usage errors.
func (o *locateOptions) check() (locator.Params, locator.Range, error) {
	p := locator.DefaultParams()
	p.MinSimilarity, p.SubstitutionRatio, p.MinSubstitutions, p.ContextLines, p.DiffTimeout = *o.minSim, *o.subRatio, *o.minSubs, *o.ctxLines, *o.timeout
	switch {
	case *o.newPath == "":
		return p, locator.Range{}, errors.New("--new is required")
	case *o.lines == "":
		return p, locator.Range{}, errors.New("--lines is required")
	case *o.oldPath == "" && *o.spanPath == "":
		return p, locator.Range{}, errors.New("one of --old or --span-file is required")
	case *o.oldPath != "" && *o.spanPath != "":
		return p, locator.Range{}, errors.New("--old and --span-file exclude each other")
	case *o.spanPath == "" && (*o.before != "" || *o.after != "" || *o.atEnd):
		return p, locator.Range{}, errors.New("--before-file, --after-file and --at-end go with --span-file")
	case p.MinSimilarity < 0 || p.MinSimilarity > 1:
		return p, locator.Range{}, fmt.Errorf("--min-similarity %v: want 0..1", p.MinSimilarity)
	case p.SubstitutionRatio < 0 || p.SubstitutionRatio > 1:
		return p, locator.Range{}, fmt.Errorf("--substitution-ratio %v: want 0..1", p.SubstitutionRatio)
	case p.MinSubstitutions < 0 || p.ContextLines < 0 || p.DiffTimeout < 0:
		return p, locator.Range{}, errors.New("--min-substitutions, --context-lines and --diff-timeout must not be negative")
	}
	r, err := locator.ParseRange(*o.lines)
	if err != nil {
		return p, r, err
	}
	if r.Start < 1 || r.End < r.Start {
		// A verdict on an impossible range would only hide the typo.
		return p, r, fmt.Errorf("--lines %q: want A-B with 1 <= A <= B", *o.lines)
	}
	return p, r, nil
}

// locate runs the mode the flags chose: diff (--old), anchored (--old
// --anchored) or anchored from span files (--span-file).
func (o *locateOptions) locate(newText string, r locator.Range, p locator.Params) (locator.Result, string, error) {
	if *o.spanPath == "" {
		oldText, err := readText(*o.oldPath)
		if err != nil {
			return locator.Result{}, "", err
		}
		if n := len(locator.SplitLines(oldText)); r.End > n {
			// Past the end there is nothing to locate, and a re-read hint for
			// lines that never existed would send the agent after nothing.
			return locator.Result{}, "", usageError{fmt.Errorf("--lines %d-%d: %s has only %d lines", r.Start, r.End, *o.oldPath, n)}
		}
		if *o.anchored {
			return locator.Relocate(locator.NewAnchor(oldText, r, p.ContextLines), newText, p), "anchored", nil
		}
		return locator.Locate(oldText, newText, r, p), "diff", nil
	}
	a := locator.Anchor{Range: r, AtEnd: *o.atEnd}
	for _, part := range []struct {
		path string
		dst  *[]string
	}{{*o.spanPath, &a.Span}, {*o.before, &a.Before}, {*o.after, &a.After}} {
		if part.path == "" {
			continue
		}
		text, err := readText(part.path)
		if err != nil {
			return locator.Result{}, "", err
		}
		*part.dst = locator.SplitLines(text)
	}
	if len(a.Span) == 0 {
		return locator.Result{}, "", fmt.Errorf("span file %s is empty", *o.spanPath)
	}
	return locator.Relocate(a, newText, p), "anchored", nil
}

// maxInput bounds what locate reads: it is a debugging tool, and the server
// caps sources the same order of magnitude.
const maxInput = 64 << 20

func readText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInput+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxInput {
		return "", fmt.Errorf("read %s: larger than %d MiB", path, maxInput>>20)
	}
	return string(data), nil
}

// printResult writes the human-readable verdict.
func printResult(w io.Writer, newPath string, newLines int, old locator.Range, res locator.Result) {
	ev := res.Evidence
	fmt.Fprintf(w, "status:     %s\n", res.Status)
	if res.Status == locator.Invalid {
		fmt.Fprintf(w, "range:      none (was %d-%d)\n", old.Start, old.End)
	} else {
		fmt.Fprintf(w, "range:      %d-%d (was %d-%d)\n", res.Range.Start, res.Range.End, old.Start, old.End)
	}
	fmt.Fprintf(w, "method:     %s\n", ev.Method)
	sim := fmt.Sprintf("%.4g (%d tokens", ev.Similarity, ev.Tokens)
	if ev.Substitutions > 0 {
		sim += fmt.Sprintf(", %d substituted", ev.Substitutions)
	}
	fmt.Fprintf(w, "similarity: %s)\n", sim)
	if len(ev.Anchors) > 0 {
		fmt.Fprintf(w, "anchors:    %s\n", strings.Join(ev.Anchors, ", "))
	}
	fmt.Fprintf(w, "reason:     %s\n", res.Reason)
	if res.Status == locator.Invalid {
		// Name the lines where the span's place is now: the old numbers may
		// hold other lines.
		switch {
		case res.Near != nil:
			fmt.Fprintf(w, "now:        %d-%d (rewritten beyond a local edit)\n", res.Near.Start, res.Near.End)
			fmt.Fprintf(w, "\nRe-read %s lines %d-%d before relying on them.\n", newPath, res.Near.Start, res.Near.End)
		case res.Removed:
			fmt.Fprintf(w, "now:        removed\n")
			fmt.Fprintf(w, "\nThose lines were removed. Re-read %s (%d lines) before relying on them.\n", newPath, newLines)
		default:
			fmt.Fprintf(w, "now:        unknown\n")
			fmt.Fprintf(w, "\nWhere those lines are now is unknown. Re-read %s (%d lines) before relying on them.\n", newPath, newLines)
		}
		return
	}
	fmt.Fprintln(w, "text:")
	width := len(fmt.Sprint(res.Range.End))
	for i, line := range strings.Split(res.Text, "\n") {
		fmt.Fprintf(w, "  %*d | %s\n", width, res.Range.Start+i, line)
	}
}
