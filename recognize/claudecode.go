package recognize

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/concord-ctx/concord/query"
)

// Claude Code's tools (@anthropic-ai/claude-code 2.1.328, formats captured
// in testdata/claudecode). Call.Metadata is the tool's structured result:
// the hook's tool_response, or toolUseResult in the session transcript.
// Call.Output, when known, is the text the model was shown (the transcript
// has it; a hook has not): it is then checked against the render.
//
// What the model receives is trimmed at its end (the Messages API request
// carries a tool result without trailing blanks), and a Bash output is
// trimmed at both ends: every render here is trimmed the same way.

// ccTrimEnd is what the model receives of a tool result.
func ccTrimEnd(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }

// ccEmpty is Read's text for an empty file.
const ccEmpty = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"

func (r *recognizer) claudecode() Result {
	tool := r.call.Tool
	if r.call.Error {
		return event("claude-code/"+strings.ToLower(tool), "the tool reported an error")
	}
	if len(r.call.Metadata) > 0 && r.call.Metadata[0] == '"' {
		// A failed call's toolUseResult is its error text.
		return event("claude-code/"+strings.ToLower(tool), "the tool reported an error")
	}
	switch tool {
	case "Read":
		return r.ccRead()
	case "Bash":
		return r.ccBash()
	case "Grep":
		return r.ccGrep()
	case "Glob":
		return r.ccGlob()
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return r.ccWrite()
	}
	if strings.HasPrefix(tool, "mcp__") {
		return event("claude-code/mcp", "an MCP tool's result")
	}
	return event("claude-code/"+strings.ToLower(tool), "a tool that shows no file content")
}

// ccWrite: Edit, MultiEdit and Write name file_path (and answer filePath),
// NotebookEdit notebook_path. Their answers show no file content ("The
// file … has been updated successfully"), so they are writes only.
func (r *recognizer) ccWrite() Result {
	format := "claude-code/" + strings.ToLower(r.call.Tool)
	meta := r.meta()
	var writes []string
	for _, p := range []any{r.args["file_path"], r.args["notebook_path"], meta["filePath"], meta["notebook_path"]} {
		if p, _ := p.(string); p != "" {
			if p = resolve(r.call.Cwd, p); filepath.IsAbs(p) && !contains(writes, p) {
				writes = append(writes, p)
			}
		}
	}
	if len(writes) == 0 {
		return event(format, "no file named")
	}
	return Result{Kind: KindWrite, Format: format, Writes: writes}
}

// ccFile is Read's structured answer.
type ccFile struct {
	Type string `json:"type"`
	File struct {
		FilePath   string  `json:"filePath"`
		Content    *string `json:"content"`
		StartLine  int     `json:"startLine"`
		NumLines   int     `json:"numLines"`
		TotalLines int     `json:"totalLines"`
	} `json:"file"`
}

// ccRow is one row of Read's text: "N\tline".
var ccRow = lazyRegexp(`^(\d+)\t([\s\S]*)$`)

// ccRead is the Read tool: "N\tline" rows, numbered from the window's
// first line, no padding. Claude Code splits a file on "\n", so a final
// newline shows one more, empty, row ("4\t", trimmed to "4" when last):
// Concord's lines have no such row, so it is dropped from the part and
// added back by the render.
func (r *recognizer) ccRead() Result {
	const format = "claude-code/read"
	var f ccFile
	if len(r.call.Metadata) > 0 {
		if err := json.Unmarshal(r.call.Metadata, &f); err != nil {
			return event(format, "a result in no known shape")
		}
	}
	if f.Type == "" && r.call.Output != "" {
		return r.ccReadText()
	}
	if f.Type != "text" || f.File.Content == nil {
		return event(format, "not shown as text ("+f.Type+")")
	}
	path := f.File.FilePath
	if path == "" {
		path = r.str("file_path")
	}
	if path = resolve(r.call.Cwd, path); !filepath.IsAbs(path) {
		return event(format, "no absolute path")
	}
	content, start, total := *f.File.Content, max(f.File.StartLine, 1), f.File.TotalLines
	if content == "" && start == 1 && total <= 1 {
		p := Part{Path: path, Text: ""}
		return r.ccReadResult(format, p, false, ccEmpty)
	}
	rows := strings.Split(content, "\n")
	if len(rows) != f.File.NumLines {
		return event(format, "numLines disagrees with the content")
	}
	phantom := strings.HasSuffix(content, "\n") // the empty row after a final newline
	if phantom {
		rows = rows[:len(rows)-1]
	}
	if len(rows) == 0 {
		return event(format, "an empty window")
	}
	shown := ccReadText(start, rows, phantom)
	p := Part{Path: path, Text: join(rows)}
	if start == 1 && start+f.File.NumLines-1 >= total {
		p.Total = len(rows)
	} else {
		p.Start, p.End = start, start+len(rows)-1
	}
	return r.ccReadResult(format, p, phantom, shown)
}

// ccReadText recognizes Read from the text alone (no structured answer):
// a window of numbered rows, never the whole file (its length is unknown).
func (r *recognizer) ccReadText() Result {
	const format = "claude-code/read"
	path := resolve(r.call.Cwd, r.str("file_path"))
	if !filepath.IsAbs(path) {
		return event(format, "no absolute path")
	}
	out := ccTrimEnd(r.call.Output)
	rows := strings.Split(out, "\n")
	start, phantom := 0, false
	var lines []string
	for i, row := range rows {
		m := ccRow().FindStringSubmatch(row)
		if m == nil {
			if n, ok := atoi(row); ok && i == len(rows)-1 && i > 0 && n == start+len(lines) {
				phantom = true // the empty last row, trimmed
				break
			}
			return event(format, "a row without its number")
		}
		n, _ := atoi(m[1])
		if i == 0 {
			start = n
		} else if n != start+len(lines) {
			return event(format, "numbers out of order")
		}
		lines = append(lines, m[2])
	}
	if start < 1 || len(lines) == 0 {
		return event(format, "no numbered rows")
	}
	p := Part{Path: path, Start: start, End: start + len(lines) - 1, Text: join(lines)}
	return r.ccReadResult(format, p, phantom, out)
}

// ccReadResult is the read with its render, if it prints back as shown.
func (r *recognizer) ccReadResult(format string, p Part, phantom bool, shown string) Result {
	render := func(ps []Part) string {
		q := ps[0]
		lines := textLines(q)
		if len(lines) == 0 && q.Whole() {
			return ccEmpty
		}
		// The empty last row shows when the window reached a final newline
		// and the file still ends with one.
		tail := phantom && r.endsWithNewline(q.Path)
		return ccTrimEnd(ccReadText(max(q.Start, 1), lines, tail))
	}
	if got := render([]Part{p}); got != ccTrimEnd(shown) || r.call.Output != "" && got != ccTrimEnd(r.call.Output) {
		return event(format, "the window does not print back as the output")
	}
	return Result{Kind: KindRead, Format: format, Parts: []Part{p}, render: render}
}

// ccReadText is Read's text for lines from start (phantom: the empty row
// after a final newline).
func ccReadText(start int, lines []string, phantom bool) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(start + i))
		b.WriteByte('\t')
		b.WriteString(l)
	}
	if phantom {
		b.WriteString("\n" + strconv.Itoa(start+len(lines)) + "\t")
	}
	return b.String()
}

// endsWithNewline reports whether the file now ends with a newline (an
// unreadable or missing file does not).
func (r *recognizer) endsWithNewline(path string) bool {
	if r.files == nil {
		return false
	}
	data, err := r.files.ReadFile(path)
	return err == nil && len(data) > 0 && data[len(data)-1] == '\n'
}

// ccBashResult is Bash's structured answer.
type ccBashResult struct {
	Stdout      *string `json:"stdout"`
	Stderr      string  `json:"stderr"`
	Interrupted bool    `json:"interrupted"`
	IsImage     bool    `json:"isImage"`
}

// ccBash is the Bash tool: the terminal recognizer over the command's
// standard output (the structured answer keeps its leading blanks; the
// model saw it trimmed at both ends). The working directory Claude Code
// reports is the one after the command ran (a `cd` persists), as
// OpenHands' is.
func (r *recognizer) ccBash() Result {
	var b ccBashResult
	if len(r.call.Metadata) > 0 {
		if err := json.Unmarshal(r.call.Metadata, &b); err != nil {
			return event("terminal", "a result in no known shape")
		}
	}
	switch {
	case b.Interrupted:
		return event("terminal", "the command was interrupted")
	case b.IsImage:
		return event("terminal", "the output was an image")
	case b.Stderr != "":
		return event("terminal", "the command wrote to its standard error")
	case r.call.ExitCode != nil && *r.call.ExitCode != 0:
		return event("terminal", "the command did not exit 0")
	case r.call.Truncated:
		return event("terminal", "the output was cut")
	}
	out := r.call.Output
	if b.Stdout != nil {
		out = *b.Stdout
	}
	if r.str("run_in_background") != "" || r.args["run_in_background"] == true {
		return event("terminal", "a command run in the background")
	}
	res := r.terminal(r.str("command"), r.call.Cwd, out, false)
	if why := ccShadowed(res); why != "" {
		return event(res.Format, why)
	}
	return ccTrimmed(res, r.call.Output)
}

// ccShadowed: Claude Code's Bash runs `grep` as its embedded ugrep, which
// names files found recursively without grep's "./" ("b.txt", not
// "./b.txt"): a query source re-run with the system's grep would differ at
// once, so such a query is not registered.
func ccShadowed(res Result) string {
	if res.Kind != KindQuery {
		return ""
	}
	s, err := query.Parse(res.Parts[0].URI)
	if err != nil {
		return "a query source that does not parse"
	}
	for _, st := range s.Stages {
		if filepath.Base(st[0]) != "grep" {
			continue
		}
		if g, ok := parseGrepArgs(st[1:], false); !ok || g.recursive {
			return "Claude Code's Bash runs grep as its embedded ugrep, whose recursive output the system grep does not repeat"
		}
	}
	return ""
}

// ccTrimmed makes a result's render trim as the model's text is; with the
// text the model saw, the render must print it back.
func ccTrimmed(res Result, shown string) Result {
	if res.render == nil {
		return res
	}
	inner := res.render
	res.render = func(ps []Part) string { return strings.TrimSpace(inner(ps)) }
	if shown != "" && res.Kind == KindRead && res.render(res.Parts) != strings.TrimSpace(shown) {
		return event(res.Format, "the output does not print back as shown")
	}
	return res
}

// ccGrepResult is Grep's structured answer.
type ccGrepResult struct {
	Mode          string   `json:"mode"`
	Content       string   `json:"content"`
	Filenames     []string `json:"filenames"`
	NumFiles      int      `json:"numFiles"`
	AppliedLimit  *int     `json:"appliedLimit"`
	AppliedOffset *int     `json:"appliedOffset"`
}

// ccGrep is the Grep tool (ripgrep run in the session's directory):
// content mode prints rg's "path:N:line" rows (no path for one file), so it
// is the terminal's rg recognizer over the equivalent rg command;
// files_with_matches and count are query sources over that command.
func (r *recognizer) ccGrep() Result {
	const format = "claude-code/grep"
	var g ccGrepResult
	if err := json.Unmarshal(r.call.Metadata, &g); err != nil || g.Mode == "" {
		return event(format, "a result in no known shape")
	}
	if g.AppliedLimit != nil || g.AppliedOffset != nil || r.args["head_limit"] != nil || r.args["offset"] != nil {
		return event(format, "the result was cut at a limit")
	}
	if r.args["multiline"] == true {
		return event(format, "a multiline search")
	}
	cwd := r.call.Cwd
	if !filepath.IsAbs(cwd) {
		return event(format, "no absolute working directory")
	}
	argv, why := r.ccRgArgs(g.Mode)
	if why != "" {
		return event(format, why)
	}
	t := term{r: r, cwd: cwd, stages: [][]string{argv}}
	switch g.Mode {
	case "content":
		if g.Content == "" {
			return event(format, "no hits")
		}
		t.out = g.Content
		res := t.grep("rg", argv[1:], nil)
		if res.Kind != KindRead {
			return event(format, res.Reason)
		}
		res.Format = format
		return ccTrimmed(res, r.call.Output)
	case "files_with_matches", "count":
		return r.ccGrepQuery(t, g)
	}
	return event(format, "an output mode it does not know: "+g.Mode)
}

// ccRgArgs is the rg command a Grep call runs, as the terminal recognizer
// and a query source read it.
func (r *recognizer) ccRgArgs(mode string) ([]string, string) {
	argv := []string{"rg"}
	switch mode {
	case "content":
		if r.args["-n"] != false {
			argv = append(argv, "-n")
		}
		argv = append(argv, "--no-heading")
		for _, k := range []string{"-A", "-B", "-C"} {
			if v, ok := r.args[k].(float64); ok {
				argv = append(argv, k, strconv.Itoa(int(v)))
			}
		}
	case "files_with_matches":
		argv = append(argv, "-l")
	case "count":
		argv = append(argv, "-c")
	}
	if r.args["-i"] == true {
		argv = append(argv, "-i")
	}
	if g := r.str("glob"); g != "" {
		argv = append(argv, "--glob", g)
	}
	if t := r.str("type"); t != "" {
		argv = append(argv, "--type", t)
	}
	pattern := r.str("pattern")
	if pattern == "" {
		return nil, "no pattern"
	}
	argv = append(argv, "-e", pattern)
	if p := r.str("path"); p != "" {
		abs := resolve(r.call.Cwd, p)
		rel, err := filepath.Rel(r.call.Cwd, abs)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, "a path outside the working directory (its rows' paths are not known)"
		}
		argv = append(argv, rel)
	}
	return argv, ""
}

var ccCountFooter = lazyRegexp(`\n\nFound \d+ total occurrences? across \d+ files?\.$`)

// ccGrepQuery: files_with_matches ("Found N files" then the names, newest
// first) and count ("path:N" rows, then a total) as a query source over
// the rg command, its names sorted (the order by time is not a content).
func (r *recognizer) ccGrepQuery(t term, g ccGrepResult) Result {
	format := "claude-code/grep-" + g.Mode
	var rows []string
	if g.Mode == "files_with_matches" {
		rows = append(rows, g.Filenames...)
	} else if g.Content != "" {
		rows = strings.Split(g.Content, "\n")
	}
	if len(rows) == 0 {
		return event(format, "no hits")
	}
	sorted := append([]string(nil), rows...)
	sort.Strings(sorted)
	t.out = join(sorted) + "\n"
	res := t.query(format, "file names or counts")
	if res.Kind != KindQuery {
		return res
	}
	mode := g.Mode
	res.render = func(ps []Part) string {
		if ps[0].Text == "" {
			if mode == "count" {
				return "No matches found"
			}
			return "No files found"
		}
		rows := strings.Split(ps[0].Text, "\n")
		if mode == "files_with_matches" {
			return "Found " + plural(len(rows), "file") + "\n" + join(rows)
		}
		total := 0
		for _, row := range rows {
			if i := strings.LastIndexByte(row, ':'); i >= 0 {
				n, _ := atoi(row[i+1:])
				total += n
			}
		}
		return join(rows) + "\n\nFound " + plural(total, "total occurrence") + " across " + plural(len(rows), "file") + "."
	}
	if shown := r.call.Output; shown != "" {
		// The order of names is by modification time: compare as sets.
		body := strings.TrimPrefix(ccCountFooter().ReplaceAllString(shown, ""), "")
		if g.Mode == "files_with_matches" {
			_, body, _ = strings.Cut(body, "\n")
		}
		got := strings.Split(body, "\n")
		sort.Strings(got)
		if join(got) != join(sorted) {
			return event(format, "the names do not print back as shown")
		}
	}
	return res
}

func plural(n int, what string) string {
	s := strconv.Itoa(n) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}

// ccGlobResult is Glob's structured answer.
type ccGlobResult struct {
	Filenames []string `json:"filenames"`
	Truncated bool     `json:"truncated"`
}

// ccGlob is the Glob tool: file paths relative to the session's directory
// (or absolute, outside it), newest first; a listing source when the
// directory's files under the pattern are exactly those shown.
func (r *recognizer) ccGlob() Result {
	const format = "claude-code/glob"
	var g ccGlobResult
	if err := json.Unmarshal(r.call.Metadata, &g); err != nil || g.Filenames == nil {
		return event(format, "a result in no known shape")
	}
	if g.Truncated {
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
	if !filepath.IsAbs(base) {
		return event(format, "no absolute directory")
	}
	var rel []string
	for _, f := range g.Filenames {
		rp, err := filepath.Rel(base, resolve(r.call.Cwd, f))
		if err != nil || strings.HasPrefix(rp, "..") {
			return event(format, "a hit outside its directory")
		}
		rel = append(rel, filepath.ToSlash(rp))
	}
	return r.globListing(format, base, rel, pattern)
}
