package recognize

import (
	"path/filepath"
	"strings"
)

// terminal recognizes a shell command run in cwd that exited 0 and showed
// out. screen: out is a terminal screen (tabs expanded, trailing blanks
// dropped, the whole output stripped), as OpenHands shows it.
func (r *recognizer) terminal(command, cwd, out string, screen bool) Result {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return event("terminal", "no absolute working directory")
	}
	p, why := r.parseShell(command, cwd)
	if why != "" {
		return event("terminal", why)
	}
	t := term{r: r, cwd: p.cwd, out: out, screen: screen, stages: p.stages}
	first := p.stages[0]
	prog := filepath.Base(first[0])
	if len(p.stages) == 1 {
		switch prog {
		case "cat", "head", "tail", "sed", "nl":
			return t.orQuery(t.read(prog, first[1:]))
		case "grep", "rg":
			return t.orQuery(t.grep(prog, first[1:], nil))
		case "ls":
			return t.orQuery(r.ls(first[1:], out, p.cwd))
		case "find":
			return t.orQuery(r.find(first[1:], out, p.cwd))
		}
		return event("terminal/"+prog, "a program whose output is not file content")
	}
	var fs []filter
	for _, st := range p.stages[1:] {
		f, ok := parseFilter(st)
		if !ok {
			return t.query("terminal/pipeline", "a stage that is not a read-only line filter: "+st[0])
		}
		fs = append(fs, f)
	}
	switch prog {
	case "cat", "head", "tail", "sed", "nl":
		return t.orQuery(t.filteredRead(prog, first[1:], fs))
	case "grep", "rg":
		for _, f := range fs {
			if f.numbers {
				return t.query("terminal/pipeline", "grep -n over grep output")
			}
		}
		return t.orQuery(t.grep(prog, first[1:], fs))
	case "ls", "find":
		return t.query("terminal/"+prog+"-filtered", "a listing filtered by a pipeline")
	}
	return event("terminal/pipeline", "a pipeline that does not start with a file read")
}

// term is one terminal output being recognized.
type term struct {
	r      *recognizer
	cwd    string
	out    string
	screen bool
	stages [][]string // the pipeline, for a query source
}

// filter is a pipeline stage that only selects lines of its input.
type filter struct {
	prog    string
	context bool // grep -A/-B/-C: groups split by "--"
	numbers bool // grep -n: numbers lines by their place in the stream
	window  bool // head, tail, sed -n: keeps one contiguous run
}

func parseFilter(argv []string) (filter, bool) {
	prog := filepath.Base(argv[0])
	args := argv[1:]
	f := filter{prog: prog}
	switch prog {
	case "cat":
		return f, len(args) == 0
	case "head", "tail":
		_, files, ok := countArg(args)
		f.window = true
		return f, ok && len(files) == 0
	case "sed":
		if len(args) != 2 || args[0] != "-n" {
			return f, false
		}
		_, _, ok := sedRange(args[1])
		f.window = true
		return f, ok
	case "grep":
		g, ok := parseGrepArgs(args, false)
		if !ok || len(g.operands) > 0 || g.recursive || g.names || g.count || g.only {
			return f, false
		}
		f.context, f.numbers = g.context, g.numbers
		return f, true
	}
	return f, false
}

// render shows lines as the terminal did.
func (t term) render(lines []string, ends bool) string { return t.printer().render(lines, ends) }

// printer is how the terminal shows lines, apart from the output and the
// call: what a result's renderer keeps for the life of its block.
type printer struct{ screen bool }

func (t term) printer() printer { return printer{screen: t.screen} }

func (pr printer) render(lines []string, ends bool) string {
	if pr.screen {
		return screenOf(lines)
	}
	s := join(lines)
	if s != "" && ends {
		s += "\n"
	}
	return s
}

// shows reports whether rendering lines gives exactly the output.
func (t term) shows(lines []string) bool {
	_, ends := splitOutput(t.out)
	if t.screen {
		return screenOf(lines) == strings.TrimSpace(t.out)
	}
	return t.render(lines, ends) == t.out
}

func (t term) resolve(arg string) string { return resolve(t.cwd, arg) }

// file is the file an operand names: a regular file, or one gone since
// (the server then says it was deleted).
func (t term) file(arg string) (string, bool) {
	p := t.resolve(arg)
	if t.r.isFile(p) {
		return p, true
	}
	return p, !t.r.exists(p) && t.r.files != nil
}
