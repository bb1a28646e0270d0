package query

import (
	"fmt"
	"slices"
	"strings"
)

// GrepRun is grep run over file names another program produced: find's
// `-exec grep … {} ;` and `-exec grep … {} +`, and `xargs [-0] [-r] grep
// …`. The server never lets find or xargs start a program: it runs find
// without its -exec clause (printing the names, -print0, where the clause
// stood) or takes the stage's input, splits the names as xargs would, and
// starts grep itself with them (Batches).
type GrepRun struct {
	Argv    []string // grep, its options and its pattern; no file operand
	Each    bool     // `-exec … {} ;`: one grep per file
	Null    bool     // xargs -0: names end with NUL
	NoEmpty bool     // no grep at all without names (find's -exec; xargs -r)
	// Names: grep prints file names (-l, -L), so a later xargs grep may
	// read them.
	Names bool
}

// ArgMax is the size of a command line GNU xargs and find's `-exec … +`
// fill by default: the argv's bytes, each argument with its NUL, the
// command included (`xargs --show-limits`: "Size of command buffer we are
// actually using: 131072"; measured with findutils 4.9.0, both batch alike).
const ArgMax = 128 << 10

// FindExec splits a find stage ending in `-exec grep … {} ;|+` into find's
// arguments without the clause, with -print0 where it stood, and the grep
// it runs (its names come NUL-ended). ok is false for a find without
// -exec, or whose clause is not grep with {} last. The clause's shape is
// checked by Check, not here.
func FindExec(argv []string) (find []string, g GrepRun, ok bool) {
	if len(argv) == 0 || argv[0] != "find" {
		return nil, GrepRun{}, false
	}
	for i, a := range argv {
		if a != "-exec" {
			continue
		}
		clause := argv[i+1:]
		if len(clause) < 3 || clause[0] != "grep" {
			return nil, GrepRun{}, false
		}
		end := clause[len(clause)-1]
		if (end != ";" && end != "+") || clause[len(clause)-2] != "{}" {
			return nil, GrepRun{}, false
		}
		g := GrepRun{Argv: append([]string(nil), clause[:len(clause)-2]...), Each: end == ";", Null: true, NoEmpty: true}
		g.Names = grepNames(g.Argv[1:])
		find = append(append([]string(nil), argv[:i]...), "-print0")
		return find, g, true
	}
	return nil, GrepRun{}, false
}

// Xargs reads an `xargs [-0] [-r] grep …` stage; ok is false for anything
// else (Check says why).
func Xargs(argv []string) (GrepRun, bool) {
	if len(argv) < 2 || argv[0] != "xargs" {
		return GrepRun{}, false
	}
	var g GrepRun
	i := 1
	for ; i < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
		switch a := argv[i]; a {
		case "-0", "--null":
			g.Null = true
		case "-r", "--no-run-if-empty":
			g.NoEmpty = true
		case "-0r", "-r0":
			g.Null, g.NoEmpty = true, true
		default:
			return GrepRun{}, false
		}
	}
	if i >= len(argv) || argv[i] != "grep" {
		return GrepRun{}, false
	}
	g.Argv = append([]string(nil), argv[i:]...)
	g.Names = grepNames(g.Argv[1:])
	return g, true
}

// checkExecGrep accepts the grep a find -exec or an xargs runs: grep's
// allowlist, a pattern, no file operand of its own (it reads the names it
// is given) and no -r (find and the names say what it reads).
func checkExecGrep(who string, argv []string) error {
	if len(argv) == 0 || argv[0] != "grep" {
		return fmt.Errorf("%w: %s may run only grep", ErrRefused, who)
	}
	for _, a := range argv[1:] {
		if a == "{}" {
			return fmt.Errorf("%w: %s: {} other than the last argument", ErrRefused, who)
		}
	}
	return checkStdinGrep(who+" grep", argv[1:])
}

// checkStdinGrep accepts grep arguments that name no file: grep's
// allowlist with a pattern, and no recursion.
func checkStdinGrep(what string, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && (strings.ContainsAny(a, "rR") && !strings.HasPrefix(a, "--") || a == "--recursive" || a == "--dereference-recursive") {
			return fmt.Errorf("%w: %s %q", ErrRefused, what, a)
		}
	}
	sc, err := checkGrep(args, false)
	if err == nil {
		return fmt.Errorf("%w: %s with file operands %q", ErrRefused, what, sc.Paths)
	}
	if !strings.Contains(err.Error(), "standard input") {
		return err
	}
	return nil
}

// grepFlags lists grep's (allowlisted) options: the letters of its short
// options and the names of its long ones, values left out (-e -A is a
// pattern, not context).
func grepFlags(args []string) (letters string, long []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return letters, long
		case strings.HasPrefix(a, "--"):
			name, _, has := strings.Cut(a, "=")
			long = append(long, name)
			if grepLongValued[name] && !has {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				letters += string(a[j])
				if grepValued["-"+string(a[j])] {
					if j+1 == len(a) {
						i++ // the value is the next argument
					}
					break // or the rest of the word
				}
			}
		}
	}
	return letters, long
}

// grepNames reports whether grep with these (allowlisted) options prints
// only file names: -l or -L.
func grepNames(args []string) bool {
	letters, long := grepFlags(args)
	return strings.ContainsAny(letters, "lL") || slices.Contains(long, "--files-with-matches") || slices.Contains(long, "--files-without-match")
}

// keepsNames reports whether a filter stage passes on lines of names
// unchanged (it only selects or orders them), so an xargs after it reads
// names the first stage printed.
func keepsNames(st []string) bool {
	switch st[0] {
	case "head", "tail":
		return true
	case "sort", "uniq":
		for _, a := range st[1:] {
			if strings.Contains(a, "c") {
				return false // uniq -c prefixes counts; sort -c prints no names
			}
		}
		return true
	case "grep":
		letters, long := grepFlags(st[1:])
		if strings.ContainsAny(letters, "cnobHTZzlLABC0123456789") {
			return false // counts, numbers, parts of lines, prefixes, context
		}
		for _, l := range long {
			switch l {
			case "--invert-match", "--ignore-case", "--no-ignore-case", "--fixed-strings", "--extended-regexp",
				"--basic-regexp", "--perl-regexp", "--word-regexp", "--line-regexp", "--regexp", "--no-messages", "--max-count":
			default:
				return false
			}
		}
		return true
	}
	return false
}

// firstNames reports whether the first stage prints file names one a
// line (or NUL-ended): find without -ls (or with -exec grep -l), grep -l,
// -L, rg -l, --files.
func firstNames(st []string) bool {
	switch st[0] {
	case "find":
		if _, g, ok := FindExec(st); ok {
			return g.Names
		}
		for _, a := range st[1:] {
			if a == "-ls" {
				return false
			}
		}
		return true
	case "grep":
		return grepNames(st[1:])
	case "rg":
		for _, a := range st[1:] {
			if a == "--files" || a == "--files-with-matches" || a == "--files-without-match" {
				return true
			}
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "l") {
				return true
			}
		}
	}
	return false
}

// Batches splits names into the grep command lines xargs or find -exec +
// would run: argv (grep and its arguments) then as many names as fit in
// ArgMax. Each (find's `;`, one grep per file) is run as batches too, with
// -h so no batch prefixes names grep alone would not print, unless grep
// prints context groups (their "--" separators join files together): then
// one run per name.
func (g GrepRun) Batches(names []string) [][]string {
	argv := g.Argv
	if g.Each {
		if grepContext(argv[1:]) {
			out := make([][]string, len(names))
			for i, n := range names {
				out[i] = append(append([]string(nil), argv...), n)
			}
			return out
		}
		if !grepWithNames(argv[1:]) {
			argv = append(append([]string(nil), argv...), "-h")
		}
	}
	if len(names) == 0 {
		if g.NoEmpty {
			return nil
		}
		return [][]string{append([]string(nil), argv...)}
	}
	base := 0
	for _, a := range argv {
		base += len(a) + 1
	}
	var out [][]string
	cur := append([]string(nil), argv...)
	size := base
	for _, n := range names {
		if len(cur) > len(argv) && size+len(n)+1 > ArgMax {
			out = append(out, cur)
			cur, size = append([]string(nil), argv...), base
		}
		cur = append(cur, n)
		size += len(n) + 1
	}
	return append(out, cur)
}

// grepContext reports context options (-A, -B, -C, -NUM and their long
// forms): grep separates groups with "--", across files too.
func grepContext(args []string) bool {
	letters, long := grepFlags(args)
	return strings.ContainsAny(letters, "ABC0123456789") || slices.Contains(long, "--after-context") ||
		slices.Contains(long, "--before-context") || slices.Contains(long, "--context")
}

// grepWithNames reports -H (--with-filename): grep names each line's file
// even when it reads one, so batching changes nothing.
func grepWithNames(args []string) bool {
	letters, long := grepFlags(args)
	return strings.Contains(letters, "H") || slices.Contains(long, "--with-filename")
}

// SplitNames splits xargs's input into names: NUL-ended with -0, else
// separated by blanks and newlines. xargs without -0 also removes quotes
// and backslashes; a name holding one is refused rather than guessed.
func (g GrepRun) SplitNames(in []byte) ([]string, error) {
	s := string(in)
	if g.Null {
		s = strings.TrimSuffix(s, "\x00")
		if s == "" {
			return nil, nil
		}
		return strings.Split(s, "\x00"), nil
	}
	if strings.ContainsAny(s, "'\"\\") {
		return nil, fmt.Errorf("xargs input with a quote or backslash (xargs would unquote it)")
	}
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }), nil
}
