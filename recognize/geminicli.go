package recognize

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

// Gemini CLI's tools (@google/gemini-cli 0.61.0; formats captured from the
// real binary into testdata/gemini). Call.Output is the tool's llmContent,
// the text its functionResponse carries before any hook context; Cwd is the
// hook's cwd (the project root).

// gcNotice is read_file's head when it shows a window (asked for, or a file
// cut at 2000 lines); N counts the pieces of the text split at "\n", so a
// final newline adds an empty last "line".
const gcNotice = "\nIMPORTANT: The file content has been truncated.\n" +
	"Status: Showing lines %d-%d of %d total lines.\n" +
	"Action: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. " +
	"For example, to read the next section of the file, use start_line: %d.\n\n" +
	"--- FILE CONTENT (truncated) ---\n"

var gcNoticeRE = lazyRegexp(`\A\nIMPORTANT: The file content has been truncated\.\nStatus: Showing lines (\d+)-(\d+) of (\d+) total lines\.\n`)

func (r *recognizer) geminiCLI() Result {
	if r.call.Error {
		return event("gemini-cli/error", "the tool reported an error")
	}
	switch r.call.Tool {
	case "read_file":
		return r.gcReadFile()
	case "grep_search", "search_file_content":
		return r.gcGrep()
	case "glob":
		return r.gcGlob()
	case "list_directory":
		return r.gcListDirectory()
	case "run_shell_command":
		return r.gcShell()
	case "replace", "write_file":
		return r.gcWrite()
	}
	if strings.HasPrefix(r.call.Tool, "mcp_") {
		return event("gemini-cli/mcp", "an MCP tool")
	}
	return event("gemini-cli/"+r.call.Tool, "a tool that shows no file content")
}

// gcWrite is replace's and write_file's result: the file at file_path was
// written (the "updated code" the output shows is not tracked).
func (r *recognizer) gcWrite() Result {
	format := "gemini-cli/" + r.call.Tool
	p := r.abs(r.str("file_path"))
	if p == "" {
		return event(format, "no file_path")
	}
	return Result{Kind: KindWrite, Format: format, Writes: []string{p}}
}

// gcReadFile is read_file: the whole file's raw text, or a window after
// gcNotice.
func (r *recognizer) gcReadFile() Result {
	const format = "gemini-cli/read_file"
	path := r.abs(r.str("file_path"))
	if path == "" {
		return event(format, "no file_path")
	}
	// The output is taken as the file's text then, as every read's is: the server compares it
	// with the file (a change since is an outside change), and an audit knows the file only
	// from what the session showed.
	out := r.call.Output
	m := gcNoticeRE().FindStringSubmatch(out)
	if m == nil {
		if strings.Contains(out, "\r") {
			return event(format, "carriage returns in the output")
		}
		shown := splitFile(out)
		ends := strings.HasSuffix(out, "\n")
		res := Result{Kind: KindRead, Format: format, Parts: []Part{{Path: path, Text: join(shown)}}}
		res.render = func(ps []Part) string {
			s := ps[0].Text
			if s != "" && ends {
				s += "\n"
			}
			return s
		}
		return res
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	n, _ := strconv.Atoi(m[3])
	head := fmt.Sprintf(gcNotice, a, b, n, b+1)
	body, ok := strings.CutPrefix(out, head)
	if !ok {
		return event(format, "an unknown read_file notice")
	}
	if a < 1 || b < a {
		return event(format, "no line shown")
	}
	shown := strings.Split(body, "\n")
	if len(shown) != b-a+1 {
		return event(format, "a window whose line count disagrees with its notice")
	}
	// The last piece is the empty "line" after a final newline when the window reached it.
	phantom := b == n && shown[len(shown)-1] == ""
	if phantom {
		shown = shown[:len(shown)-1]
	}
	if len(shown) == 0 {
		return event(format, "no line shown")
	}
	if strings.Contains(body, "\r") {
		return event(format, "carriage returns in the output")
	}
	end := a + len(shown) - 1
	part := Part{Path: path, Start: a, End: end, Text: join(shown)}
	if b == n {
		part.Total = end // the window reached the end: the file's line count is known
	}
	res := Result{Kind: KindRead, Format: format, Parts: []Part{part}}
	res.render = func(ps []Part) string { return r.gcRenderWindow(ps[0], phantom, n) }
	return res
}

// gcRenderWindow shows p as read_file would now; toEnd: the window reached
// the end of the file, its empty last "line" included; n0: the notice's
// total when the read was made (kept when nothing newer is known).
func (r *recognizer) gcRenderWindow(p Part, toEnd bool, n0 int) string {
	lines := textLines(p)
	start := max(p.Start, 1)
	n, final := n0, true
	switch data, err := r.readRaw(p.Path); {
	case err == nil:
		s := strings.ReplaceAll(string(data), "\r\n", "\n")
		total := len(splitFile(s))
		final = strings.HasSuffix(s, "\n") || s == ""
		n = total
		if final {
			n++ // the empty piece after the final newline
		}
	case p.Total > 0:
		n = p.Total + 1
	}
	total := n
	if final {
		total--
	}
	end := start + len(lines) - 1
	body := join(lines)
	if toEnd && end == total && final {
		end, body = n, body+"\n"
	}
	return fmt.Sprintf(gcNotice, start, end, n, end+1) + body
}

func (r *recognizer) readRaw(path string) ([]byte, error) {
	if r.files == nil {
		return nil, fs.ErrNotExist
	}
	return r.files.ReadFile(path)
}

// gcGrepHead is the grep tool's first line (the GrepTool that runs when
// ripgrep is not installed: git grep, system grep or its own walk).
var gcGrepHead = lazyRegexp(`\AFound \d+ match(?:es)? for pattern "(?:[^"\\\n]|\\.)*" in (?:the workspace directory|path "([^"\n]*)")(?: \(filter: "[^"\n]*"\))?:\n---\n`)

// gcGrep is grep_search (and its old name search_file_content): per file
// "File: REL" and "L<n>: text" rows between "---" lines; one part per run
// of consecutive hit lines.
func (r *recognizer) gcGrep() Result {
	const format = "gemini-cli/grep_search"
	out := r.call.Output
	if names, _ := r.args["names_only"].(bool); names {
		return event(format, "file names only")
	}
	m := gcGrepHead().FindStringSubmatch(out)
	if m == nil {
		return event(format, "no hits in a known format")
	}
	dir := r.call.Cwd
	if d := r.str("dir_path"); d != "" {
		dir = resolve(dir, d)
	}
	if m[1] != "" {
		dir = resolve(r.call.Cwd, m[1])
	}
	if !filepath.IsAbs(dir) {
		return event(format, "no absolute directory")
	}
	head := out[:len(m[0])]
	rest, ok := strings.CutSuffix(out[len(m[0]):], "\n---")
	if !ok {
		return event(format, "no closing separator")
	}
	type block struct {
		rel     string
		parts   []int // indexes into parts
		phantom bool  // a last context row past the file's end (the empty piece after its final newline)
	}
	var blocks []block
	var parts []Part
	var seps [][]byte // per part, each line's separator: ':' a hit, '-' a context line
	for _, blk := range strings.Split(rest, "\n---\n") {
		rows := strings.Split(blk, "\n")
		rel, ok := strings.CutPrefix(rows[0], "File: ")
		if !ok || len(rows) < 2 {
			return event(format, "a file block without its name or hits")
		}
		path := resolve(dir, rel)
		b := block{rel: rel}
		prev := 0
		for k, row := range rows[1:] {
			n, sep, text, ok := gcGrepRow(row)
			if !ok || n <= prev {
				return event(format, "a row that is not L<n>: text or L<n>- text, in order")
			}
			if sep == '-' && text == "" && k == len(rows)-2 && r.pastEnd(path, n) {
				b.phantom = true
				break
			}
			if n == prev+1 && len(b.parts) > 0 {
				last := b.parts[len(b.parts)-1]
				parts[last].End, parts[last].Text = n, parts[last].Text+"\n"+text
				seps[last] = append(seps[last], sep)
			} else {
				b.parts = append(b.parts, len(parts))
				parts = append(parts, Part{Path: path, Start: n, End: n, Text: text})
				seps = append(seps, []byte{sep})
			}
			prev = n
		}
		blocks = append(blocks, b)
	}
	res := Result{Kind: KindRead, Format: format, Parts: parts}
	res.render = func(ps []Part) string {
		var b strings.Builder
		b.WriteString(head)
		for i, blk := range blocks {
			if i > 0 {
				b.WriteString("\n---\n")
			}
			b.WriteString("File: " + blk.rel)
			end := 0
			for _, k := range blk.parts {
				for j, t := range textLines(ps[k]) {
					sep := byte(':')
					if j < len(seps[k]) {
						sep = seps[k][j]
					}
					fmt.Fprintf(&b, "\nL%d%c %s", ps[k].Start+j, sep, t)
					end = ps[k].Start + j
				}
			}
			if blk.phantom {
				fmt.Fprintf(&b, "\nL%d- ", end+1)
			}
		}
		b.WriteString("\n---")
		return b.String()
	}
	return res
}

// gcGrepRow splits "L<n>: text" (a hit) or "L<n>- text" (a context line).
func gcGrepRow(row string) (n int, sep byte, text string, ok bool) {
	rest, ok := strings.CutPrefix(row, "L")
	if !ok {
		return 0, 0, "", false
	}
	i := strings.IndexAny(rest, ":-")
	if i < 1 || i+1 >= len(rest) || rest[i+1] != ' ' {
		return 0, 0, "", false
	}
	n, ok = atoi(rest[:i])
	if !ok || n < 1 {
		return 0, 0, "", false
	}
	return n, rest[i], rest[i+2:], true
}

// pastEnd reports whether line n is past the end of the file at path: the
// file has n-1 lines, or (the file unknown) nothing says otherwise.
func (r *recognizer) pastEnd(path string, n int) bool {
	if file, ok := r.lines(path); ok {
		return len(file) == n-1
	}
	return true
}

var (
	gcGlobHead  = lazyRegexp(`\AFound \d+ file\(s\) matching "[^"\n]*" within ([^\n]*?)(?:, sorted by modification time \(newest first\))?:\n`)
	gcGlobNone  = lazyRegexp(`\ANo files found matching pattern "[^"\n]*" within ([^\n]*)\z`)
	gcListHead  = lazyRegexp(`\ADirectory listing for ([^\n]*):\n`)
	gcListFile  = lazyRegexp(`\A(.*) \(\d+ bytes\)\z`)
	gcIgnoredRE = lazyRegexp(`\A\(\d+ ignored\)\z`)
)

// gcGlob is glob: the absolute paths that match, newest first (a listing
// source: the order is not kept).
func (r *recognizer) gcGlob() Result {
	const format = "gemini-cli/glob"
	out := r.call.Output
	pattern := r.str("pattern")
	if pattern == "" {
		return event(format, "no pattern")
	}
	var dir string
	var rows []string
	if m := gcGlobNone().FindStringSubmatch(out); m != nil {
		dir = m[1]
	} else if m := gcGlobHead().FindStringSubmatch(out); m != nil {
		dir, rows = m[1], strings.Split(out[len(m[0]):], "\n")
	} else {
		return event(format, "not a glob result in a known format")
	}
	if !filepath.IsAbs(dir) {
		return event(format, "no absolute directory")
	}
	var rel []string
	for _, row := range rows {
		if !filepath.IsAbs(row) {
			return event(format, "a row that is not an absolute path")
		}
		rp, err := filepath.Rel(dir, row)
		if err != nil || strings.HasPrefix(rp, "..") {
			return event(format, "a hit outside its directory")
		}
		rel = append(rel, filepath.ToSlash(rp))
	}
	// glob matches without regard to case unless told; a listing source's glob does not, so a
	// file that differs only in case would be missed later, never misreported.
	return r.fitListing(format, dir, rel, listQuery{depth: 0, hidden: true, ignore: []string{".git"}, glob: strings.TrimPrefix(pattern, "./")})
}

// gcListDirectory is list_directory: "[DIR] name" and "name (N bytes)"
// rows, then "(N ignored)" when git or gemini ignore rules hid some.
func (r *recognizer) gcListDirectory() Result {
	const format = "gemini-cli/list_directory"
	out := r.call.Output
	m := gcListHead().FindStringSubmatch(out)
	if m == nil || !filepath.IsAbs(m[1]) {
		return event(format, "not a directory listing in a known format")
	}
	body := out[len(m[0]):]
	if i := strings.LastIndex(body, "\n\n"); i >= 0 && gcIgnoredRE().MatchString(body[i+2:]) {
		body = body[:i]
	}
	var entries []string
	for _, row := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(row, "[DIR] "); ok {
			entries = append(entries, name+"/")
		} else if fm := gcListFile().FindStringSubmatch(row); fm != nil {
			entries = append(entries, fm[1])
		} else {
			return event(format, "a row that is not an entry")
		}
	}
	return r.fitListing(format, m[1], entries, listQuery{depth: 1, hidden: true})
}

// gcShell is run_shell_command: "<untrusted_context>\nOutput: OUT\n" then
// "Exit Code: N" when not 0 (and other notes), "Process Group PGID: N",
// "</untrusted_context>". OUT is the command's output with its leading and
// trailing whitespace trimmed.
func (r *recognizer) gcShell() Result {
	const format = "gemini-cli/run_shell_command"
	command := r.str("command")
	if command == "" {
		return event(format, "no command")
	}
	if bg, _ := r.args["is_background"].(bool); bg {
		return event(format, "a background command")
	}
	body, ok := strings.CutPrefix(r.call.Output, "<untrusted_context>\nOutput: ")
	if ok {
		body, ok = strings.CutSuffix(body, "\n</untrusted_context>")
	}
	if !ok {
		return event(format, "not a shell result in a known format")
	}
	i := strings.LastIndex(body, "\nProcess Group PGID: ")
	if i < 0 {
		return event(format, "no process group line")
	}
	out := body[:i]
	for _, note := range []string{"\nExit Code: ", "\nError: ", "\nSignal: ", "\nBackground PIDs: "} {
		if strings.Contains(out, note) {
			return event(format, "the command failed, or left notes after its output")
		}
	}
	if out == "(empty)" {
		return event(format, "no output")
	}
	if out != strings.TrimSpace(out) {
		return event(format, "an output Gemini CLI would have trimmed")
	}
	cwd := r.call.Cwd
	if d := r.str("dir_path"); d != "" {
		cwd = resolve(cwd, d)
	}
	head, tail := r.call.Output[:len("<untrusted_context>\nOutput: ")], r.call.Output[len("<untrusted_context>\nOutput: ")+len(out):]
	var first Result
	for k, raw := range shellCandidates(out) {
		res := r.terminal(command, cwd, raw, false)
		if k == 0 {
			first = res
		}
		if res.Kind == KindEvent {
			continue
		}
		if res.render != nil {
			inner := res.render
			res.render = func(ps []Part) string { return head + strings.TrimSpace(inner(ps)) + tail }
		}
		return res
	}
	return first
}

// shellCandidates are the outputs a trimmed OUT may have been: with its
// final newline, with cat -n's padding before the first number, as it is.
func shellCandidates(out string) []string {
	var c []string
	if n, rest, ok := strings.Cut(out, "\t"); ok {
		if _, isNum := atoi(n); isNum && len(n) < 6 {
			c = append(c, strings.Repeat(" ", 6-len(n))+n+"\t"+rest+"\n")
		}
	}
	return append(c, out+"\n", out)
}
