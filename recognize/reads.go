package recognize

import (
	"strconv"
	"strings"
)

// how is the window a read command asks for.
type how int

const (
	whole   how = iota // cat, nl
	span               // head -n N (1..N), sed -n A,Bp, tail -n +K (K..$)
	fromEnd            // tail -n N: the last N lines
)

// want is a window of one file.
type want struct {
	how  how
	a, b int // span: lines a..b (b = -1: to the end); fromEnd: a lines
}

// window is the lines of file the command asked for, given the file now.
func (w want) window(n int) (start, end int) {
	switch w.how {
	case span:
		end = w.b
		if end < 0 || end > n {
			end = n
		}
		return w.a, end
	case fromEnd:
		return max(n-w.a+1, 1), n
	}
	return 1, n
}

// countArg reads head/tail's count: "-n N", "-nN", "-N"; default 10.
func countArg(args []string) (count string, files []string, ok bool) {
	count = "10"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" && i+1 < len(args):
			count = args[i+1]
			i++
		case strings.HasPrefix(a, "-n") && len(a) > 2:
			count = a[2:]
		case strings.HasPrefix(a, "--lines="):
			count = a[len("--lines="):]
		case len(a) > 1 && a[0] == '-' && isDigits(a[1:]):
			count = a[1:]
		case strings.HasPrefix(a, "-") && a != "-":
			return "", nil, false
		default:
			files = append(files, a)
		}
	}
	c := strings.TrimPrefix(count, "+")
	return count, files, isDigits(c)
}

func isDigits(s string) bool {
	_, ok := atoi(s)
	return ok
}

// sedRange parses sed -n's 'Ap', 'A,Bp', 'A,$p'; b = -1 for $.
func sedRange(s string) (a, b int, ok bool) {
	body, found := strings.CutSuffix(s, "p")
	if !found {
		return 0, 0, false
	}
	x, y, comma := strings.Cut(body, ",")
	a, ok = atoi(x)
	if !ok || a < 1 {
		return 0, 0, false
	}
	if !comma {
		return a, a, true
	}
	if y == "$" {
		return a, -1, true
	}
	b, ok = atoi(y)
	return a, b, ok && b >= a
}

// readSpec is a parsed cat/head/tail/sed/nl command.
type readSpec struct {
	files    []string
	numbered bool
	want     want
	head     bool // head/tail: several files print "==> name <==" headers
}

func parseRead(prog string, args []string) (readSpec, string) {
	var s readSpec
	switch prog {
	case "cat":
		for _, a := range args {
			switch {
			case a == "-n":
				s.numbered = true
			case strings.HasPrefix(a, "-"):
				return s, "a cat option other than -n"
			default:
				s.files = append(s.files, a)
			}
		}
	case "nl":
		if len(args) < 2 || args[0] != "-ba" {
			return s, "nl without -ba"
		}
		s.numbered, s.files = true, args[1:]
	case "head", "tail":
		count, files, ok := countArg(args)
		if !ok {
			return s, prog + " options other than a line count"
		}
		n, _ := atoi(strings.TrimPrefix(count, "+"))
		s.files, s.head = files, true
		switch {
		case strings.HasPrefix(count, "+") && prog == "head":
			return s, "head -n +N"
		case prog == "head":
			s.want = want{how: span, a: 1, b: n}
		case strings.HasPrefix(count, "+"):
			s.want = want{how: span, a: max(n, 1), b: -1}
		default:
			s.want = want{how: fromEnd, a: n}
		}
		if n == 0 {
			return s, "a count of 0"
		}
	case "sed":
		if len(args) < 3 || args[0] != "-n" {
			return s, "sed other than sed -n 'A,Bp' FILE"
		}
		a, b, ok := sedRange(args[1])
		if !ok {
			return s, "a sed script other than a line range"
		}
		s.want, s.files = want{how: span, a: a, b: b}, args[2:]
		if len(s.files) != 1 {
			return s, "sed over several files"
		}
	}
	if len(s.files) == 0 {
		return s, prog + " of its standard input"
	}
	for _, f := range s.files {
		if strings.HasPrefix(f, "-") {
			return s, "an option after the files"
		}
	}
	return s, ""
}

// read recognizes a single-stage file read.
func (t term) read(prog string, args []string) Result {
	format := "terminal/" + prog
	s, why := parseRead(prog, args)
	if why != "" {
		return event(format, why)
	}
	if len(s.files) > 1 {
		return t.several(format, s)
	}
	path, ok := t.file(s.files[0])
	if !ok {
		return event(format, "not a regular file")
	}
	lines, ends := splitOutput(t.out)
	part, shown, why := t.window(path, s, lines)
	if why != "" {
		return event(format, why)
	}
	numbered, pr := s.numbered, t.printer()
	render := func(ps []Part) string { return pr.render(decorate(ps[0], numbered), ends) }
	if !t.shows(decorate(part, numbered)) {
		return event(format, "the lines do not print back as the output")
	}
	_ = shown
	return Result{Kind: KindRead, Format: format, Parts: []Part{part}, render: render}
}

// decorate is a part's lines as cat -n / nl -ba or plain cat print them.
func decorate(p Part, numbered bool) []string {
	lines := textLines(p)
	if !numbered {
		return lines
	}
	start := max(p.Start, 1)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = catN(start+i, l)
	}
	return out
}

// window places the output lines of one file's read: the file's lines when
// the file still shows exactly the output (the model saw a screen; Concord
// compares raw lines), else the lines as shown with the window claimed.
func (t term) window(path string, s readSpec, lines []string) (Part, []string, string) {
	shown := lines
	start := 0
	if s.numbered {
		shown = make([]string, len(lines))
		for i, l := range lines {
			n, text, ok := numbered(l, true, t.screen)
			if !ok || i > 0 && n != start+i {
				return Part{}, nil, "a line that is not numbered in order"
			}
			if i == 0 {
				start = n
			}
			shown[i] = text
		}
	}
	if file, ok := t.r.lines(path); ok {
		a, b := s.want.window(len(file))
		if b >= a || s.want.how == whole {
			cand := file[min(a, len(file)+1)-1 : max(b, a-1)]
			p := Part{Path: path, Text: join(cand)}
			if s.want.how != whole {
				p.Start, p.End = a, b
			}
			if t.shows(decorate(p, s.numbered)) {
				return p, cand, ""
			}
		}
	}
	if len(shown) == 0 {
		return Part{}, nil, "nothing shown"
	}
	p := Part{Path: path, Text: join(shown)}
	switch {
	case s.numbered:
		if s.want.how != whole || start != 1 {
			p.Start, p.End = start, start+len(shown)-1
		}
	case s.want.how == whole:
	case s.want.how == span:
		p.Start, p.End = s.want.a, s.want.a+len(shown)-1
		if s.want.b >= 0 && p.End > s.want.b {
			return Part{}, nil, "more lines than asked for"
		}
	default: // the last lines of a file that changed since: their place is unknown
		return Part{}, nil, "tail of a file that no longer ends with the lines shown"
	}
	return p, shown, ""
}

// several is cat/head/tail of several files, split by the files' current
// contents: tracked only when the files as they are now show exactly the
// output (cat prints them back to back; head/tail print "==> name <==").
func (t term) several(format string, s readSpec) Result {
	var parts []Part
	seen := map[string]bool{}
	for _, name := range s.files {
		path := t.resolve(name)
		if seen[path] {
			return event(format, "one file twice")
		}
		seen[path] = true
		file, ok := t.r.lines(path)
		if !ok || !t.r.isFile(path) {
			return event(format, "a file that cannot be read now")
		}
		p := Part{Path: path, Text: join(file)}
		if s.want.how != whole {
			a, b := s.want.window(len(file))
			if b < a {
				return event(format, "an empty window")
			}
			p.Start, p.End, p.Text = a, b, join(file[a-1:b])
		}
		parts = append(parts, p)
	}
	if s.want.how == whole && !s.numbered {
		for _, p := range parts[:len(parts)-1] {
			if data, err := t.r.files.ReadFile(p.Path); err != nil || len(data) > 0 && data[len(data)-1] != '\n' {
				return event(format, "a file without a final newline runs into the next")
			}
		}
	}
	names := append([]string(nil), s.files...)
	numbered, head, pr := s.numbered, s.head, t.printer()
	_, ends := splitOutput(t.out)
	render := func(ps []Part) string {
		var lines []string
		n := 0
		for i, p := range ps {
			if head {
				if i > 0 {
					lines = append(lines, "")
				}
				lines = append(lines, "==> "+names[i]+" <==")
				lines = append(lines, textLines(p)...)
				continue
			}
			for _, l := range textLines(p) {
				n++
				if numbered {
					l = catN(n, l) // cat -n numbers the concatenation
				}
				lines = append(lines, l)
			}
		}
		return pr.render(lines, ends)
	}
	if render(parts) != t.render(mustLines(t.out), ends) {
		return event(format, "the files now do not show the output")
	}
	return Result{Kind: KindRead, Format: format, Parts: parts, render: render}
}

func mustLines(s string) []string {
	l, _ := splitOutput(s)
	return l
}

// filteredRead is a read of one file piped through line filters: the
// output's lines are lines of the file, in order, placed by their text.
func (t term) filteredRead(prog string, args []string, fs []filter) Result {
	format := "terminal/" + prog + "-pipeline"
	s, why := parseRead(prog, args)
	if why != "" {
		return event(format, why)
	}
	if len(s.files) != 1 {
		return event(format, "a pipeline over several files")
	}
	path := t.resolve(s.files[0])
	file, ok := t.r.lines(path)
	if !ok {
		return event(format, "the file cannot be read now")
	}
	context, windows := false, true
	for _, f := range fs {
		if f.numbers {
			return event(format, "grep -n numbers the stream, not the file")
		}
		context = context || f.context
		windows = windows && f.window
	}
	a, b := s.want.window(len(file))
	lines, ends := splitOutput(t.out)
	var groups [][]string
	switch {
	case windows:
		groups = [][]string{lines} // head/tail/sed of a window: one run
	case context:
		groups = splitGroups(lines)
	default:
		for _, l := range lines {
			groups = append(groups, []string{l})
		}
	}
	var shown [][]string
	for _, g := range groups {
		if s.numbered {
			var texts []string
			for _, l := range g {
				_, text, ok := numbered(l, true, t.screen)
				if !ok {
					return event(format, "a line that is not numbered")
				}
				texts = append(texts, text)
			}
			g = texts
		}
		shown = append(shown, g)
	}
	starts, why := place(file, a, b, shown, t.screen)
	if why != "" {
		return event(format, why)
	}
	var parts []Part
	for i, g := range shown {
		parts = append(parts, Part{Path: path, Start: starts[i], End: starts[i] + len(g) - 1,
			Text: join(file[starts[i]-1 : starts[i]-1+len(g)])})
	}
	if len(parts) == 0 {
		return event(format, "nothing shown")
	}
	numberedOut, pr := s.numbered, t.printer()
	render := func(ps []Part) string {
		var out []string
		for i, p := range ps {
			if context && i > 0 {
				out = append(out, "--")
			}
			out = append(out, decorate(p, numberedOut)...)
		}
		return pr.render(out, ends)
	}
	if render(parts) != t.render(lines, ends) {
		return event(format, "the file now does not show the output")
	}
	return Result{Kind: KindRead, Format: format, Parts: parts, render: render}
}

// splitGroups splits lines at grep's "--" group separators.
func splitGroups(lines []string) [][]string {
	var out [][]string
	cur := []string{}
	for _, l := range lines {
		if l == "--" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = []string{}
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// place finds where each group of shown lines sits in file lines a..b:
// groups in order, each a run of consecutive lines. The placement must be
// unique: the earliest and the latest placement agree.
func place(file []string, a, b int, groups [][]string, screen bool) ([]int, string) {
	n := len(groups)
	if n == 0 {
		return nil, ""
	}
	total := 0
	for _, g := range groups {
		total += len(g)
	}
	if len(file)*total > 1<<24 {
		return nil, "too many lines to place" // each placement scans the file
	}
	if b > len(file) {
		b = len(file)
	}
	fits := func(start int, g []string, first bool) bool {
		if start < a || start+len(g)-1 > b {
			return false
		}
		for k, s := range g {
			f := file[start-1+k]
			if !sameShown(f, s, screen) && !(first && k == 0 && screen && strings.TrimSpace(f) == strings.TrimSpace(s)) {
				return false
			}
		}
		return true
	}
	early := make([]int, n)
	next := a
	for i, g := range groups {
		s := next
		for ; s <= b && !fits(s, g, i == 0); s++ {
		}
		if s > b {
			return nil, "a line that is not in the file (it changed since, or a filter rewrote it)"
		}
		early[i], next = s, s+len(g)
	}
	last := b
	for i := n - 1; i >= 0; i-- {
		g := groups[i]
		s := last - len(g) + 1
		for ; s >= a && !fits(s, g, i == 0); s-- {
		}
		if s != early[i] {
			return nil, "lines the file holds in more than one place (line " + strconv.Itoa(early[i]) + " or " + strconv.Itoa(s) + ")"
		}
		last = s - 1
	}
	return early, ""
}
