package recognize

import (
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// listQuery is a listing source's query (docs/protocol.md, "Listing sources").
type listQuery struct {
	depth  int // 1: the directory's entries; 0: every depth
	hidden bool
	ignore []string
	glob   string
}

// listingURI writes the query parameters in the server's order; depth is
// always written (a file URI without a query names a file).
func listingURI(dir string, q listQuery) string {
	u := url.URL{Scheme: "file", Path: dir}
	params := []string{"depth=" + strconv.Itoa(q.depth)}
	if q.hidden {
		params = append(params, "hidden=1")
	}
	if len(q.ignore) > 0 {
		ig := append([]string(nil), q.ignore...)
		sort.Strings(ig)
		for i, n := range ig {
			ig[i] = url.PathEscape(n)
		}
		params = append(params, "ignore="+strings.Join(ig, ","))
	}
	if q.glob != "" {
		params = append(params, "glob="+strings.NewReplacer("%2A", "*", "%2F", "/").Replace(url.PathEscape(q.glob)))
	}
	return u.String() + "?" + strings.Join(params, "&")
}

func (r *recognizer) dirOf(arg, cwd string) (string, bool) {
	p := resolve(cwd, arg)
	return p, r.isDir(p)
}

func resolve(cwd, arg string) string {
	if filepath.IsAbs(arg) {
		return filepath.Clean(arg)
	}
	return filepath.Join(cwd, arg)
}

// ls [-aA1lpFhR] [DIR]: a listing of DIR (depth 1, or every depth with -R).
func (r *recognizer) ls(args []string, out, cwd string) Result {
	const format = "terminal/ls"
	a, why := r.lsArgs(args, cwd)
	if why != "" {
		return event(format, why)
	}
	dir, flags, hidden := a.dir, a.flags, a.hidden
	if strings.Contains(flags, "R") {
		return r.lsRecursive(dir, flags, out, hidden)
	}
	names, why := lsNames(out, flags)
	if why != "" {
		return event(format, why)
	}
	rel, why := r.entries(dir, names)
	if why != "" {
		return event(format, why)
	}
	return listingResult(format, dir, listQuery{depth: 1, hidden: hidden}, rel)
}

// lsCall is an ls command line read by lsArgs.
type lsCall struct {
	dir, dirArg, flags string // the directory (absolute), as written, the letters
	hidden             bool
}

// lsArgs reads ls [-aA1lpFhR] [DIR] run in cwd.
func (r *recognizer) lsArgs(args []string, cwd string) (lsCall, string) {
	var c lsCall
	var ops []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if strings.Trim(a[1:], "aA1lpFhR") != "" {
				return c, "an ls option that changes the listing: " + a
			}
			c.flags += a[1:]
			continue
		}
		ops = append(ops, a)
	}
	if len(ops) > 1 {
		return c, "several directories"
	}
	c.dirArg = "."
	if len(ops) == 1 {
		c.dirArg = ops[0]
	}
	dir, ok := r.dirOf(c.dirArg, cwd)
	if !ok {
		return c, "not a directory"
	}
	c.dir, c.hidden = dir, strings.ContainsAny(c.flags, "aA")
	return c, ""
}

// lsNames are the names of one ls section (one per line, columns, or -l).
func lsNames(out, flags string) ([]string, string) {
	lines, _ := splitOutput(out)
	var names []string
	if strings.Contains(flags, "l") {
		for _, ln := range lines {
			if strings.HasPrefix(ln, "total ") || ln == "" {
				continue
			}
			f := strings.Fields(ln)
			if len(f) < 9 {
				return nil, "an ls -l line without a name"
			}
			// The name is what follows the 8th field; names with spaces keep them.
			idx := 0
			rest := ln
			for idx < 8 {
				rest = strings.TrimLeft(rest, " ")
				sp := strings.IndexByte(rest, ' ')
				rest = rest[sp:]
				idx++
			}
			name := strings.TrimLeft(rest, " ")
			if strings.HasPrefix(ln, "l") {
				name, _, _ = strings.Cut(name, " -> ")
			}
			names = append(names, name)
		}
	} else {
		names = strings.Fields(out) // columns or one a line: a name with a blank is refused below
	}
	var clean []string
	for _, n := range names {
		if strings.ContainsAny(flags, "Fp") {
			if t, ok := strings.CutSuffix(n, "/"); ok {
				n = t
			} else if strings.Contains(flags, "F") && n != "" && strings.ContainsAny(n[len(n)-1:], "*@=|>") {
				n = n[:len(n)-1]
			}
		}
		if n == "." || n == ".." {
			continue
		}
		if n == "" || strings.Contains(n, "/") {
			return nil, "an entry that is not a name"
		}
		clean = append(clean, n)
	}
	return clean, ""
}

// entries marks directories with "/", checking each name exists (or
// existed: a name gone since is kept, the server reports it removed) and
// that no name in the directory holds a blank (columns would be ambiguous).
func (r *recognizer) entries(dir string, names []string) ([]string, string) {
	if r.files == nil {
		return nil, "no file access"
	}
	des, err := r.files.ReadDir(dir)
	if err != nil {
		return nil, "unreadable directory"
	}
	for _, de := range des {
		if strings.ContainsAny(de.Name(), " \t\n") {
			return nil, "a name with blanks in the directory"
		}
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if r.isDir(filepath.Join(dir, n)) && !r.isSymlink(filepath.Join(dir, n)) {
			n += "/"
		}
		out = append(out, n)
	}
	return out, ""
}

func (r *recognizer) isSymlink(p string) bool {
	st, err := r.files.Lstat(p)
	return err == nil && st.Mode()&fs.ModeSymlink != 0
}

func listingResult(format, dir string, q listQuery, rel []string) Result {
	return Result{Kind: KindListing, Format: format,
		Parts: []Part{{Path: dir, URI: listingURI(dir, q), Text: canonical(rel)}}}
}

// lsRecursive: ls -R prints "DIR:" headers, each directory's names, and a
// blank line between sections.
func (r *recognizer) lsRecursive(dir, flags, out string, hidden bool) Result {
	const format = "terminal/ls-R"
	sections := strings.Split(strings.TrimSpace(out), "\n\n")
	top := ""
	if head, _, _ := strings.Cut(sections[0], "\n"); strings.HasSuffix(head, ":") {
		top = strings.TrimSuffix(head, ":")
	}
	var rel []string
	for _, sec := range sections {
		sub, got, why := r.lsSection(dir, top, flags, sec)
		if why != "" {
			return event(format, why)
		}
		for _, g := range got {
			rel = append(rel, sub+g)
		}
	}
	return listingResult(format, dir, listQuery{depth: 0, hidden: hidden}, rel)
}

// lsSection reads one section of ls -R under the header top: the
// directory's path below dir ("" or "sub/") and its entries.
func (r *recognizer) lsSection(dir, top, flags, sec string) (string, []string, string) {
	head, body, _ := strings.Cut(sec, "\n")
	if !strings.HasSuffix(head, ":") {
		return "", nil, "a section without its directory header"
	}
	head = strings.TrimSuffix(head, ":")
	sub := ""
	if head != top {
		s, ok := strings.CutPrefix(head, strings.TrimSuffix(top, "/")+"/")
		if !ok || s == "" {
			return "", nil, "a section outside the listed directory"
		}
		sub = s + "/"
	}
	names, why := lsNames(body, flags)
	if why != "" {
		return "", nil, why
	}
	got, why := r.entries(filepath.Join(dir, sub), names)
	return sub, got, why
}

// lsRecursiveCut: an ls -R whose middle the runtime cut (head and tail
// are the text shown before and after the cut; either may be empty). A
// section is shown in full when the next section's header follows it
// whole in the same piece, or when it ends the output (ls had finished):
// each such section is its directory's listing (depth 1), tracked; the
// sections the cut touched are not.
func (r *recognizer) lsRecursiveCut(dir, dirArg, flags, head, tail string, hidden bool) Result {
	const format = "terminal/ls-R-cut"
	// ls prints the operand as given in the first header (".", "src/").
	top := dirArg
	if h, _, ok := strings.Cut(head, "\n"); ok && strings.HasSuffix(h, ":") {
		top = strings.TrimSuffix(h, ":")
	}
	var secs []string
	if head != "" {
		hs := strings.Split(head, "\n\n")
		for i := 0; i+1 < len(hs); i++ {
			if next, _, ok := strings.Cut(hs[i+1], "\n"); ok && strings.HasSuffix(next, ":") {
				secs = append(secs, hs[i])
			}
		}
	}
	if ts := strings.Split(tail, "\n\n"); len(ts) > 1 {
		secs = append(secs, ts[1:]...) // the first piece lost its start
	}
	q := listQuery{depth: 1, hidden: hidden}
	var parts []Part
	for _, sec := range secs {
		sub, got, why := r.lsSection(dir, top, flags, strings.Trim(sec, "\n"))
		if why != "" {
			return event(format, "the output was cut; a section shown in full: "+why)
		}
		d := strings.TrimSuffix(filepath.Join(dir, sub), "/")
		parts = append(parts, Part{Path: d, URI: listingURI(d, q), Text: canonical(got)})
	}
	if len(parts) == 0 {
		return event(format, "the output was cut before any section ended")
	}
	return Result{Kind: KindListing, Format: format, Parts: parts,
		Reason: fmt.Sprintf("the output was cut: the %d sections shown in full", len(parts))}
}

var pruneRE = lazyRegexp(`^\*/([^/*?\[\]]+)/\*$`)

// find [DIR] [-maxdepth N] [-type f] [-name PAT] [-not -path '*/X/*']: a
// listing of DIR (find prints the starting point joined with each path).
func (r *recognizer) find(args []string, out, cwd string) Result {
	const format = "terminal/find"
	start, q, why := parseFind(args)
	if why != "" {
		return event(format, why)
	}
	dir, ok := r.dirOf(start, cwd)
	if !ok {
		return event(format, "not a directory")
	}
	prefix := start
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	lines, _ := splitOutput(out)
	var rel []string
	for _, ln := range lines {
		if strings.TrimRight(ln, "/") == strings.TrimRight(start, "/") || ln == start {
			continue // find prints its starting point
		}
		e, ok := strings.CutPrefix(ln, prefix)
		if !ok {
			return event(format, "a path outside the starting point")
		}
		if e == "" || ignored(e, q.ignore) {
			continue // -not -path '*/X/*' still prints X itself; the listing skips it
		}
		isDir := r.isDir(filepath.Join(dir, e)) && !r.isSymlink(filepath.Join(dir, e))
		if q.glob != "" && isDir {
			return event(format, "a directory matched: the listing keeps only files")
		}
		if isDir {
			e += "/"
		}
		rel = append(rel, e)
	}
	return listingResult(format, dir, q, rel)
}

// parseFind reads find's starting point and the expression it accepts.
func parseFind(args []string) (string, listQuery, string) {
	start := "."
	i := 0
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "!" && args[0] != "(" {
		start, i = args[0], 1
	}
	q := listQuery{hidden: true}
	filesOnly, name := false, ""
	for i < len(args) {
		a, next := args[i], ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case a == "-maxdepth" && next != "":
			n, ok := atoi(next)
			if !ok || n < 1 {
				return "", q, "a -maxdepth below 1"
			}
			q.depth, i = n, i+2
		case a == "-type" && next == "f":
			filesOnly, i = true, i+2
		case a == "-name" && next != "" && name == "" && !strings.Contains(next, "/"):
			name, i = next, i+2
		case (a == "-not" || a == "!") && next == "-path" && i+2 < len(args):
			m := pruneRE().FindStringSubmatch(args[i+2])
			if m == nil {
				return "", q, "a -path filter other than '*/X/*'"
			}
			q.ignore, i = append(q.ignore, m[1]), i+3
		default:
			return "", q, "a find expression other than -maxdepth/-type f/-name/-not -path"
		}
	}
	switch {
	case name != "":
		q.glob = "**/" + name
	case filesOnly:
		q.glob = "**"
	}
	return start, q, ""
}

func ignored(rel string, ignore []string) bool {
	for _, seg := range strings.Split(rel, "/") {
		for _, n := range ignore {
			if seg == n {
				return true
			}
		}
	}
	return false
}
