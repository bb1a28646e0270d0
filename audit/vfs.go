package audit

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/concord-ctx/concord/runtime"
)

// vfs is the workspace as a finished session showed it: each file is what
// the session's reads showed and its own edits made of it, so a replay needs
// no real workspace. Lines the session never showed are placeholders that
// match no real line (recognize's print-back checks fail on them, and the
// locator never takes them for shown text).
type vfs struct {
	files map[string]*vfile
	next  int // placeholder counter
}

type vfile struct {
	lines   []string
	unknown bool // changed by a command whose result is not known
	// whole: the line count is known (a whole read or write set the file);
	// else only the lines windows and hits showed are.
	whole bool
	gen   int // bumped on every change: the adapter's stamp and version
}

func newVFS() *vfs { return &vfs{files: map[string]*vfile{}} }

const holeMark = "\x00concord-audit-unseen-"

func (v *vfs) hole() string {
	v.next++
	return holeMark + strconv.Itoa(v.next)
}

func isHole(s string) bool { return strings.HasPrefix(s, holeMark) }

func (v *vfs) file(p string) *vfile {
	f := v.files[p]
	if f == nil {
		f = &vfile{}
		v.files[p] = f
	}
	return f
}

// setWhole makes p's content text (a whole-file read, a write with content).
// It reports whether the content differs from what was known.
func (v *vfs) setWhole(p, text string) bool {
	f := v.file(p)
	lines := splitLines(text)
	if !f.unknown && f.gen > 0 && (equalLines(f.lines, lines) || !f.whole && agrees(f.lines, lines)) {
		// The same file, now known whole (a grep hit or a window showed part of it).
		// A new version all the same: the server keys what it read of a file by version.
		if !equalLines(f.lines, lines) {
			f.lines, f.whole = lines, true
			f.gen++
		}
		return false
	}
	f.lines, f.unknown, f.whole = lines, false, true
	f.gen++
	return true
}

// agrees reports whether every line known of a file reads the same in lines.
func agrees(known, lines []string) bool {
	for i, k := range known {
		if isHole(k) {
			continue
		}
		if i >= len(lines) || lines[i] != k {
			return false
		}
	}
	return true
}

// merge puts lines start.. (1-based) shown by a read into p. It reports
// whether a line already known now reads otherwise (the file changed
// behind the session's back, or by a command).
func (v *vfs) merge(p string, start int, lines []string) bool {
	start = max(start, 1)
	f := v.file(p)
	changed := f.unknown
	if f.unknown {
		// What a command did is unknown: only what is shown now is known.
		for i := range f.lines {
			f.lines[i] = v.hole()
		}
		f.unknown = false
	}
	for len(f.lines) < start-1+len(lines) {
		f.lines = append(f.lines, v.hole())
	}
	for i, l := range lines {
		old := f.lines[start-1+i]
		if old == l {
			continue
		}
		if !isHole(old) {
			changed = true
		}
		f.lines[start-1+i] = l
	}
	f.gen++
	return changed
}

// replace applies an exact text edit (old occurs once, or every time with
// all); false when old is not found among the known lines.
func (v *vfs) replace(p, old, new string, all bool) bool {
	f := v.files[p]
	if f == nil || f.unknown || old == "" {
		return false
	}
	text := strings.Join(f.lines, "\n")
	n := strings.Count(text, old)
	if n == 0 || n > 1 && !all {
		return false
	}
	if all {
		text = strings.ReplaceAll(text, old, new)
	} else {
		text = strings.Replace(text, old, new, 1)
	}
	f.lines = strings.Split(text, "\n")
	f.gen++
	return true
}

// insert puts text's lines after line after (0: at the top), as
// file_editor does: text split at each "\n", so a final newline inserts an
// empty line too.
func (v *vfs) insert(p string, after int, text string) bool {
	f := v.files[p]
	if f == nil || f.unknown || after < 0 || after > len(f.lines) {
		return false
	}
	ins := strings.Split(text, "\n")
	out := make([]string, 0, len(f.lines)+len(ins))
	out = append(append(append(out, f.lines[:after]...), ins...), f.lines[after:]...)
	f.lines = out
	f.gen++
	return true
}

// splice replaces oldN lines at line at (1-based) with the new lines: an
// edit known only by where it happened and what it left.
func (v *vfs) splice(p string, at, oldN int, lines []string) {
	at, oldN = max(at, 1), max(oldN, 0)
	f := v.file(p)
	for len(f.lines) < at-1+oldN {
		f.lines = append(f.lines, v.hole())
	}
	out := make([]string, 0, len(f.lines)-oldN+len(lines))
	out = append(append(append(out, f.lines[:at-1]...), lines...), f.lines[at-1+oldN:]...)
	f.lines, f.unknown = out, false
	f.gen++
}

// touch marks p changed in a way the session does not show.
func (v *vfs) touch(p string) {
	f := v.file(p)
	f.unknown = true
	f.gen++
}

func splitLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return []string{}
	}
	return strings.Split(text, "\n")
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// content is what a read of p returns now.
func (v *vfs) content(p string) (string, bool) {
	f := v.files[p]
	if f == nil || f.unknown {
		return "", false
	}
	if len(f.lines) == 0 {
		return "", true
	}
	return strings.Join(f.lines, "\n") + "\n", true
}

// --- recognize.Files ---

type vinfo struct {
	name string
	size int64
	dir  bool
}

func (i vinfo) Name() string { return i.name }
func (i vinfo) Size() int64  { return i.size }
func (i vinfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i vinfo) ModTime() time.Time { return time.Time{} }
func (i vinfo) IsDir() bool        { return i.dir }
func (i vinfo) Sys() any           { return nil }

func (v *vfs) ReadFile(p string) ([]byte, error) {
	s, ok := v.content(path.Clean(p))
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	return []byte(s), nil
}

func (v *vfs) Stat(p string) (fs.FileInfo, error) {
	p = path.Clean(p)
	if f, ok := v.files[p]; ok && !f.unknown {
		s, _ := v.content(p)
		return vinfo{name: path.Base(p), size: int64(len(s))}, nil
	}
	if v.isDir(p) {
		return vinfo{name: path.Base(p), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

func (v *vfs) Lstat(p string) (fs.FileInfo, error) { return v.Stat(p) }

func (v *vfs) isDir(p string) bool {
	prefix := strings.TrimSuffix(p, "/") + "/"
	for f := range v.files {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// ReadDir lists what the session is known to have: never a whole directory,
// so listings are not replayed (see docs/audit.md).
func (v *vfs) ReadDir(p string) ([]fs.DirEntry, error) {
	p = path.Clean(p)
	if !v.isDir(p) {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: fs.ErrNotExist}
	}
	seen := map[string]bool{}
	var out []fs.DirEntry
	prefix := strings.TrimSuffix(p, "/") + "/"
	for f := range v.files {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		name, _, deeper := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, fs.FileInfoToDirEntry(vinfo{name: name, dir: deeper}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// --- runtime.Adapter for file:// sources ---

type adapter struct{ v *vfs }

func (adapter) Scheme() string { return "file" }

func (adapter) Normalize(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || !path.IsAbs(u.Path) {
		return "", fmt.Errorf("%s: %w", uri, runtime.ErrInvalidURI)
	}
	if u.RawQuery != "" {
		// Listings are not replayed: the session never shows a whole directory.
		return "", fmt.Errorf("%s: %w (listings are not replayed)", uri, runtime.ErrOutsideRoots)
	}
	return fileURI(path.Clean(u.Path)), nil
}

func (a adapter) Read(_ context.Context, id string) (runtime.Content, error) {
	p := uriPath(id)
	s, ok := a.v.content(p)
	if !ok {
		if _, known := a.v.files[p]; known {
			return runtime.Content{}, fmt.Errorf("%s: changed by a command: %w", p, runtime.ErrUnreadable)
		}
		return runtime.Content{}, fmt.Errorf("%s: %w", p, runtime.ErrNotFound)
	}
	return runtime.Content{Text: s, Version: a.version(p)}, nil
}

func (a adapter) version(p string) string {
	if f := a.v.files[p]; f != nil {
		return "audit:" + strconv.Itoa(f.gen)
	}
	return ""
}

func (a adapter) Stamp(_ context.Context, id string) (string, error) {
	return a.version(uriPath(id)), nil
}

// Display is the plain path, as the server's file adapter names files in
// notices and errata.
func (adapter) Display(id string) string {
	if p := uriPath(id); p != "" {
		return p
	}
	return id
}

func (adapter) Watch(string) error { return nil }
func (adapter) Unwatch(string)     {}
func (adapter) Close() error       { return nil }

var (
	_ runtime.Adapter   = adapter{}
	_ runtime.Displayer = adapter{}
)

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	return u.Path
}
