package recognize

// This file is compiled only into the tests: the classification serves the
// public corpus golden (public_test.go) and adds nothing to the binary.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/concord-ctx/concord/query"
)

// kindUnparsed: the shell parse refused the command (a syntax error, a
// list other than `cd DIR && ...`, an expansion, a redirection), so no
// recognizer ever sees its stages. Only classify says it; Recognize calls
// such a command an event.
const kindUnparsed Kind = "unparsed"

// intent is what a shell command asks to be shown, decided from the
// command alone: no file is read and no output is looked at. It is the
// decision the terminal recognizer makes before it reads anything, so a
// corpus of commands whose files and outputs are gone (public agent
// trajectories) still measures what the recognizer would try to track.
// Recognize may still end with an event where classify says read or
// listing: the output must print back from the files as they are.
type intent struct {
	Kind   Kind   `json:"kind"`
	Format string `json:"format,omitempty"`
	// Files are the files a read names, resolved against the working
	// directory (after any leading cd); a grep's operands.
	Files []string `json:"files,omitempty"`
	// Window is the lines a read asks for: "all", "A-B", "A-$", "last N",
	// or "hits" (a search: the lines it finds).
	Window string `json:"window,omitempty"`
	// Dir is a listing's directory.
	Dir    string `json:"dir,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// classify decides what a shell command run in cwd (absolute) asks for,
// as the terminal recognizer's dispatch does (terminal.go), with output
// printed to a pipe (not a terminal screen) and a cd taken where it leads.
// Globs are not expanded (no files): such a command is unparsed. A query
// source is judged by its pipeline alone (package query's allowlist), not
// by whether its programs are installed here.
func classify(command, cwd string) intent {
	r := &recognizer{call: Call{Runtime: OpenCode, Cwd: cwd}}
	p, why := r.parseShell(command, cwd)
	if why != "" {
		return intent{Kind: kindUnparsed, Reason: why}
	}
	c := classifier(p)
	first := p.stages[0]
	prog := filepath.Base(first[0])
	if len(p.stages) == 1 {
		switch prog {
		case "cat", "head", "tail", "sed", "nl":
			return c.orQuery(c.read(prog, first[1:]))
		case "grep", "rg":
			return c.orQuery(c.grep(prog, first[1:], false))
		case "ls":
			return c.orQuery(c.ls(first[1:]))
		case "find":
			if findExec(first) {
				return c.query(findExecFormat, findExecWhy(first))
			}
			return c.orQuery(c.find(first[1:]))
		}
		return intent{Kind: KindEvent, Format: "terminal/" + prog, Reason: "a program whose output is not file content"}
	}
	var numbers bool
	for _, st := range p.stages[1:] {
		f, ok := parseFilter(st)
		if !ok && filepath.Base(st[0]) == "xargs" {
			return c.query(xargsFormat, xargsWhy)
		}
		if !ok {
			return c.query("terminal/pipeline", "a stage that is not a read-only line filter: "+st[0])
		}
		numbers = numbers || f.numbers
	}
	switch prog {
	case "cat", "head", "tail", "sed", "nl":
		in := c.orQuery(c.read(prog, first[1:]))
		if in.Kind == KindRead {
			in.Window = "filtered " + in.Window
		}
		return in
	case "grep", "rg":
		if numbers {
			return c.query("terminal/pipeline", "grep -n over grep output")
		}
		return c.orQuery(c.grep(prog, first[1:], true))
	case "ls", "find":
		if findExec(first) {
			return c.query(findExecFormat, findExecWhy(first))
		}
		return c.query("terminal/"+prog+"-filtered", "a listing filtered by a pipeline")
	}
	return intent{Kind: KindEvent, Format: "terminal/pipeline", Reason: "a pipeline that does not start with a file read"}
}

// classifier is one parsed command being classified.
type classifier struct {
	cwd    string
	stages [][]string
}

func (c classifier) read(prog string, args []string) intent {
	format := "terminal/" + prog
	s, why := parseRead(prog, args)
	if why != "" {
		return intent{Kind: KindEvent, Format: format, Reason: why}
	}
	in := intent{Kind: KindRead, Format: format}
	for _, f := range s.files {
		in.Files = append(in.Files, resolve(c.cwd, f))
	}
	switch s.want.how {
	case span:
		end := "$"
		if s.want.b >= 0 {
			end = fmt.Sprint(s.want.b)
		}
		in.Window = fmt.Sprintf("%d-%s", s.want.a, end)
	case fromEnd:
		in.Window = fmt.Sprintf("last %d", s.want.a)
	default:
		in.Window = "all"
	}
	return in
}

// grep mirrors term.grep up to where it reads the output.
func (c classifier) grep(prog string, args []string, piped bool) intent {
	format := "terminal/" + prog
	if piped {
		format += "-pipeline"
	}
	g, ok := parseGrepArgs(args, prog == "rg")
	switch {
	case !ok:
		return intent{Kind: KindEvent, Format: format, Reason: "a " + prog + " option that changes what a line shows"}
	case g.names || g.count:
		return c.query(format+"-l", "file names or counts")
	case g.only:
		return intent{Kind: KindEvent, Format: format, Reason: "parts of lines"}
	case len(g.operands) == 0 && !g.recursive:
		return intent{Kind: KindEvent, Format: format, Reason: "grep of its standard input"}
	case len(g.operands) == 0:
		g.operands = []string{"."}
	}
	in := intent{Kind: KindRead, Format: format, Window: "hits"}
	for _, f := range g.operands {
		in.Files = append(in.Files, resolve(c.cwd, f))
	}
	return in
}

// ls mirrors recognizer.ls's checks of the arguments.
func (c classifier) ls(args []string) intent {
	const format = "terminal/ls"
	var ops []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if strings.Trim(a[1:], "aA1lpFhR") != "" {
				return intent{Kind: KindEvent, Format: format, Reason: "an ls option that changes the listing: " + a}
			}
			continue
		}
		ops = append(ops, a)
	}
	if len(ops) > 1 {
		return intent{Kind: KindEvent, Format: format, Reason: "several directories"}
	}
	dir := "."
	if len(ops) == 1 {
		dir = ops[0]
	}
	return intent{Kind: KindListing, Format: format, Dir: resolve(c.cwd, dir)}
}

func (c classifier) find(args []string) intent {
	const format = "terminal/find"
	start, _, why := parseFind(args)
	if why != "" {
		return intent{Kind: KindEvent, Format: format, Reason: why}
	}
	return intent{Kind: KindListing, Format: format, Dir: resolve(c.cwd, start)}
}

// query mirrors term.query's checks that need no output.
func (c classifier) query(format, why string) intent {
	stages := make([][]string, len(c.stages))
	for i, st := range c.stages {
		stages[i] = append([]string{filepath.Base(st[0])}, st[1:]...)
	}
	s := query.Spec{Cwd: c.cwd, Stages: stages, Sorted: stages[0][0] == "rg"}
	if _, err := s.Check(); err != nil {
		return intent{Kind: KindEvent, Format: format, Reason: why + " (no query source: " + strings.TrimPrefix(err.Error(), query.ErrRefused.Error()+": ") + ")"}
	}
	if s.URI() == "" {
		return intent{Kind: KindEvent, Format: format, Reason: why}
	}
	return intent{Kind: KindQuery, Format: format + "-query", Reason: why}
}

func (c classifier) orQuery(in intent) intent {
	if in.Kind != KindEvent {
		return in
	}
	return c.query(in.Format, in.Reason)
}
