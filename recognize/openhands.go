package recognize

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// OpenHands tools (openhands-tools 1.58.2).
const (
	catNHeader  = "Here's the result of running `cat -n` on "
	clippedMark = "<response clipped>"
	// terminalClip is what openhands-sdk's maybe_truncate puts where it cut
	// a terminal output's middle (DEFAULT_TRUNCATE_NOTICE, 1.58.2).
	terminalClip  = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"
	dirViewHeader = "Here's the files and directories up to 2 levels deep in "
	// terminalMax is openhands-tools' MAX_CMD_OUTPUT_SIZE less a margin:
	// longer output is cut in the middle.
	terminalMax = 30000 - 500
)

var fileEditorWrites = map[string]bool{"create": true, "str_replace": true, "insert": true, "undo_edit": true}

func (r *recognizer) openhands() Result {
	if r.call.Error {
		return event("openhands/error", "the tool reported an error")
	}
	switch r.call.Tool {
	case "file_editor", "planning_file_editor", "str_replace_editor":
		return r.fileEditor()
	case "terminal", "bash", "execute_bash":
		return r.openhandsTerminal()
	case "read_file":
		return r.readFile()
	case "write_file", "edit":
		return r.geminiWrite()
	case "apply_patch":
		return r.applyPatch()
	}
	return event("openhands/"+r.call.Tool, "a tool that shows no file content")
}

func (r *recognizer) fileEditor() Result {
	cmd, path := r.str("command"), r.str("path")
	if path == "" {
		return event("file_editor", "no path")
	}
	res := Result{Format: "file_editor/" + cmd}
	if fileEditorWrites[cmd] {
		res.Kind, res.Writes = KindWrite, []string{path}
	}
	if cmd == "create" {
		return res // shows no content
	}
	out := r.call.Output
	if cmd == "view" && strings.HasPrefix(out, dirViewHeader) {
		return r.dirView(path, out)
	}
	l, ok := parseListing(out)
	if !ok {
		if res.Kind == "" {
			return event(res.Format, "no numbered listing in the output")
		}
		return res
	}
	whole := false
	switch cmd {
	case "view":
		_, ranged := r.args["view_range"]
		whole = r.args != nil && !ranged
	case "undo_edit":
		whole = true // undo shows the whole restored file
	}
	whole = whole && !l.clipped && l.start == 1
	if !whole && len(l.lines) == 0 {
		return res
	}
	part := Part{Path: path, Text: join(l.lines)}
	if cmd == "view" {
		l.view, l.requested = true, r.viewRangeEnd()
	}
	if !whole {
		part.Start, part.End = l.start, l.start+len(l.lines)-1
	}
	res.Kind, res.Parts = KindRead, []Part{part}
	// The renderer keeps the listing's frame, not its lines (the part holds
	// them); a clipped view keeps the text it showed, to tell a change.
	kept := l
	if l.clipped {
		kept.clippedText = part.Text
	}
	kept.lines = nil
	res.render = func(ps []Part) string { return kept.render(ps[0]) }
	return res
}

// listing is a `cat -n` listing found in a file_editor output, with the
// text around it kept verbatim to render it again.
type listing struct {
	prefix, suffix string
	start          int
	lines          []string
	clipped        bool
	ends           bool
	// view: a view command, whose "NOTE: We only show up to N ..." before a
	// view_range past the end is kept true; requested is that range's end.
	view bool
	// clippedText is a clipped view's text as shown (render keeps the
	// clip notice only while the part still shows it).
	clippedText string
	requested   int
}

// pastEOFRE is file_editor's note before a view_range that ran past the end.
var pastEOFRE = lazyRegexp(`NOTE: We only show up to \d+ since there're only \d+ lines in this file\.\n`)

// viewRangeEnd is the end of a view_range [a, b] with b > 0; 0 otherwise.
func (r *recognizer) viewRangeEnd() int {
	vr, _ := r.args["view_range"].([]any)
	if len(vr) != 2 {
		return 0
	}
	if f, ok := vr[1].(float64); ok && f > 0 && f == float64(int(f)) {
		return int(f)
	}
	return 0
}

// pastEOF is the note as the tool would print it before these lines now:
// the file's line count while the range asked for more, else nothing.
func (l listing) pastEOF(start int, lines []string, total int) string {
	if total == 0 { // unknown: a range that stops short of what was asked ran to the end
		end := start + len(lines) - 1
		if l.requested != 0 && end >= l.requested {
			return ""
		}
		total = end
	}
	if l.requested != 0 && l.requested <= total {
		return ""
	}
	return fmt.Sprintf("NOTE: We only show up to %d since there're only %d lines in this file.\n", total, total)
}

// clipNotice is a clipped view's tail cut to the clip notice: the cut line
// and what followed it were old text at old numbers.
func clipNotice(suffix string) string {
	mark := strings.Index(suffix, clippedMark)
	end := strings.Index(suffix[max(mark, 0):], "</NOTE>")
	if mark < 0 || end < 0 {
		return suffix
	}
	line := strings.LastIndexByte(suffix[:mark], '\n') + 1
	return suffix[:line] + suffix[mark:mark+end+len("</NOTE>")] + "\n"
}

func parseListing(out string) (listing, bool) {
	at := strings.Index(out, catNHeader)
	if at < 0 {
		return listing{}, false
	}
	nl := strings.IndexByte(out[at:], '\n')
	if nl < 0 {
		return listing{}, false
	}
	body := at + nl + 1
	l := listing{prefix: out[:body], start: 1, ends: true}
	pos := body
	for pos < len(out) {
		end := strings.IndexByte(out[pos:], '\n')
		raw := out[pos:]
		if end >= 0 {
			raw = out[pos : pos+end]
		}
		n, text, ok := numbered(raw, true, false)
		if !ok || len(l.lines) > 0 && n != l.start+len(l.lines) {
			break
		}
		if i := strings.Index(text, clippedMark); i >= 0 {
			// The tool cut the middle of its output: keep the complete lines before it.
			l.clipped = true
			if len(l.lines) == 0 {
				l.start = n
			}
			l.suffix = out[pos:]
			return l, true
		}
		if len(l.lines) == 0 {
			l.start = n
		}
		l.lines = append(l.lines, text)
		if end < 0 {
			pos, l.ends = len(out), false
			break
		}
		pos += end + 1
	}
	l.suffix = out[pos:]
	// A clip at a line's end leaves no cut line: the notice follows the lines.
	l.clipped = l.clipped || strings.Contains(l.suffix, clippedMark)
	return l, true
}

func (l listing) render(p Part) string {
	start := p.Start
	if p.Whole() {
		start = 1
	}
	lines := textLines(p)
	prefix, suffix := l.prefix, l.suffix
	if loc := pastEOFRE().FindStringIndex(prefix); l.view && loc != nil {
		prefix = prefix[:loc[0]] + l.pastEOF(start, lines, p.Total) + prefix[loc[1]:]
	}
	if l.clipped && p.Text != l.clippedText {
		suffix = clipNotice(suffix)
	}
	var b strings.Builder
	b.WriteString(prefix)
	for i, t := range lines {
		b.WriteString(catN(start+i, t))
		if i < len(lines)-1 || l.ends || suffix != "" {
			b.WriteByte('\n')
		}
	}
	b.WriteString(suffix)
	return b.String()
}

// dirView is file_editor's view of a directory: the directory, then each
// entry not starting with "." two levels deep, one absolute path a line.
func (r *recognizer) dirView(path, out string) Result {
	const format = "file_editor/view-dir"
	head, body, ok := strings.Cut(out, ":\n")
	if !ok || head != dirViewHeader+path+", excluding hidden items" || strings.Contains(out, clippedMark) {
		return event(format, "a directory view cut or spelled otherwise")
	}
	root := strings.TrimRight(path, "/")
	if root == "" || !r.isDir(root) {
		return event(format, "not a directory now")
	}
	if st, err := r.files.Lstat(root); err != nil || !st.IsDir() {
		return event(format, "a symlinked directory")
	}
	body, _, _ = strings.Cut(body, "\n\n")
	entries := strings.Split(body, "\n")
	if entries[0] != root+"/" {
		return event(format, "the view does not start with its directory")
	}
	var rel []string
	for _, e := range entries[1:] {
		name, ok := strings.CutPrefix(e, root+"/")
		if !ok || name == "" {
			return event(format, "an entry outside the directory")
		}
		dir := strings.HasSuffix(name, "/")
		name = strings.TrimSuffix(name, "/")
		segs := strings.Split(name, "/")
		if len(segs) > 2 {
			return event(format, "an entry deeper than 2 levels")
		}
		full := filepath.Join(root, name)
		if st, err := r.files.Lstat(full); err == nil {
			if st.Mode()&fs.ModeSymlink != 0 { // a symlink: Concord lists it as a plain entry
				if dir && len(segs) == 1 {
					return event(format, "a symlinked directory entry")
				}
				dir = false
			} else {
				dir = st.IsDir()
			}
		}
		if dir {
			name += "/"
		}
		rel = append(rel, name)
	}
	text := canonical(rel)
	return Result{Kind: KindListing, Format: format,
		Parts: []Part{{Path: root, URI: listingURI(root, listQuery{depth: 2}), Text: text}}}
}

// canonical is a listing's canonical text: unique entries sorted bytewise.
func canonical(entries []string) string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return join(out)
}

func (r *recognizer) openhandsTerminal() Result {
	const format = "terminal"
	command := r.str("command")
	if command == "" {
		return event(format, "no command")
	}
	if is, _ := r.args["is_input"].(bool); is {
		return event(format, "input to a running command")
	}
	if r.call.ExitCode == nil || *r.call.ExitCode != 0 {
		return event(format, "the command did not exit 0")
	}
	if r.call.Truncated {
		return event(format, "the output was cut")
	}
	if head, tail, ok := strings.Cut(r.call.Output, terminalClip); ok {
		// The SDK cut the middle (openhands-sdk's maybe_truncate): what
		// precedes and follows its notice is the command's output.
		return r.terminalCut(command, r.call.Cwd, head, tail)
	}
	if len(r.call.Output) >= terminalMax {
		return event(format, "the output was cut")
	}
	return r.terminal(command, r.call.Cwd, r.call.Output, !strings.Contains(r.call.Output, "\t"))
}
