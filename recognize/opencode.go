package recognize

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"
)

// OpenCode tools (opencode-ai 1.18.33).
const (
	ocMaxLine      = 2000
	ocLineCut      = "... (line truncated to 2000 chars)"
	ocMaxBytes     = 51200
	ocGrepMaxLine  = 2000
	ocReadHeadFile = "<type>file</type>\n<content>"
)

func (r *recognizer) opencode() Result {
	if r.call.Error {
		return event("opencode/error", "the tool reported an error")
	}
	switch r.call.Tool {
	case "read":
		return r.ocRead()
	case "edit", "write", "multiedit", "apply_patch", "patch":
		return r.ocWrite()
	case "grep":
		return r.ocGrep()
	case "glob":
		return r.ocGlob()
	case "bash":
		return r.ocBash()
	}
	return event("opencode/"+r.call.Tool, "a tool that shows no file content")
}

// ocWrite is an edit-type tool's result: the files it wrote, from its
// arguments and metadata (a patch: metadata.files, else its patchText).
func (r *recognizer) ocWrite() Result {
	format := "opencode/" + r.call.Tool
	var paths []string
	meta := r.meta()
	if r.call.Tool == "apply_patch" || r.call.Tool == "patch" {
		if files, ok := meta["files"].([]any); ok {
			for _, f := range files {
				f, _ := f.(map[string]any)
				for _, k := range []string{"filePath", "movePath"} {
					if p, _ := f[k].(string); p != "" {
						paths = append(paths, p)
					}
				}
			}
		} else {
			paths = patchFiles(r.str("patchText"))
		}
	} else {
		diff, _ := meta["filediff"].(map[string]any)
		for _, p := range []any{r.args["filePath"], diff["file"], meta["filepath"]} {
			if p, _ := p.(string); p != "" {
				paths = append(paths, p)
			}
		}
	}
	var writes []string
	seen := map[string]bool{}
	for _, p := range paths {
		if p = resolve(r.call.Cwd, p); filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			writes = append(writes, p)
		}
	}
	if len(writes) == 0 {
		return event(format, "no file named")
	}
	return Result{Kind: KindWrite, Format: format, Writes: writes}
}

func (r *recognizer) meta() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.call.Metadata, &m)
	return m
}

var (
	ocReadHead = lazyRegexp(`^<path>([^\n]*)</path>\n<type>([^\n]*)</type>\n<content>(\n?)`)
	ocDirHead  = lazyRegexp(`^<path>([^\n]*)</path>\n<type>directory</type>\n<entries>\n([\s\S]*)\n</entries>`)
	ocEntries  = lazyRegexp(`^\((\d+) entries\)$`)
	ocLine     = lazyRegexp(`^(\d+): ?([\s\S]*)$`)
)

// ocRead is OpenCode's read: a file window (or a directory's entries).
func (r *recognizer) ocRead() Result {
	const format = "opencode/read"
	out := r.call.Output
	if m := ocDirHead().FindStringSubmatch(out); m != nil {
		return r.ocDirRead(m[1], m[2])
	}
	m := ocReadHead().FindStringSubmatch(out)
	if m == nil || m[2] != "file" {
		return event(format, "not a text file read in a known format")
	}
	w, why := parseOCWindow(out[len(m[0]):])
	if why != "" {
		return event(format, why)
	}
	w.path = m[1]
	if d, ok := r.meta()["display"].(map[string]any); ok && d["type"] == "file" {
		if why := w.display(d); why != "" {
			return event(format, why)
		}
	}
	if !filepath.IsAbs(w.path) {
		w.path = resolve(r.call.Cwd, w.path)
	}
	for _, l := range w.lines {
		if strings.HasSuffix(l, ocLineCut) && utf16Len(l) == ocMaxLine+len(ocLineCut) {
			return event(format, "a line was cut at 2000 chars")
		}
	}
	if !w.whole && len(w.lines) == 0 {
		return event(format, "an empty window")
	}
	p := Part{Path: w.path, Text: join(w.lines)}
	if !w.whole {
		p.Start, p.End = w.start, w.start+len(w.lines)-1
	}
	shape := ocShape{contentNewline: m[3] == "\n", suffix: w.suffix, path: m[1]}
	files := r.files // not r: the renderer outlives the call and its output
	return Result{Kind: KindRead, Format: format, Parts: []Part{p}, render: func(ps []Part) string {
		return shape.render(ps[0], (&recognizer{files: files, frozen: true}).total(ps[0]))
	}}
}

// ocWindow is what a read showed of a file.
type ocWindow struct {
	path   string
	start  int
	lines  []string
	whole  bool
	suffix string // verbatim text after the closing tag
}

var ocEOF = lazyRegexp(`^\(End of file - total (\d+) lines?\)$`)

// parseOCWindow reads the numbered lines and the footer after <content>.
func parseOCWindow(rest string) (ocWindow, string) {
	var w ocWindow
	end := strings.Index(rest, "\n</content>")
	if end < 0 {
		return w, "no closing tag"
	}
	w.suffix = rest[end+len("\n</content>"):]
	rows := strings.Split(rest[:end], "\n")
	footer := ""
	if last := rows[len(rows)-1]; strings.HasPrefix(last, "(") && strings.HasSuffix(last, ")") {
		footer, rows = last, rows[:len(rows)-1]
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	for _, row := range rows {
		lm := ocLine().FindStringSubmatch(row)
		if lm == nil {
			return w, "a line without its number"
		}
		n, _ := atoi(lm[1])
		if len(w.lines) == 0 {
			w.start = n
		} else if n != w.start+len(w.lines) {
			return w, "numbers out of order"
		}
		w.lines = append(w.lines, lm[2])
	}
	total := -1
	if fm := ocEOF().FindStringSubmatch(footer); fm != nil {
		total, _ = atoi(fm[1])
	}
	w.whole = (w.start == 1 || len(w.lines) == 0) && total == len(w.lines)
	return w, ""
}

// display takes the window from metadata.display: OpenCode >= 1.17 says
// exactly what it showed (raw lines, window, file length).
func (w *ocWindow) display(d map[string]any) string {
	text, _ := d["text"].(string)
	ls, _ := d["lineStart"].(float64)
	le, _ := d["lineEnd"].(float64)
	tl, _ := d["totalLines"].(float64)
	cut, _ := d["truncated"].(bool)
	if p, _ := d["path"].(string); p != "" {
		w.path = p
	}
	w.lines = nil
	if text != "" || le >= ls {
		w.lines = strings.Split(text, "\n")
	}
	if len(w.lines) != max(0, int(le-ls+1)) {
		return "display metadata disagrees with itself"
	}
	w.start = int(ls)
	w.whole = w.start == 1 && !cut && int(le) >= int(tl)
	return ""
}

// total is a file's line count, for a re-rendered read's footer: the
// part's (sync views carry it), else the file's now, else the window's end.
func (r *recognizer) total(p Part) int {
	switch {
	case p.Total > 0:
		return p.Total
	case p.Whole():
		return len(textLines(p))
	}
	if file, ok := r.lines(p.Path); ok {
		return len(file)
	}
	return p.End
}

type ocShape struct {
	contentNewline bool
	suffix, path   string
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// render prints a read as OpenCode's read tool does for the same window.
func (s ocShape) render(p Part, total int) string {
	start := max(p.Start, 1)
	var shown []string
	bytes, capped := 0, false
	for i, l := range textLines(p) {
		if utf16Len(l) > ocMaxLine {
			u := utf16.Encode([]rune(l))
			l = string(utf16.Decode(u[:ocMaxLine])) + ocLineCut
		}
		size := len(l)
		if len(shown) > 0 {
			size++
		}
		if bytes+size > ocMaxBytes {
			capped = true
			break
		}
		bytes += size
		shown = append(shown, strconv.Itoa(start+i)+": "+l)
	}
	end := start + len(shown) - 1
	var footer string
	switch {
	case capped:
		footer = "(Output capped at 50 KB. Showing lines " + strconv.Itoa(start) + "-" + strconv.Itoa(end) + ". Use offset=" + strconv.Itoa(end+1) + " to continue.)"
	case end >= total:
		footer = "(End of file - total " + strconv.Itoa(max(total, end)) + " lines)"
	default:
		footer = "(Showing lines " + strconv.Itoa(start) + "-" + strconv.Itoa(end) + " of " + strconv.Itoa(total) + ". Use offset=" + strconv.Itoa(end+1) + " to continue.)"
	}
	nl := ""
	if s.contentNewline {
		nl = "\n"
	}
	return "<path>" + s.path + "</path>\n" + ocReadHeadFile + nl + strings.Join(shown, "\n") + "\n\n" + footer + "\n</content>" + s.suffix
}

// ocDirRead is a read of a directory: its entries, when all were shown.
func (r *recognizer) ocDirRead(dir, body string) Result {
	const format = "opencode/read-dir"
	if d, ok := r.meta()["display"].(map[string]any); ok {
		if cut, _ := d["truncated"].(bool); cut {
			return event(format, "the listing was cut")
		}
		if off, ok := d["offset"].(float64); ok && off != 1 {
			return event(format, "the listing starts past its first entry")
		}
	}
	rows := strings.Split(body, "\n")
	fm := ocEntries().FindStringSubmatch(rows[len(rows)-1])
	if fm == nil {
		return event(format, "no entry count")
	}
	var entries []string
	for _, e := range rows[:len(rows)-1] {
		if e != "" {
			entries = append(entries, e)
		}
	}
	if n, _ := atoi(fm[1]); n != len(entries) {
		return event(format, "an entry count that disagrees")
	}
	return r.fitListing(format, dir, entries, listQuery{depth: 1, hidden: true})
}

// ocGlob is the glob tool: absolute file paths, one a line (ripgrep
// --files: hidden files included, .git skipped, gitignore rules applied).
func (r *recognizer) ocGlob() Result {
	const format = "opencode/glob"
	out := r.call.Output
	if cut, _ := r.meta()["truncated"].(bool); cut || strings.Contains(out, "(Results are truncated") {
		return event(format, "the result was cut at its limit")
	}
	pattern := r.str("pattern")
	if pattern == "" {
		return event(format, "no pattern")
	}
	base := r.call.Cwd
	if p := r.str("path"); p != "" {
		base = resolve(base, p)
	}
	var rel []string
	if out != "No files found" {
		for _, row := range strings.Split(out, "\n") {
			if row == "" {
				continue
			}
			if !filepath.IsAbs(row) {
				return event(format, "a row that is not an absolute path")
			}
			rp, err := filepath.Rel(base, row)
			if err != nil || strings.HasPrefix(rp, "..") {
				return event(format, "a hit outside its directory")
			}
			rel = append(rel, filepath.ToSlash(rp))
		}
	}
	return r.globListing(format, base, rel, pattern)
}

// globListing is a glob tool's result (the files under base that match
// pattern, as paths relative to base) as a listing source: a pattern
// without a slash matches at any depth, as both tools' globbers do.
func (r *recognizer) globListing(format, base string, rel []string, pattern string) Result {
	g := strings.TrimPrefix(pattern, "./")
	if strings.Contains(g, "/") {
		g = strings.TrimPrefix(g, "/")
	} else {
		g = "**/" + g
	}
	return r.fitListing(format, base, rel, listQuery{depth: 0, hidden: true, ignore: []string{".git"}, glob: g})
}

// ocHit is one hit of the grep tool.
type ocHit struct {
	file    string
	line    int
	text    string
	newline bool // the tool showed the line with its terminator (a blank row follows)
	cut     bool // the tool cut the line: shown, not tracked
}

var (
	ocFound  = lazyRegexp(`^Found \d+ match`)
	ocHitRow = lazyRegexp(`^  Line (\d+): ([\s\S]*)$`)
)

// ocGrep is the grep tool: "Found N matches", then per file "PATH:" and
// "  Line N: text" rows (each followed by a blank row: rg keeps the line's
// terminator).
func (r *recognizer) ocGrep() Result {
	const format = "opencode/grep"
	out := r.call.Output
	if !ocFound().MatchString(out) {
		return event(format, "no hits")
	}
	body, tail := out, ""
	if t := strings.LastIndex(body, "\n\n(Results truncated."); t >= 0 {
		body, tail = body[:t], body[t:]
	}
	rows := strings.Split(body, "\n")
	head := rows[0]
	hits, ok := ocHits(rows[1:])
	if !ok {
		return event(format, "a row in no known shape")
	}
	var idx []int
	var parts []Part
	for i, h := range hits {
		if !h.cut {
			idx = append(idx, i)
			parts = append(parts, Part{Path: h.file, Start: h.line, End: h.line, Text: h.text})
		}
	}
	// The renderer keeps the hits' places; the parts hold their text.
	kept := append([]ocHit(nil), hits...)
	for _, i := range idx {
		kept[i].text = ""
	}
	render := func(ps []Part) string {
		now := append([]ocHit(nil), kept...)
		for k, p := range ps {
			now[idx[k]].line = max(p.Start, 1)
			now[idx[k]].text, _, _ = strings.Cut(p.Text, "\n")
		}
		return renderOCGrep(head, now) + tail
	}
	if len(parts) == 0 {
		return event(format, "every hit was cut at 2000 chars")
	}
	// Blank rows are ambiguous one by one; the parse stands only if it prints back exactly.
	if render(parts) != out {
		return event(format, "the hits do not print back as the output")
	}
	return Result{Kind: KindRead, Format: format, Parts: parts, render: render}
}

func ocHits(rows []string) ([]ocHit, bool) {
	var hits []ocHit
	file := ""
	for i := 0; i < len(rows); i++ {
		row := rows[i]
		if m := ocHitRow().FindStringSubmatch(row); m != nil && file != "" {
			nl := i+1 < len(rows) && rows[i+1] == "" && (i+2 >= len(rows) || rows[i+2] == "" || ocHitRow().MatchString(rows[i+2]))
			if nl {
				i++
			}
			n, _ := atoi(m[1])
			cut := utf16Len(m[2]) == ocGrepMaxLine+3 && strings.HasSuffix(m[2], "...")
			hits = append(hits, ocHit{file, n, m[2], nl, cut})
			continue
		}
		if row == "" {
			continue
		}
		p, ok := strings.CutSuffix(row, ":")
		if !ok || !filepath.IsAbs(p) {
			return nil, false
		}
		file = p
	}
	return hits, true
}

func renderOCGrep(head string, hits []ocHit) string {
	out := []string{head}
	file := ""
	for _, h := range hits {
		if h.file != file {
			if file != "" {
				out = append(out, "")
			}
			file = h.file
			out = append(out, h.file+":")
		}
		nl := ""
		if h.newline {
			nl = "\n"
		}
		out = append(out, "  Line "+strconv.Itoa(h.line)+": "+h.text+nl)
	}
	return strings.Join(out, "\n")
}

func (r *recognizer) ocBash() Result {
	command := r.str("command")
	meta := r.meta()
	if exit, ok := meta["exit"].(float64); ok && exit != 0 {
		return event("terminal", "the command did not exit 0")
	}
	if r.call.ExitCode != nil && *r.call.ExitCode != 0 {
		return event("terminal", "the command did not exit 0")
	}
	if cut, _ := meta["truncated"].(bool); cut || r.call.Truncated {
		return event("terminal", "the output was cut")
	}
	cwd := r.call.Cwd
	if w := r.str("workdir"); w != "" {
		cwd = resolve(cwd, w)
	}
	return r.terminal(command, cwd, r.call.Output, false)
}
