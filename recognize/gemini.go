package recognize

import (
	"fmt"
	"path/filepath"
	"strings"
)

// OpenHands' Gemini-style file tools (openhands-tools 1.58.2, tools/gemini)
// and apply_patch.

const readFileHeader = "Read file: "

// showingRE is read_file's header of a read that stopped before the end:
// the head, the path as the model gave it, and the limit it read with.
var showingRE = lazyRegexp(`\A(Read file: .*?) \(showing lines \d+-\d+ of \d+\) ` +
	`To read more, use: read_file\(file_path='(.*)', offset=\d+, limit=(\d+)\)\z`)

// readFile is read_file's numbered read: a "Read file: PATH" header (with
// "(showing lines a-b of n) ..." when it stopped early), a blank line, then
// the lines as "%6d  %s".
func (r *recognizer) readFile() Result {
	const format = "read_file"
	header, body, ok := strings.Cut(r.call.Output, "\n\n")
	if !ok || !strings.HasPrefix(header, readFileHeader) || strings.Contains(header, "\n") {
		return event(format, "no read_file header")
	}
	raw := strings.Split(body, "\n")
	ends := raw[len(raw)-1] == ""
	if ends {
		raw = raw[:len(raw)-1]
	}
	start, lines := 1, make([]string, 0, len(raw))
	for k, ln := range raw {
		n, text, ok := numbered(ln, false, false)
		// Exactly as read_file numbers ("%6d  "): a line numbered otherwise
		// is not its output, and would not render back as shown.
		if !ok || k > 0 && n != start+len(lines) || ln != fmt.Sprintf("%6d  %s", n, text) {
			return event(format, "not a numbered read")
		}
		if k == 0 {
			start = n
		}
		lines = append(lines, text)
	}
	path := r.str("file_path")
	shown := strings.TrimPrefix(header, readFileHeader)
	if m := showingRE().FindStringSubmatch(header); m != nil {
		shown = strings.TrimPrefix(m[1], readFileHeader)
	}
	if filepath.IsAbs(shown) {
		path = shown
	}
	if path = r.abs(path); path == "" {
		return event(format, "no absolute path")
	}
	_, offset := r.args["offset"]
	whole := start == 1 && !offset && !r.call.Truncated && !strings.Contains(header, " (showing lines ")
	if !whole && len(lines) == 0 {
		return event(format, "no line shown")
	}
	part := Part{Path: path, Text: join(lines)}
	// One empty line shown is line 1, not an empty file: as a whole read
	// its text ("") would be the file with no line.
	if !whole || len(lines) == 1 && lines[0] == "" {
		part.Start, part.End = start, start+len(lines)-1
	}
	res := Result{Kind: KindRead, Format: format, Parts: []Part{part}}
	res.render = func(ps []Part) string { return renderReadFile(header, ends, ps[0]) }
	return res
}

// renderReadFile shows p as read_file would now, its header kept true: a
// read that now reaches the end says nothing of more lines.
func renderReadFile(header string, ends bool, p Part) string {
	start := p.Start
	if p.Whole() {
		start = 1
	}
	lines := textLines(p)
	end := start + len(lines) - 1
	if m := showingRE().FindStringSubmatch(header); m != nil && p.Total > 0 {
		header = m[1]
		if end < p.Total {
			header = fmt.Sprintf("%s (showing lines %d-%d of %d) To read more, use: read_file(file_path='%s', offset=%d, limit=%s)",
				m[1], start, end, p.Total, m[2], end, m[3])
		}
	}
	var b strings.Builder
	b.WriteString(header + "\n\n")
	for i, t := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6d  %s", start+i, t)
	}
	if len(lines) > 0 && ends {
		b.WriteByte('\n')
	}
	return b.String()
}

// geminiWrite is write_file's and edit's result: the file at file_path was
// written; what the output says of it is not content.
func (r *recognizer) geminiWrite() Result {
	path := r.abs(r.str("file_path"))
	if path == "" {
		return event(r.call.Tool, "no absolute file_path")
	}
	return Result{Kind: KindWrite, Format: r.call.Tool, Writes: []string{path}}
}

// applyPatch is apply_patch's result: the files its patch names.
func (r *recognizer) applyPatch() Result {
	const format = "apply_patch"
	var writes []string
	seen := map[string]bool{}
	for _, name := range patchFiles(r.str("patch")) {
		p := r.abs(name)
		if p == "" {
			return event(format, "a relative path without a working directory")
		}
		if !seen[p] {
			seen[p] = true
			writes = append(writes, p)
		}
	}
	if len(writes) == 0 {
		return event(format, "no file in the patch")
	}
	return Result{Kind: KindWrite, Format: format, Writes: writes}
}

// patchFiles are the paths a "*** Begin Patch" text adds, updates, deletes
// or moves to (the patch format of OpenHands' and OpenCode's apply_patch).
func patchFiles(patch string) []string {
	var out []string
	for _, ln := range strings.Split(patch, "\n") {
		ln = strings.TrimRight(ln, "\r")
		for _, op := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if name, ok := strings.CutPrefix(ln, op); ok && strings.TrimSpace(name) != "" {
				out = append(out, strings.TrimSpace(name))
			}
		}
	}
	return out
}

// abs is path made absolute against the call's working directory; "" when
// it cannot be.
func (r *recognizer) abs(path string) string {
	switch {
	case path == "":
		return ""
	case filepath.IsAbs(path):
		return filepath.Clean(path)
	case filepath.IsAbs(r.call.Cwd):
		return filepath.Join(r.call.Cwd, path)
	}
	return ""
}
