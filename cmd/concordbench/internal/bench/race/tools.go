package race

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Tool names.
const (
	ToolGrep   = "grep"
	ToolGlob   = "glob"
	ToolRead   = "read_file"
	ToolAnswer = "answer"
	ToolDiff   = "diff"
	ToolEdit   = "edit"
	ToolRun    = "run"
)

// MaxGrepHits caps a grep's output.
const MaxGrepHits = 50

// Call is one parsed tool call.
type Call struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Path    string `json:"path,omitempty"`
	Start   int    `json:"start_line,omitempty"`
	End     int    `json:"end_line,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	Answer  string `json:"answer,omitempty"`
	Old     string `json:"old_str,omitempty"`
	New     string `json:"new_str,omitempty"`
	Command string `json:"command,omitempty"`
}

// ParseCall decodes a tool call's JSON arguments. Numbers given as strings
// ("3") are accepted: models send both.
func ParseCall(id, name, args string) (Call, error) {
	c := Call{ID: id, Name: name}
	var m map[string]any
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return c, fmt.Errorf("%s arguments: %w", name, err)
	}
	str := func(k string) string {
		if v, ok := m[k].(string); ok {
			return v
		}
		return ""
	}
	num := func(k string) int {
		switch v := m[k].(type) {
		case float64:
			return int(v)
		case string:
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
		return 0
	}
	c.Path, c.Pattern, c.Answer = str("path"), str("pattern"), str("answer")
	c.Old, c.New, c.Command = str("old_str"), str("new_str"), str("command")
	c.Start, c.End = num("start_line"), num("end_line")
	return c, nil
}

// ReadInfo says what a read_file showed.
type ReadInfo struct {
	File       string
	Start, End int      // 1-based inclusive, clamped to the file
	Lines      []string // raw lines shown
	Version    string   // of the bytes read
}

// Hit is one grep match.
type Hit struct {
	File    string
	Line    int
	Text    string
	Version string // of the file bytes grep read
}

// Result is a tool's output plus what it showed, for the race and Concord.
type Result struct {
	Output string
	Read   *ReadInfo
	Hits   []Hit
	// Edit is the snippet an edit showed (its file's lines after the
	// write); Before is the file's content before the agent's own write.
	Edit   *ReadInfo
	Before string
}

// RenderEdit formats an edit's result as OpenHands' str_replace_editor
// does: a header, the edited lines with their numbers, a reminder.
func RenderEdit(path string, start int, lines []string) string {
	return fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n%s\nReview the changes and make sure they are as expected. Edit the file again if necessary.",
		path, path, RenderRead(start, lines))
}

// RenderRead formats lines as read_file shows them: "N: text".
func RenderRead(start int, lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d: %s", start+i, l)
	}
	return b.String()
}

// RenderHit formats one grep hit: "path:N:text".
func RenderHit(file string, line int, text string) string {
	return fmt.Sprintf("%s:%d:%s", file, line, text)
}

// Exec runs grep, glob or read_file. Bad arguments give an error output
// (the agent reads it and may retry), never a Go error.
func (w *Workspace) Exec(c Call) Result {
	switch c.Name {
	case ToolGlob:
		return w.glob(c.Pattern)
	case ToolGrep:
		return w.grep(c.Pattern)
	case ToolRead:
		return w.read(c.Path, c.Start, c.End)
	case ToolEdit:
		return w.edit(c.Path, c.Old, c.New)
	case ToolRun:
		return w.run(c.Command)
	}
	return Result{Output: fmt.Sprintf("error: unknown tool %q", c.Name)}
}

func (w *Workspace) glob(pattern string) Result {
	if pattern == "" {
		pattern = "*"
	}
	var out []string
	for _, f := range w.files {
		ok, err := path.Match(pattern, f)
		if err != nil {
			return Result{Output: fmt.Sprintf("error: bad glob %q: %v", pattern, err)}
		}
		if ok || pattern == "**" || pattern == "**/*" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return Result{Output: "no files match " + pattern}
	}
	return Result{Output: strings.Join(out, "\n")}
}

func (w *Workspace) grep(pattern string) Result {
	if pattern == "" {
		return Result{Output: "error: grep needs a pattern"}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		// Models often send literal text with regex metacharacters.
		re = regexp.MustCompile(regexp.QuoteMeta(pattern))
	}
	var res Result
	var lines []string
	total := 0
	for _, f := range w.files {
		b, err := os.ReadFile(w.Abs(f))
		if err != nil {
			continue
		}
		v := Version(b)
		for i, l := range Lines(string(b)) {
			if !re.MatchString(l) {
				continue
			}
			total++
			if len(res.Hits) < MaxGrepHits {
				res.Hits = append(res.Hits, Hit{File: f, Line: i + 1, Text: l, Version: v})
				lines = append(lines, RenderHit(f, i+1, l))
			}
		}
	}
	switch {
	case total == 0:
		res.Output = "no matches for " + pattern
	case total > MaxGrepHits:
		res.Output = strings.Join(lines, "\n") + fmt.Sprintf("\n[%d more matches not shown]", total-MaxGrepHits)
	default:
		res.Output = strings.Join(lines, "\n")
	}
	return res
}

func (w *Workspace) read(p string, start, end int) Result {
	f, err := w.Resolve(p)
	if err != nil {
		return Result{Output: "error: " + err.Error()}
	}
	b, err := os.ReadFile(w.Abs(f))
	if err != nil {
		return Result{Output: "error: " + err.Error()}
	}
	lines := Lines(string(b))
	if start < 1 {
		start = 1
	}
	if end < 1 || end > len(lines) {
		end = len(lines)
	}
	if start > end {
		return Result{Output: fmt.Sprintf("error: %s has %d lines; start_line %d is past the end", f, len(lines), start)}
	}
	shown := lines[start-1 : end]
	return Result{
		Output: RenderRead(start, shown),
		Read:   &ReadInfo{File: f, Start: start, End: end, Lines: shown, Version: Version(b)},
	}
}

// snippetContext is the number of lines an edit result shows around the
// change (OpenHands' SNIPPET_CONTEXT_WINDOW).
const snippetContext = 4

func (w *Workspace) edit(p, old, repl string) Result {
	f, err := w.Resolve(p)
	if err != nil {
		return Result{Output: "error: " + err.Error()}
	}
	b, err := os.ReadFile(w.Abs(f))
	if err != nil {
		return Result{Output: "error: " + err.Error()}
	}
	content := string(b)
	switch n := strings.Count(content, old); {
	case old == "" || n == 0:
		return Result{Output: fmt.Sprintf("error: no replacement was performed, old_str did not appear verbatim in %s.", w.DisplayPath(f))}
	case n > 1:
		return Result{Output: fmt.Sprintf("error: no replacement was performed, old_str appears %d times in %s.", n, w.DisplayPath(f))}
	}
	at := strings.Index(content, old)
	after := content[:at] + repl + content[at+len(old):]
	if err := writeInPlace(w.Abs(f), after); err != nil {
		return Result{Output: "error: " + err.Error()}
	}
	lines := Lines(after)
	first := strings.Count(content[:at], "\n") + 1
	last := first + strings.Count(strings.TrimSuffix(repl, "\n"), "\n")
	start, end := max(1, first-snippetContext), min(len(lines), last+snippetContext)
	shown := lines[start-1 : end]
	return Result{
		Output: RenderEdit(w.DisplayPath(f), start, shown),
		Edit:   &ReadInfo{File: f, Start: start, End: end, Lines: shown, Version: Version([]byte(after))},
		Before: content,
	}
}

// run stands in for a test command: its output is a function of the
// command and of how many commands ran before (so outputs differ).
func (w *Workspace) run(cmd string) Result {
	if strings.TrimSpace(cmd) == "" {
		return Result{Output: "error: run needs a command"}
	}
	w.runs++
	h := 0
	for _, c := range cmd {
		h = h*31 + int(c)
	}
	n := 4 + (h%12+12)%12
	return Result{Output: fmt.Sprintf("$ %s\n%s [100%%]\n%d passed in %d.%02ds", cmd, strings.Repeat(".", n), n, w.runs%3, (w.runs*37)%100)}
}
