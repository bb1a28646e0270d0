// Package query defines query sources (docs/protocol.md, "Query sources"):
// a tool result that is a function of many files (grep -l, find | grep,
// ls -R), named by the command that makes it. A query source's id is
//
//	query:///abs/cwd?run=grep&arg=-rl&arg=TODO&arg=src&run=head&arg=-n5
//
// the directory it runs in and its pipeline: each run= starts a stage with
// its program, each arg= appends an argument to it. Its content is the
// pipeline's standard output without its final newline.
//
// Only allowlisted read-only programs and options are accepted (Check):
// the command is re-run without a shell whenever its scope changes, so
// nothing in it may write, execute, follow a symlink out of the tree, or
// read a file that is not one of its operands.
package query

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Scheme is the URI scheme of query sources.
const Scheme = "query"

// ErrRefused is a command outside the allowlist.
var ErrRefused = errors.New("not an allowlisted read-only query")

// Spec is a parsed query source.
type Spec struct {
	Cwd    string     // absolute, clean
	Stages [][]string // argv per pipeline stage; stage 0 reads files, the others filter
	Sorted bool       // the output's lines are sorted bytewise (rg's order varies between runs)
	Screen bool       // the output as a terminal screen shows it (Text)
}

// Scope is what a query reads: the paths it names (absolute, clean) and
// whether it descends into directories.
type Scope struct {
	Paths     []string
	Recursive bool
}

// URI is the canonical id of s (Check it first).
func (s Spec) URI() string {
	var b strings.Builder
	b.WriteString((&url.URL{Scheme: Scheme, Path: filepath.ToSlash(s.Cwd)}).String())
	if !strings.Contains(b.String(), ":///") { // url.URL writes query:/x without a host
		b.Reset()
		b.WriteString(Scheme + "://" + (&url.URL{Path: filepath.ToSlash(s.Cwd)}).EscapedPath())
	}
	sep := "?"
	for _, st := range s.Stages {
		for i, a := range st {
			k := "arg="
			if i == 0 {
				k = "run="
			}
			b.WriteString(sep + k + escape(a))
			sep = "&"
		}
	}
	if s.Sorted {
		b.WriteString("&sorted=1")
	}
	if s.Screen {
		b.WriteString("&screen=1")
	}
	return b.String()
}

// Command is the pipeline as a shell command line, for people (notices):
// arguments with anything but safe characters single-quoted.
func (s Spec) Command() string {
	var st []string
	for _, argv := range s.Stages {
		ws := make([]string, len(argv))
		for i, a := range argv {
			ws[i] = shellQuote(a)
		}
		st = append(st, strings.Join(ws, " "))
	}
	return strings.Join(st, " | ")
}

func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// escape percent-encodes what would change the query's meaning and keeps
// the rest of an argument readable.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("%&=#+?", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Parse reads a query URI (not yet checked against the allowlist: Check).
func Parse(uri string) (Spec, error) {
	rest, ok := strings.CutPrefix(uri, Scheme+"://")
	if !ok {
		return Spec{}, fmt.Errorf("%q: want %s:///abs/dir?run=PROG&arg=ARG", uri, Scheme)
	}
	path, q, _ := strings.Cut(rest, "?")
	if strings.ContainsRune(path, '#') || strings.ContainsRune(q, '#') {
		return Spec{}, fmt.Errorf("%q: a '#' must be percent-encoded", uri)
	}
	cwd, err := parseDir(path)
	if err != nil {
		return Spec{}, fmt.Errorf("%q: %w", uri, err)
	}
	s := Spec{Cwd: cwd}
	for _, kv := range strings.Split(q, "&") {
		if kv == "" {
			continue
		}
		if err := s.param(kv); err != nil {
			return Spec{}, fmt.Errorf("%q: %w", uri, err)
		}
	}
	if len(s.Stages) == 0 {
		return Spec{}, fmt.Errorf("%q: no run= stage", uri)
	}
	return s, nil
}

// parseDir reads the URI's path: a local, absolute, clean directory.
func parseDir(path string) (string, error) {
	if path != "" && !strings.HasPrefix(path, "/") {
		return "", errors.New("remote hosts are not served")
	}
	cwd, err := url.PathUnescape(path)
	if err != nil {
		return "", err
	}
	if cwd == "" || !filepath.IsAbs(cwd) || strings.IndexByte(cwd, 0) >= 0 {
		return "", errors.New("the directory must be absolute")
	}
	return filepath.Clean(cwd), nil
}

// param applies one key=value of the query string, in order: run= opens a
// stage, arg= extends the last one, sorted=1 and screen=1 come last.
func (s *Spec) param(kv string) error {
	k, raw, _ := strings.Cut(kv, "=")
	v, err := url.PathUnescape(raw)
	if err != nil {
		return fmt.Errorf("parameter %q: %w", k, err)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return errors.New("NUL in an argument")
	}
	tail := s.Sorted || s.Screen
	switch k {
	case "run":
		if tail {
			return errors.New("sorted and screen come last")
		}
		s.Stages = append(s.Stages, []string{v})
	case "arg":
		if len(s.Stages) == 0 || tail {
			return errors.New("arg= before any run=")
		}
		s.Stages[len(s.Stages)-1] = append(s.Stages[len(s.Stages)-1], v)
	case "sorted":
		if v != "1" || s.Sorted {
			return errors.New("sorted must be 1, once")
		}
		s.Sorted = true
	case "screen":
		if v != "1" || s.Screen {
			return errors.New("screen must be 1, once")
		}
		s.Screen = true
	default:
		return fmt.Errorf("unknown parameter %q (want run, arg, sorted, screen)", k)
	}
	return nil
}

// Text is a query's content given its output: the output without its
// final newline, its lines sorted bytewise when s.Sorted, and as a
// terminal screen shows it when s.Screen (tabs expanded to 8 columns,
// trailing blanks dropped, the whole stripped), as OpenHands shows the
// model its terminal. The recognizer and the adapter both use it, so the
// text registered is the text a re-run gives while nothing changed.
func (s Spec) Text(out string) string {
	out = strings.TrimSuffix(out, "\n")
	if !s.Sorted && !s.Screen {
		return out
	}
	lines := strings.Split(out, "\n")
	if s.Sorted {
		slices.Sort(lines)
	}
	if s.Screen {
		for i, l := range lines {
			lines[i] = ScreenLine(l)
		}
		return strings.TrimSpace(strings.Join(lines, "\n"))
	}
	return strings.Join(lines, "\n")
}

// ScreenLine is a line as a terminal pane shows it: tabs expanded to 8
// columns, trailing blanks dropped. OpenHands' terminal shows the model the
// tmux screen, then strips the whole output; the recognizer compares lines
// shown that way with the file's.
func ScreenLine(s string) string {
	if strings.IndexByte(s, '\t') >= 0 {
		var b strings.Builder
		col := 0
		for _, c := range s {
			if c == '\t' {
				n := 8 - col%8
				b.WriteString(strings.Repeat(" ", n))
				col += n
				continue
			}
			b.WriteRune(c)
			col++
		}
		s = b.String()
	}
	return strings.TrimRight(s, " \t")
}

// LookPath finds prog in PATH as a shell would, skipping relative PATH
// entries (a "." in PATH must not make a file of the workspace the program
// run). The recognizer asks it too: a query whose program is not installed
// here would be flagged on its first run, so it stays an event.
func LookPath(prog string) (string, error) {
	if prog == "" || filepath.Base(prog) != prog {
		return "", fmt.Errorf("%q: a program name, not a path", prog)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", prog)
}

// Check accepts only an allowlisted pipeline: a first stage of grep, rg,
// find or ls over named paths, then line filters (grep, head, tail, sort,
// uniq) reading their standard input. It returns the scope the first stage
// reads. Relative operands resolve against s.Cwd.
func (s Spec) Check() (Scope, error) {
	if len(s.Stages) == 0 || len(s.Stages) > maxStages {
		return Scope{}, fmt.Errorf("%w: want 1 to %d stages", ErrRefused, maxStages)
	}
	var sc Scope
	var err error
	first := s.Stages[0]
	switch first[0] {
	case "grep":
		sc, err = checkGrep(first[1:], false)
	case "rg":
		sc, err = checkGrep(first[1:], true)
	case "find":
		sc, err = checkFindStage(first)
	case "ls":
		sc, err = checkLs(first[1:])
	case "cat", "head", "tail":
		sc, err = checkRead(first[0], first[1:])
	default:
		err = fmt.Errorf("%w: program %q (want grep, rg, find, ls, cat, head or tail)", ErrRefused, first[0])
	}
	if err != nil {
		return Scope{}, err
	}
	names := firstNames(first)
	for _, st := range s.Stages[1:] {
		if err := checkFilter(st, names); err != nil {
			return Scope{}, err
		}
		if g, ok := Xargs(st); ok {
			names = g.Names
		} else {
			names = names && keepsNames(st)
		}
	}
	for i, p := range sc.Paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.Cwd, p)
		}
		sc.Paths[i] = filepath.Clean(p)
	}
	return sc, nil
}

const maxStages = 8

// Options of grep that change nothing but which lines and how they print.
// Left out on purpose: -R/--dereference-recursive (follows symlinks out of
// the tree), -f/--file and --exclude-from (read other files), -d/-D
// (device and directory actions), --color (escape codes).
var (
	grepLetters = "iwxFEGPsIvUanHhlLcoTyrZz"
	grepValued  = map[string]bool{"-e": true, "-m": true, "-A": true, "-B": true, "-C": true}
	grepLong    = map[string]bool{"--recursive": true, "--files-with-matches": true, "--files-without-match": true,
		"--count": true, "--ignore-case": true, "--no-ignore-case": true, "--word-regexp": true, "--line-regexp": true,
		"--fixed-strings": true, "--extended-regexp": true, "--basic-regexp": true, "--perl-regexp": true,
		"--invert-match": true, "--no-messages": true, "--with-filename": true, "--no-filename": true,
		"--line-number": true, "--only-matching": true, "--text": true, "--null": true, "--null-data": true,
		"--initial-tab": true, "--binary": true}
	grepLongValued = map[string]bool{"--regexp": true, "--max-count": true, "--include": true, "--exclude": true,
		"--exclude-dir": true, "--after-context": true, "--before-context": true, "--context": true, "--binary-files": true}
	// rg: -L/--follow left out (symlinks), --pre (runs a program), -f/--file,
	// --ignore-file, -z/--search-zip (runs decompressors), --type-add.
	rgLetters = "iwFSsnNHlcouUvx."
	rgValued  = map[string]bool{"-e": true, "-m": true, "-A": true, "-B": true, "-C": true, "-g": true, "-t": true, "-T": true}
	rgLong    = map[string]bool{"--files-with-matches": true, "--files-without-match": true, "--count": true,
		"--ignore-case": true, "--smart-case": true, "--case-sensitive": true, "--word-regexp": true,
		"--line-regexp": true, "--fixed-strings": true, "--invert-match": true, "--line-number": true,
		"--no-line-number": true, "--with-filename": true, "--no-filename": true, "--no-heading": true,
		"--heading": true, "--hidden": true, "--no-ignore": true, "--files": true, "--only-matching": true,
		"--no-messages": true, "--unrestricted": true}
	rgLongValued = map[string]bool{"--regexp": true, "--max-count": true, "--glob": true, "--iglob": true,
		"--type": true, "--type-not": true, "--after-context": true, "--before-context": true, "--context": true,
		"--sort": true, "--max-depth": true}
)

// grepArgs is what checkGrep has learned of a grep or rg command line.
type grepArgs struct {
	prog, letters            string
	rg                       bool
	valued, long, longValued map[string]bool
	sc                       Scope
	pattern, files           bool // -e/--regexp gave the pattern; rg --files takes none
}

// checkGrep reads grep or rg arguments: options from the allowlist, the
// pattern (the first operand unless -e gave one), then the paths.
func checkGrep(args []string, rg bool) (Scope, error) {
	g := grepArgs{prog: "grep", letters: grepLetters, valued: grepValued, long: grepLong, longValued: grepLongValued}
	if rg {
		g = grepArgs{prog: "rg", letters: rgLetters, rg: true, valued: rgValued, long: rgLong, longValued: rgLongValued}
	}
	g.sc.Recursive = rg
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var err error
		switch {
		case a == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case a == "-" || !strings.HasPrefix(a, "-"):
			ops = append(ops, a)
		case strings.HasPrefix(a, "--"):
			i, err = g.longOption(args, i)
		case g.valued[a]:
			if i+1 >= len(args) {
				return Scope{}, fmt.Errorf("%w: %s %s without its value", ErrRefused, g.prog, a)
			}
			g.pattern = g.pattern || a == "-e"
			i++
		default:
			i, err = g.shortOptions(args, i)
		}
		if err != nil {
			return Scope{}, err
		}
	}
	return g.paths(ops)
}

// longOption reads args[i], a --name or --name=value option; it returns
// the index of the last argument it used.
func (g *grepArgs) longOption(args []string, i int) (int, error) {
	name, _, has := strings.Cut(args[i], "=")
	switch {
	case g.long[name] && !has:
		g.sc.Recursive = g.sc.Recursive || name == "--recursive"
		g.files = g.files || name == "--files"
	case g.longValued[name] && has:
		g.pattern = g.pattern || name == "--regexp"
	case g.longValued[name] && i+1 < len(args):
		g.pattern = g.pattern || name == "--regexp"
		i++
	default:
		return i, fmt.Errorf("%w: %s option %q", ErrRefused, g.prog, args[i])
	}
	return i, nil
}

// shortOptions reads args[i], a word of single-letter options (-rn, -A3,
// -e PAT); it returns the index of the last argument it used.
func (g *grepArgs) shortOptions(args []string, i int) (int, error) {
	a := args[i]
	for j := 1; j < len(a); j++ {
		c := a[j]
		if g.valued["-"+string(c)] {
			// The rest of the word, or the next argument, is the value.
			if j+1 == len(a) {
				if i+1 >= len(args) {
					return i, fmt.Errorf("%w: %s -%c without its value", ErrRefused, g.prog, c)
				}
				i++
			}
			g.pattern = g.pattern || c == 'e'
			break
		}
		if c >= '0' && c <= '9' && !g.rg {
			continue // -5: context lines
		}
		if strings.IndexByte(g.letters, c) < 0 {
			return i, fmt.Errorf("%w: %s option -%c in %q", ErrRefused, g.prog, c, a)
		}
		if c == 'r' && !g.rg {
			g.sc.Recursive = true
		}
	}
	return i, nil
}

// paths takes the pattern off the operands (unless an option gave it) and
// returns the scope: the paths searched, "." for a recursive search of none.
func (g *grepArgs) paths(ops []string) (Scope, error) {
	if !g.pattern && !g.files {
		if len(ops) == 0 {
			return Scope{}, fmt.Errorf("%w: %s without a pattern", ErrRefused, g.prog)
		}
		ops = ops[1:]
	}
	for _, op := range ops {
		if op == "-" {
			return Scope{}, fmt.Errorf("%w: %s of its standard input", ErrRefused, g.prog)
		}
	}
	if len(ops) == 0 {
		if !g.sc.Recursive {
			return Scope{}, fmt.Errorf("%w: %s of its standard input", ErrRefused, g.prog)
		}
		ops = []string{"."}
	}
	g.sc.Paths = ops
	return g.sc, nil
}

// find's primaries that only test names, types and depths. Left out:
// -exec, -execdir, -ok, -okdir (run programs), -delete, -fprint, -fprint0,
// -fprintf, -fls (write files), -L, -H, -follow (follow symlinks), -newer
// and friends (read other files), -mtime, -mmin, -atime, -amin, -used
// (their answer moves with the clock, not with the files).
var (
	findTests  = map[string]bool{"-print": true, "-print0": true, "-prune": true, "-empty": true, "-true": true, "-false": true, "-not": true, "!": true, "-o": true, "-or": true, "-a": true, "-and": true, "(": true, ")": true, ",": true, "-readable": true, "-writable": true, "-executable": true, "-depth": true, "-xdev": true, "-mount": true, "-nowarn": true, "-warn": true, "-quit": true, "-ls": true}
	findValued = map[string]bool{"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true, "-regex": true, "-iregex": true, "-type": true, "-xtype": true, "-maxdepth": true, "-mindepth": true, "-size": true, "-perm": true, "-regextype": true, "-links": true, "-user": true, "-group": true, "-uid": true, "-gid": true, "-inum": true, "-lname": true, "-ilname": true, "-samefile": false}
)

// checkFindStage accepts a find whose expression is allowlisted and, at
// its end only, one `-exec grep … {} ;` or `{} +` (the server runs the
// grep itself: FindExec). With -exec, find prints nothing else.
func checkFindStage(argv []string) (Scope, error) {
	if !slices.Contains(argv, "-exec") {
		return checkFind(argv[1:])
	}
	find, g, ok := FindExec(argv)
	if !ok {
		return Scope{}, fmt.Errorf("%w: find -exec other than `-exec grep … {} ;` or `{} +` at the end", ErrRefused)
	}
	for _, a := range find[1 : len(find)-1] {
		if a == "-print" || a == "-print0" || a == "-ls" || a == "-exec" {
			return Scope{}, fmt.Errorf("%w: find %s with -exec (two outputs)", ErrRefused, a)
		}
	}
	if err := checkExecGrep("find -exec", g.Argv); err != nil {
		return Scope{}, err
	}
	return checkFind(find[1:])
}

func checkFind(args []string) (Scope, error) {
	sc := Scope{Recursive: true}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "-P" {
			continue // the default: never follow symlinks
		}
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == "," {
			break
		}
		sc.Paths = append(sc.Paths, a)
	}
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case findTests[a]:
		case findValued[a]:
			if i+1 >= len(args) {
				return Scope{}, fmt.Errorf("%w: find %s without its value", ErrRefused, a)
			}
			i++
		default:
			return Scope{}, fmt.Errorf("%w: find %q", ErrRefused, a)
		}
	}
	if len(sc.Paths) == 0 {
		sc.Paths = []string{"."}
	}
	return sc, nil
}

// ls options that choose entries and their order or shape. Left out: -L
// (follows symlinks), --color, --hyperlink, -D, and the time-style options.
const lsLetters = "aA1lpFhRrtSdiGgnosUvXx"

func checkLs(args []string) (Scope, error) {
	var sc Scope
	dash := false
	for _, a := range args {
		if !dash && a == "--" {
			dash = true
			continue
		}
		if !dash && strings.HasPrefix(a, "-") && len(a) > 1 {
			if strings.HasPrefix(a, "--") || strings.Trim(a[1:], lsLetters) != "" {
				return Scope{}, fmt.Errorf("%w: ls option %q", ErrRefused, a)
			}
			if strings.Contains(a, "R") {
				sc.Recursive = true
			}
			continue
		}
		sc.Paths = append(sc.Paths, a)
	}
	if len(sc.Paths) == 0 {
		sc.Paths = []string{"."}
	}
	return sc, nil
}

// checkRead accepts cat, head and tail of named files (a pipeline over
// them: cat a b | grep x). Left out: tail -f/-F (never ends), cat's and
// head's long options.
func checkRead(prog string, args []string) (Scope, error) {
	var sc Scope
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			sc.Paths = append(sc.Paths, args[i+1:]...)
			i = len(args)
		case a == "-":
			return Scope{}, fmt.Errorf("%w: %s of its standard input", ErrRefused, prog)
		case !strings.HasPrefix(a, "-"):
			sc.Paths = append(sc.Paths, a)
		case prog == "cat" && strings.Trim(a[1:], "nbsAETv") == "":
		case prog != "cat" && (a == "-n" || a == "-c") && i+1 < len(args) && isCount(args[i+1]):
			i++
		case prog != "cat" && len(a) > 2 && (a[1] == 'n' || a[1] == 'c') && isCount(a[2:]):
		case prog != "cat" && isCount(a[1:]):
		case prog != "cat" && (a == "-q" || a == "-v"):
		default:
			return Scope{}, fmt.Errorf("%w: %s option %q", ErrRefused, prog, a)
		}
	}
	if len(sc.Paths) == 0 {
		return Scope{}, fmt.Errorf("%w: %s of its standard input", ErrRefused, prog)
	}
	return sc, nil
}

// checkFilter accepts a line filter that reads only its standard input,
// or an xargs grep over the file names the stages before it printed
// (names: the first stage prints names and every filter since kept them).
func checkFilter(st []string, names bool) error {
	args := st[1:]
	switch st[0] {
	case "grep":
		return checkStdinGrep("grep filter", args)
	case "xargs":
		g, ok := Xargs(st)
		if !ok {
			return fmt.Errorf("%w: xargs %q (want xargs [-0] [-r] grep …)", ErrRefused, args)
		}
		if !names {
			return fmt.Errorf("%w: xargs over lines that are not the file names of the first stage", ErrRefused)
		}
		return checkExecGrep("xargs", g.Argv)
	case "head", "tail":
		switch {
		case len(args) == 0:
			return nil
		case len(args) == 1 && isCount(strings.TrimPrefix(args[0], "-n")) && strings.HasPrefix(args[0], "-"):
			return nil
		case len(args) == 1 && strings.HasPrefix(args[0], "-") && isCount(args[0][1:]):
			return nil
		case len(args) == 2 && args[0] == "-n" && isCount(args[1]):
			return nil
		}
		return fmt.Errorf("%w: %s %q (want -n N)", ErrRefused, st[0], args)
	case "sort", "uniq":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") || strings.Trim(a[1:], "rufnVc") != "" || a == "-" {
				return fmt.Errorf("%w: %s %q", ErrRefused, st[0], a)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: filter %q (want grep, head, tail, sort or uniq over the stream)", ErrRefused, st[0])
}

func isCount(s string) bool {
	s = strings.TrimPrefix(s, "+")
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && s != "" && s[0] != '-' && s[0] != '+'
}
