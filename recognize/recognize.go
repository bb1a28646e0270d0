// Package recognize decides what one tool result showed the model: which
// parts of which files (with the exact text shown per part), which files the
// tool wrote, which directory listings it showed, or that it is an event (an
// action's result, never tracked). It is a pure function of the tool call as
// the runtime has it and of the files as they are at observation time (read
// through Files), so the server (rpc) and the tests call it the same way.
//
// Shell commands are parsed with mvdan.cc/sh/v3/syntax, never split by hand.
package recognize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Runtimes this package knows the tools of.
const (
	OpenHands  = "openhands"
	OpenCode   = "opencode"
	ClaudeCode = "claude-code"
	GeminiCLI  = "gemini-cli"
	Codex      = "codex"
)

// runtimes is the one list of runtimes whose tools are recognized: the
// server and the audit accept exactly these names. A new runtime adds its
// recognizer here.
var runtimes = map[string]func(*recognizer) Result{
	OpenHands:  (*recognizer).openhands,
	OpenCode:   (*recognizer).opencode,
	ClaudeCode: (*recognizer).claudecode,
	GeminiCLI:  (*recognizer).geminiCLI,
	Codex:      (*recognizer).codex,
}

// Runtimes lists the runtimes Recognize knows, sorted.
func Runtimes() []string {
	names := make([]string, 0, len(runtimes))
	for n := range runtimes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Known reports whether Recognize knows runtime's tools.
func Known(runtime string) bool { _, ok := runtimes[runtime]; return ok }

// Call is one finished tool call as the runtime has it.
type Call struct {
	Runtime string          `json:"runtime"`             // one of Runtimes()
	Tool    string          `json:"tool"`                // the tool's name in that runtime
	Args    json.RawMessage `json:"arguments,omitempty"` // the call's arguments, as the model sent them
	Output  string          `json:"output"`              // exactly the text the model was shown
	// ExitCode of a command (nil: not a command, or unknown).
	ExitCode *int `json:"exitCode,omitempty"`
	// Cwd is the working directory the runtime reported: OpenHands' terminal
	// reports it after the command ran, OpenCode's bash the one it started in.
	Cwd string `json:"cwd,omitempty"`
	// Truncated: the runtime cut the output (a prefix lost, the middle
	// elided, a line limit); nothing shown can then be tied to a file.
	Truncated bool `json:"truncated,omitempty"`
	// Error: the runtime marked the result an error.
	Error bool `json:"error,omitempty"`
	// Metadata the runtime attached (OpenCode's read display, glob truncation).
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Kind is what a result is to Concord.
type Kind string

const (
	KindRead    Kind = "read"    // parts of files
	KindListing Kind = "listing" // a directory listing (a listing source)
	KindWrite   Kind = "write"   // the tool wrote files and showed no content
	KindQuery   Kind = "query"   // a function of many files (grep -l, find | grep): a query source
	KindEvent   Kind = "event"   // an action's result
)

// Part is one source the result showed: a file window, or a listing.
type Part struct {
	Path string `json:"path"` // absolute file or directory
	// URI is a listing source's URI (directory + query) or a query
	// source's (package query; Path is then its directory); "" for a file.
	URI string `json:"uri,omitempty"`
	// Start and End are the 1-based inclusive lines shown; 0, 0 means the
	// whole file.
	Start int `json:"start,omitempty"`
	End   int `json:"end,omitempty"`
	// Text is the raw lines shown, joined by "\n" (a listing: its canonical text).
	Text string `json:"text"`
	// Total is the file's line count when known (for rendering footers
	// such as "(End of file - total N lines)"); 0: unknown.
	Total int `json:"totalLines,omitempty"`
}

// Whole reports whether the part is the whole file.
func (p Part) Whole() bool { return p.Start == 0 }

// Result is what a call showed.
type Result struct {
	Kind Kind `json:"kind"`
	// Format names the recognizer, e.g. "terminal/grep" or "opencode/read".
	Format string   `json:"format,omitempty"`
	Parts  []Part   `json:"parts,omitempty"`
	Writes []string `json:"writes,omitempty"` // absolute paths the tool wrote
	Reason string   `json:"reason,omitempty"` // why an event or a query is not tracked
	// render shows the parts again in the tool's own format; nil when the
	// result is not tracked.
	render func([]Part) string
}

// Render shows parts (the result's parts with their current text and
// lines, in the same order) in the tool's own format: what the model would
// have been shown had it made the call now. "" when the result has no
// rendering (events, writes, listings the binding keeps as they are).
func (r Result) Render(parts []Part) string {
	if r.render == nil || len(parts) != len(r.Parts) {
		return ""
	}
	return r.render(parts)
}

// Renders reports whether Render can show the parts again.
func (r Result) Renders() bool { return r.render != nil }

// Renderer is what a result keeps to show its parts again: the tool's
// format alone, not the parts' text or the call's output, so a server that
// keeps it for a block's life keeps no second copy of what the tool showed.
type Renderer struct {
	n      int
	render func([]Part) string
}

// Renderer returns r's renderer (Render false for a result without one).
func (r Result) Renderer() Renderer { return Renderer{n: len(r.Parts), render: r.render} }

// Render shows parts as Result.Render does; ok is false when the result
// has no rendering or parts are not as many as the result's.
func (rn Renderer) Render(parts []Part) (text string, ok bool) {
	if rn.render == nil || len(parts) != rn.n {
		return "", false
	}
	return rn.render(parts), true
}

// Files reads the workspace at observation time, by absolute path.
type Files interface {
	ReadFile(path string) ([]byte, error)
	Stat(path string) (fs.FileInfo, error) // follows symlinks
	Lstat(path string) (fs.FileInfo, error)
	ReadDir(path string) ([]fs.DirEntry, error)
}

// OS reads the local file system; files larger than MaxBytes (default 16
// MiB) are refused.
type OS struct{ MaxBytes int64 }

// ErrTooLarge is a file larger than OS.MaxBytes.
var ErrTooLarge = errors.New("file too large to recognize against")

func (o OS) ReadFile(path string) ([]byte, error) {
	max := o.MaxBytes
	if max <= 0 {
		max = 16 << 20
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %w", path, ErrTooLarge)
	}
	return os.ReadFile(path)
}
func (OS) Stat(path string) (fs.FileInfo, error)      { return os.Stat(path) }
func (OS) Lstat(path string) (fs.FileInfo, error)     { return os.Lstat(path) }
func (OS) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }

// Recognize decides what call showed. An error is returned only for a call
// that is malformed (arguments that are not JSON); anything unknown is an
// event with its reason.
func Recognize(ctx context.Context, call Call, files Files) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var args map[string]any
	if len(call.Args) > 0 && string(call.Args) != "null" {
		if err := json.Unmarshal(call.Args, &args); err != nil {
			return Result{}, fmt.Errorf("recognize %s %s: arguments: %w", call.Runtime, call.Tool, err)
		}
	}
	r := &recognizer{call: call, args: args, files: files}
	recognizeIn, ok := runtimes[call.Runtime]
	if !ok {
		return Result{}, fmt.Errorf("recognize: unknown runtime %q (want one of %s)", call.Runtime, strings.Join(Runtimes(), ", "))
	}
	res := recognizeIn(r)
	if res.Kind == "" {
		res.Kind = KindEvent
	}
	if res.Kind != KindRead && res.Kind != KindListing && res.Kind != KindQuery {
		res.render = nil
	}
	// A result outlives its recognition (the server renders views with it):
	// later renders read files afresh and keep nothing.
	r.cache, r.frozen = nil, true
	return res, nil
}

// recognizer holds one call while it is recognized.
type recognizer struct {
	call  Call
	args  map[string]any
	files Files
	cache map[string][]string // file lines read so far (nil entry: unreadable)
	// frozen: recognition is over; renders may still read files, uncached.
	frozen bool
}

func event(format, reason string) Result {
	return Result{Kind: KindEvent, Format: format, Reason: reason}
}

func (r *recognizer) str(name string) string {
	s, _ := r.args[name].(string)
	return s
}

// lines is a file's lines as Concord reads them (UTF-8, CRLF as LF, no empty
// last line for a final newline); nil, false when it cannot be read.
func (r *recognizer) lines(path string) ([]string, bool) {
	if r.cache == nil {
		if r.frozen {
			return r.read(path)
		}
		r.cache = map[string][]string{}
	}
	if l, ok := r.cache[path]; ok {
		return l, l != nil
	}
	l, ok := r.read(path)
	r.cache[path] = l
	return l, ok
}

func (r *recognizer) read(path string) ([]string, bool) {
	if r.files == nil {
		return nil, false
	}
	data, err := r.files.ReadFile(path)
	if err != nil {
		return nil, false
	}
	l := splitFile(string(data))
	if l == nil {
		l = []string{}
	}
	return l, true
}

// isDir and isFile ask Files; a missing Files knows nothing.
func (r *recognizer) isDir(path string) bool {
	if r.files == nil {
		return false
	}
	st, err := r.files.Stat(path)
	return err == nil && st.IsDir()
}

func (r *recognizer) isFile(path string) bool {
	if r.files == nil {
		return false
	}
	st, err := r.files.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// exists reports whether path names anything (a deleted file counts as a
// file: the server then says it was deleted).
func (r *recognizer) exists(path string) bool {
	if r.files == nil {
		return false
	}
	_, err := r.files.Lstat(path)
	return err == nil
}
