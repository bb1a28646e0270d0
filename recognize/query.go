package recognize

import (
	"path/filepath"
	"strings"

	"github.com/concord-ctx/concord/query"
)

// query tracks what a command printed as a query source (package query):
// a result that is a function of many files, or that no file can show
// back alone (grep -l, grep -c, find | grep, ls of files, cat a b | grep).
// The server re-runs the same pipeline when its scope changes. Only an
// allowlisted read-only pipeline qualifies; anything else stays the event
// it was (format and why say what it was not).
func (t term) query(format, why string) Result {
	if len(t.stages) == 0 {
		return event(format, why)
	}
	stages := make([][]string, len(t.stages))
	for i, st := range t.stages {
		stages[i] = append([]string{filepath.Base(st[0])}, st[1:]...)
	}
	s := query.Spec{Cwd: t.cwd, Stages: stages, Screen: t.screen, Sorted: stages[0][0] == "rg"}
	if _, err := s.Check(); err != nil {
		return event(format, why+" (no query source: "+strings.TrimPrefix(err.Error(), query.ErrRefused.Error()+": ")+")")
	}
	if t.screen && stages[0][0] == "rg" && !rgNames(stages[0][1:]) {
		// On a terminal rg prints headings and numbers it does not print
		// to the pipe the server reads: only its names and counts agree.
		return event(format, why+" (no query source: rg prints another format on a terminal)")
	}
	for _, st := range stages {
		if _, err := query.LookPath(st[0]); err != nil {
			return event(format, why+" (no query source: "+err.Error()+")")
		}
	}
	if t.out == "" && !t.screen {
		return event(format, why+" (nothing shown)")
	}
	out := t.out
	if len(stages) == 1 && stages[0][0] == "ls" && !lsOneALine(stages[0][1:]) {
		// ls prints columns to a terminal and one name a line to a pipe,
		// as the server runs it: the query asks for one a line (-1) and
		// holds the names shown. A name with a blank would split wrongly;
		// the first re-run then differs and the block is flagged, not
		// repaired wrongly.
		stages[0] = append([]string{"ls", "-1"}, stages[0][1:]...)
		out = strings.Join(strings.Fields(out), "\n")
	}
	text := s.Text(out)
	if text == "" {
		return event(format, why+" (nothing shown)")
	}
	_, ends := splitOutput(t.out)
	shown, pr := t.out, t.printer() // the output as shown: ls's columns are not the query's text
	render := func(ps []Part) string {
		if ps[0].Text == text {
			return shown // unchanged: as it was shown
		}
		if ps[0].Text == "" {
			return ""
		}
		return pr.render(strings.Split(ps[0].Text, "\n"), ends)
	}
	if s.URI() == "" {
		return event(format, why)
	}
	return Result{Kind: KindQuery, Format: format + "-query", Reason: why,
		Parts: []Part{{Path: t.cwd, URI: s.URI(), Text: text}}, render: render}
}

// orQuery turns a result the recognizers could not track into a query
// source where its pipeline qualifies.
func (t term) orQuery(res Result) Result {
	if res.Kind != KindEvent {
		return res
	}
	return t.query(res.Format, res.Reason)
}

// lsOneALine reports whether ls options print one entry a line anyway.
func lsOneALine(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "1lgno") {
			return true
		}
	}
	return false
}

// rgNames reports whether rg prints only file names or counts (the same
// on a terminal as in a pipe).
func rgNames(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--files" || a == "--files-with-matches" || a == "--files-without-match" || a == "--count":
			return true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "lc"):
			return true
		}
	}
	return false
}
