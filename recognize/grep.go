package recognize

import (
	"strconv"
	"strings"
)

// grepSpec is a parsed grep or rg command.
type grepSpec struct {
	rg        bool
	operands  []string
	numbers   bool // -n: N: / N- before each line
	noNumbers bool // rg -N
	recursive bool
	context   bool // -A/-B/-C: groups split by "--", context lines N-text
	names     bool // -l/-L: file names only
	count     bool // -c
	only      bool // -o: parts of lines
	withFile  bool // -H
	noFile    bool // -h
	noHeading bool // rg --no-heading
	heading   bool // rg --heading
}

// grep's and rg's flags that change neither the shape of a line nor which
// file it comes from.
const (
	grepLetters = "iwxFEGPsIvaUrRnHhlLcoqT"
	rgLetters   = "iwFSsnNHlco.uUvx"
)

var grepValued = map[string]bool{"-e": true, "-m": true, "--regexp": true, "--max-count": true,
	"--include": true, "--exclude": true, "--exclude-dir": true, "-g": true, "--glob": true, "-t": true,
	"--type": true, "-T": true, "--type-not": true, "-A": true, "-B": true, "-C": true}

// parseGrepArgs reads grep (or rg) arguments; ok false for an option it
// does not know (it might change what a line is) or without a pattern.
func parseGrepArgs(args []string, rg bool) (grepSpec, bool) {
	g := grepSpec{rg: rg, recursive: rg}
	pattern := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		var next int
		var ok, pat bool
		switch {
		case a == "--":
			rest := args[i+1:]
			if !pattern && len(rest) > 0 {
				rest, pattern = rest[1:], true
			}
			g.operands = append(g.operands, rest...)
			return g, pattern
		case !strings.HasPrefix(a, "-") || a == "-":
			if pattern {
				g.operands = append(g.operands, a)
			}
			pattern = true
			continue
		case strings.HasPrefix(a, "--"):
			next, pat, ok = g.long(args, i)
		case grepValued[a]:
			next, pat, ok = g.valued(args, i)
		default:
			next, pat, ok = g.cluster(args, i)
		}
		if !ok {
			return g, false
		}
		i, pattern = next, pattern || pat
	}
	return g, pattern
}

// long reads a --name[=value] option at args[i]; it returns the index of
// its last argument and whether it gave the pattern.
func (g *grepSpec) long(args []string, i int) (int, bool, bool) {
	name, _, hasValue := strings.Cut(args[i], "=")
	switch {
	case grepValued[name] && !hasValue:
		return i + 1, name == "--regexp", i+1 < len(args)
	case hasValue && (grepValued[name] || strings.HasSuffix(name, "context") || name == "--color" || name == "--colour"):
		g.context = g.context || strings.Contains(name, "context")
		return i, name == "--regexp", true
	}
	return i, false, g.longFlag(name)
}

// valued reads an option that takes the next argument (-e PAT, -A N).
func (g *grepSpec) valued(args []string, i int) (int, bool, bool) {
	a := args[i]
	if i+1 >= len(args) {
		return i, false, false
	}
	if a == "-A" || a == "-B" || a == "-C" {
		if _, ok := atoi(args[i+1]); !ok {
			return i, false, false
		}
		g.context = true
	}
	return i + 1, a == "-e", true
}

// cluster reads a cluster of letters, perhaps ending in -A/-B/-C/-e/-m and
// its value (-rnC2, -rne PAT).
func (g *grepSpec) cluster(args []string, i int) (int, bool, bool) {
	body := args[i][1:]
	if isDigits(body) && !g.rg {
		g.context = true // GNU grep: -NUM is -C NUM
		return i, false, true
	}
	pattern := false
	if k := strings.IndexAny(body, "ABCem"); k >= 0 {
		val := body[k+1:]
		if val == "" {
			if i+1 >= len(args) {
				return i, false, false
			}
			i++
			val = args[i]
		}
		switch body[k] {
		case 'e':
			pattern = true
		case 'm':
		default:
			if _, ok := atoi(val); !ok {
				return i, false, false
			}
			g.context = true
		}
		body = body[:k]
	}
	letters := grepLetters
	if g.rg {
		letters = rgLetters
	}
	for _, c := range body {
		if !strings.ContainsRune(letters, c) {
			return i, false, false
		}
		g.letter(c)
	}
	return i, pattern, true
}

func (g *grepSpec) letter(c rune) {
	switch c {
	case 'n':
		g.numbers = true
	case 'N':
		g.noNumbers = true
	case 'r', 'R':
		g.recursive = true
	case 'H':
		g.withFile = true
	case 'h':
		g.noFile = true
	case 'l', 'L':
		g.names = true
	case 'c':
		g.count = true
	case 'o':
		g.only = true
	case 'q':
		g.count = true // nothing shown
	case 'T':
		g.only = true // initial tabs change the line
	}
}

func (g *grepSpec) longFlag(name string) bool {
	switch name {
	case "--line-number":
		g.numbers = true
	case "--no-line-number":
		g.noNumbers = true
	case "--recursive", "--dereference-recursive":
		g.recursive = true
	case "--with-filename":
		g.withFile = true
	case "--no-filename":
		g.noFile = true
	case "--files-with-matches", "--files-without-match", "--files":
		g.names = true
	case "--count":
		g.count = true
	case "--only-matching":
		g.only = true
	case "--no-heading":
		g.noHeading = true
	case "--heading":
		g.heading = true
	case "--ignore-case", "--word-regexp", "--line-regexp", "--fixed-strings", "--extended-regexp",
		"--basic-regexp", "--perl-regexp", "--no-messages", "--invert-match", "--text", "--binary-files",
		"--hidden", "--no-ignore", "--smart-case", "--case-sensitive", "--color", "--colour", "--no-config":
	default:
		return false
	}
	return true
}

// hitGroup is a run of consecutive lines of one file the search printed.
type hitGroup struct {
	path  string // absolute
	shown string // the file name as printed ("" when none)
	start int    // first line; 0 until placed
	seps  []byte // per line: ':' a match, '-' a context line
	texts []string
	dash  bool // a "--" separator printed before this group
}

// grep recognizes grep/rg output; fs are the filters it went through.
func (t term) grep(prog string, args []string, fs []filter) Result {
	format := "terminal/" + prog
	if len(fs) > 0 {
		format += "-pipeline"
	}
	g, ok := parseGrepArgs(args, prog == "rg")
	switch {
	case !ok:
		return event(format, "a "+prog+" option that changes what a line shows")
	case g.names || g.count:
		return t.query(format+"-l", "file names or counts")
	case g.only:
		return event(format, "parts of lines")
	case len(g.operands) == 0 && !g.recursive:
		return event(format, "grep of its standard input")
	case len(g.operands) == 0:
		g.operands = []string{"."}
	}
	sh := t.shape(g, len(fs) > 0)
	if g.noFile && !sh.single {
		return event(format, "several files without their names")
	}
	lines, ends := splitOutput(t.out)
	if len(lines) == 0 {
		return event(format, "no hits")
	}
	// head can cut grep's output right after a group separator.
	trailing := sh.filtered && g.context && len(lines) > 1 && lines[len(lines)-1] == "--"
	if trailing {
		lines = lines[:len(lines)-1]
	}
	groups, why := t.hitGroups(lines, g, sh)
	if why != "" {
		return event(format, why)
	}
	parts := make([]Part, len(groups))
	for i, gr := range groups {
		parts[i] = Part{Path: gr.path, Start: gr.start, End: gr.start + len(gr.texts) - 1, Text: join(gr.texts)}
	}
	// The renderer keeps the groups' shape, not their text (the parts hold it).
	shapes := make([]*hitGroup, len(groups))
	for i, gr := range groups {
		shapes[i] = &hitGroup{path: gr.path, shown: gr.shown, seps: gr.seps, dash: gr.dash}
	}
	numbers, heading, pr := sh.numbers, sh.heading, t.printer()
	render := func(ps []Part) string {
		out := renderHits(shapes, ps, numbers, heading)
		if trailing {
			out = append(out, "--")
		}
		return pr.render(out, ends)
	}
	if render(parts) != t.out && (!t.screen || render(parts) != t.render(mustLines(t.out), ends)) {
		return event(format, "the hits do not print back as the output")
	}
	return Result{Kind: KindRead, Format: format, Parts: parts, render: render}
}

// grepShape is how a search prints its lines.
type grepShape struct {
	numbers  bool // N: before each line
	single   bool // one file: no file names
	heading  bool // rg's terminal format: a file name line, then its lines
	filtered bool // piped through line filters: groups may be cut
}

func (t term) shape(g grepSpec, filtered bool) grepShape {
	sh := grepShape{filtered: filtered}
	sh.numbers = g.numbers || g.rg && t.screen && !g.noNumbers // rg numbers lines on a terminal
	sh.single = len(g.operands) == 1 && !g.withFile && !t.r.isDir(t.resolve(g.operands[0]))
	sh.heading = g.rg && !sh.single && !g.noHeading && (t.screen || g.heading)
	return sh
}

// hitGroups reads the output's lines into placed groups.
func (t term) hitGroups(lines []string, g grepSpec, sh grepShape) ([]*hitGroup, string) {
	var groups []*hitGroup
	var why string
	if sh.heading {
		groups, why = t.headingGroups(lines, sh.numbers, g.context, sh.filtered)
	} else {
		groups, why = t.lineGroups(lines, g, sh.numbers, sh.single, sh.filtered)
	}
	if why != "" {
		return nil, why
	}
	if why := t.settle(groups, sh.numbers); why != "" {
		return nil, why
	}
	if !sh.filtered && g.context {
		for _, gr := range groups {
			if !strings.ContainsRune(string(gr.seps), ':') {
				return nil, "a group without a match"
			}
		}
	}
	return groups, ""
}

// renderHits prints groups with the parts' current lines and text.
func renderHits(groups []*hitGroup, ps []Part, numbers, heading bool) []string {
	var out []string
	last := ""
	for i, gr := range groups {
		p := ps[i]
		if heading && gr.shown != last {
			if last != "" {
				out = append(out, "")
			}
			out = append(out, gr.shown)
			last = gr.shown
		} else if gr.dash {
			out = append(out, "--")
		}
		for k, text := range textLines(p) {
			sep := byte(':')
			if k < len(gr.seps) {
				sep = gr.seps[k]
			}
			var b strings.Builder
			if gr.shown != "" && !heading {
				b.WriteString(gr.shown)
				b.WriteByte(sep)
			}
			if numbers {
				b.WriteString(strconv.Itoa(p.Start + k))
				b.WriteByte(sep)
			}
			b.WriteString(text)
			out = append(out, b.String())
		}
	}
	return out
}

// lineGroups reads `[path:]N:text` lines (or `[path:]text` without -n),
// split into groups: by "--" under context, else one group a line.
func (t term) lineGroups(lines []string, g grepSpec, numbers, single, filtered bool) ([]*hitGroup, string) {
	var raw [][]string
	dash := []bool{}
	if g.context {
		cur := []string{}
		sep := false
		for _, l := range lines {
			if l == "--" {
				if len(cur) > 0 {
					raw, dash = append(raw, cur), append(dash, sep)
				}
				cur, sep = []string{}, true
				continue
			}
			cur = append(cur, l)
		}
		if len(cur) > 0 {
			raw, dash = append(raw, cur), append(dash, sep)
		}
	} else {
		for _, l := range lines {
			raw, dash = append(raw, []string{l}), append(dash, false)
		}
	}
	var out []*hitGroup
	for i, lines := range raw {
		var gs []*hitGroup
		var why string
		if single {
			gs, why = t.bareGroup(lines, t.resolve(g.operands[0]), numbers, filtered)
		} else {
			gs, why = t.pathGroup(lines, numbers, filtered)
		}
		if why != "" {
			return nil, why
		}
		gs[0].dash = dash[i]
		out = append(out, gs...)
	}
	return out, ""
}

// bareGroup is a group of one file's lines without a file name.
func (t term) bareGroup(lines []string, path string, numbers, filtered bool) ([]*hitGroup, string) {
	g := &hitGroup{path: path}
	var out []*hitGroup
	for _, l := range lines {
		sep, n, text := byte(':'), 0, l
		if numbers {
			var ok bool
			n, sep, text, ok = cutNumber(l)
			if !ok {
				return nil, "a line without its number"
			}
			if len(g.texts) > 0 && n != g.start+len(g.texts) {
				if !filtered {
					return nil, "numbers out of order in a group"
				}
				out, g = append(out, g), &hitGroup{path: path}
			}
			if len(g.texts) == 0 {
				g.start = n
			}
		}
		g.seps, g.texts = append(g.seps, sep), append(g.texts, text)
	}
	return append(out, g), ""
}

// cutNumber splits "N:text" or "N-text".
func cutNumber(l string) (int, byte, string, bool) {
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(l) || l[i] != ':' && l[i] != '-' {
		return 0, 0, "", false
	}
	n, ok := atoi(l[:i])
	return n, l[i], l[i+1:], ok && n > 0
}

// pathGroup is a group of `path:N:text` lines (or `path:text`), the same
// path on every line. The path may itself hold ":" or "-": each split of
// the first line is tried, and the one naming a file that every line of the
// group fits is taken (a file gone since: the only split there is).
func (t term) pathGroup(lines []string, numbers, filtered bool) ([]*hitGroup, string) {
	first := lines[0]
	var found, gone [][]*hitGroup
	for i := 1; i < len(first); i++ {
		if first[i] != ':' && first[i] != '-' {
			continue
		}
		gs, ok := t.splitAt(lines, first[:i], numbers, filtered)
		switch {
		case !ok:
		case t.r.isFile(gs[0].path):
			found = append(found, gs)
		default:
			gone = append(gone, gs)
		}
	}
	if len(found) > 1 {
		// Still two readings: the one whose lines the file holds now, if only one does.
		var holds [][]*hitGroup
		for _, gs := range found {
			if !numbers || t.holds(gs) {
				holds = append(holds, gs)
			}
		}
		found = holds
	}
	switch {
	case len(found) == 1:
		return found[0], ""
	case len(found) == 0 && len(gone) == 1 && numbers:
		return gone[0], ""
	}
	return nil, "a line whose file cannot be told"
}

// splitAt reads the group with shown as every line's file name.
func (t term) splitAt(lines []string, shown string, numbers, filtered bool) ([]*hitGroup, bool) {
	path := t.resolve(shown)
	if !t.r.isFile(path) && t.r.exists(path) {
		return nil, false
	}
	stripped := make([]string, 0, len(lines))
	for _, l := range lines {
		rest, cut := strings.CutPrefix(l, shown)
		if !cut || rest == "" || rest[0] != ':' && rest[0] != '-' {
			return nil, false
		}
		stripped = append(stripped, rest[1:])
	}
	var gs []*hitGroup
	if numbers {
		// the separator after the path repeats after the number
		var why string
		gs, why = t.bareGroup(stripped, path, true, filtered)
		if why != "" || !sepsAgree(lines, shown, gs) {
			return nil, false
		}
	} else {
		g := &hitGroup{path: path, texts: stripped}
		for _, l := range lines {
			g.seps = append(g.seps, l[len(shown)])
		}
		gs = []*hitGroup{g}
	}
	for _, g := range gs {
		g.shown = shown
	}
	return gs, true
}

func sepsAgree(lines []string, shown string, gs []*hitGroup) bool {
	k := 0
	for _, g := range gs {
		for _, s := range g.seps {
			if lines[k][len(shown)] != s {
				return false
			}
			k++
		}
	}
	return true
}

func (t term) holds(gs []*hitGroup) bool {
	for _, g := range gs {
		file, ok := t.r.lines(g.path)
		if !ok {
			return false
		}
		for k, text := range g.texts {
			n := g.start + k
			if n > len(file) || !sameShown(file[n-1], text, t.screen) {
				return false
			}
		}
	}
	return true
}

// headingGroups reads rg's terminal format: a path line, its N:text lines
// (with "--" between groups under context), a blank line, the next path.
func (t term) headingGroups(lines []string, numbers, context, filtered bool) ([]*hitGroup, string) {
	var out []*hitGroup
	for len(lines) > 0 {
		end := 0
		for end < len(lines) && lines[end] != "" {
			end++
		}
		sec := lines[:end]
		if end < len(lines) {
			lines = lines[end+1:]
		} else {
			lines = nil
		}
		if len(sec) < 2 {
			return nil, "a file heading without hits"
		}
		path := t.resolve(sec[0])
		if t.r.isDir(path) {
			return nil, "a heading that is a directory"
		}
		var raw [][]string
		if context {
			raw = splitGroups(sec[1:])
		} else {
			for _, l := range sec[1:] {
				raw = append(raw, []string{l})
			}
		}
		for i, r := range raw {
			gs, why := t.bareGroup(r, path, numbers, filtered)
			if why != "" {
				return nil, why
			}
			for _, g := range gs {
				g.shown = sec[0]
			}
			gs[0].dash = i > 0 && context
			out = append(out, gs...)
		}
	}
	return out, ""
}

// settle gives each group its lines: numbered groups keep their numbers
// and take the file's text where the file still shows it; groups without
// numbers are placed in their file by their text, uniquely.
func (t term) settle(groups []*hitGroup, numbers bool) string {
	if numbers {
		for _, g := range groups {
			file, ok := t.r.lines(g.path)
			if !ok {
				continue
			}
			for k, text := range g.texts {
				if n := g.start + k; n <= len(file) && sameShown(file[n-1], text, t.screen) {
					g.texts[k] = file[n-1]
				}
			}
		}
		return ""
	}
	// Groups of one file, in output order, are placed together: grep
	// prints a file's lines in order.
	for i := 0; i < len(groups); {
		j := i
		for j < len(groups) && groups[j].path == groups[i].path {
			j++
		}
		file, ok := t.r.lines(groups[i].path)
		if !ok {
			return "lines without numbers in a file that cannot be read now"
		}
		shown := make([][]string, 0, j-i)
		for _, g := range groups[i:j] {
			shown = append(shown, g.texts)
		}
		starts, why := place(file, 1, len(file), shown, t.screen)
		if why != "" {
			return why
		}
		for k, g := range groups[i:j] {
			g.start = starts[k]
			copy(g.texts, file[g.start-1:g.start-1+len(g.texts)])
		}
		i = j
	}
	return ""
}
