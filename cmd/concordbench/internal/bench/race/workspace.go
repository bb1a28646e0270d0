// Package race lays a task's paragraphs out as a workspace on disk, runs the
// agent's tools (grep, glob, read_file) against it, and plays the race: it
// plants the task's mutations, then restores the originals out of band (real
// writes, not through the agent's tools) right after the agent has seen them.
package race

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// Workspace is one task's directory.
type Workspace struct {
	Dir   string
	files []string // relative paths, sorted
}

// NewWorkspace writes every paragraph of t under dir (which must exist) with
// its original content.
func NewWorkspace(dir string, t tasks.Task) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	// Resolve symlinks (macOS /var -> /private/var) so paths match what a
	// file watcher reports.
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	w := &Workspace{Dir: abs}
	for f, content := range t.Files() {
		p := filepath.Join(abs, filepath.FromSlash(f))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", f, err)
		}
		w.files = append(w.files, f)
	}
	sort.Strings(w.files)
	return w, nil
}

// Files lists the workspace's files (relative, sorted).
func (w *Workspace) Files() []string { return append([]string(nil), w.files...) }

// Abs returns the absolute path of a relative workspace file.
func (w *Workspace) Abs(rel string) string { return filepath.Join(w.Dir, filepath.FromSlash(rel)) }

// URI returns the file:// URI of a relative workspace file.
func (w *Workspace) URI(rel string) string { return "file://" + filepath.ToSlash(w.Abs(rel)) }

// Resolve maps a path an agent gave (relative, "./x", or absolute inside the
// workspace) to a workspace file.
func (w *Workspace) Resolve(p string) (string, error) {
	p = strings.TrimSpace(p)
	p = strings.TrimPrefix(p, "file://")
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(w.Dir, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", fmt.Errorf("%s: outside the workspace", p)
		}
		p = rel
	}
	p = filepath.ToSlash(filepath.Clean(p))
	for _, f := range w.files {
		if f == p {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: no such file", p)
}

// Version is the protocol's version string of some file bytes.
func Version(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// Lines splits file content into lines (no trailing empty line).
func Lines(content string) []string {
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.TrimSuffix(content, "\n")
	if content == "" {
		return nil
	}
	return strings.Split(content, "\n")
}

// Restore is one out-of-band write that put an original back.
type Restore struct {
	File     string   `json:"file"`
	Lines    []int    `json:"lines"`
	Mutated  []string `json:"mutated"`
	Original []string `json:"original"`
	// Seen: the agent saw the mutated text (a read or a grep hit) before the
	// restore; false for the restores before a premature answer.
	Seen   bool   `json:"seen"`
	Reason string `json:"reason"` // "read", "grep-hit", "answer"
}

// Controller plants a task's mutations and restores them as the agent moves:
//   - after read_file returned mutated lines, the file is restored at once;
//   - a file whose mutated line showed up in grep hits is restored when the
//     agent's next call is not a read of that file;
//   - before an answer, every remaining mutation is restored.
type Controller struct {
	ws      *Workspace
	mu      sync.Mutex
	pending map[string][]tasks.Mutation // file -> mutations still on disk
	grepHit map[string]bool             // files a grep showed mutated lines of
	log     []Restore
}

// NewController returns a controller for ws; Arm plants the mutations.
func NewController(ws *Workspace) *Controller {
	return &Controller{ws: ws, pending: map[string][]tasks.Mutation{}, grepHit: map[string]bool{}}
}

// Arm writes the mutated version of every file a mutation touches.
func (c *Controller) Arm(muts []tasks.Mutation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	byFile := map[string][]tasks.Mutation{}
	for _, m := range muts {
		byFile[m.File] = append(byFile[m.File], m)
	}
	for f, ms := range byFile {
		b, err := os.ReadFile(c.ws.Abs(f))
		if err != nil {
			return fmt.Errorf("arm %s: %w", f, err)
		}
		lines := Lines(string(b))
		for _, m := range ms {
			if m.Line < 1 || m.Line > len(lines) || lines[m.Line-1] != m.Original {
				return fmt.Errorf("arm %s line %d: original text not found", f, m.Line)
			}
			lines[m.Line-1] = m.Mutated
		}
		if err := writeInPlace(c.ws.Abs(f), strings.Join(lines, "\n")+"\n"); err != nil {
			return fmt.Errorf("arm %s: %w", f, err)
		}
		c.pending[f] = append(c.pending[f], ms...)
	}
	return nil
}

// writeInPlace rewrites a file's bytes without replacing its inode, as an
// editor saving in place does (a watcher on the file keeps its watch).
func writeInPlace(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o644)
}

// Pending reports whether any mutation is still on disk.
func (c *Controller) Pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// Log returns every restore so far.
func (c *Controller) Log() []Restore {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Restore(nil), c.log...)
}

// restore writes the original lines of f back (caller holds mu).
func (c *Controller) restore(f string, seen bool, reason string) (Restore, error) {
	ms := c.pending[f]
	b, err := os.ReadFile(c.ws.Abs(f))
	if err != nil {
		return Restore{}, fmt.Errorf("restore %s: %w", f, err)
	}
	lines := Lines(string(b))
	r := Restore{File: f, Seen: seen, Reason: reason}
	for _, m := range ms {
		if m.Line >= 1 && m.Line <= len(lines) {
			lines[m.Line-1] = m.Original
		}
		r.Lines = append(r.Lines, m.Line)
		r.Mutated = append(r.Mutated, m.Mutated)
		r.Original = append(r.Original, m.Original)
	}
	if err := writeInPlace(c.ws.Abs(f), strings.Join(lines, "\n")+"\n"); err != nil {
		return Restore{}, fmt.Errorf("restore %s: %w", f, err)
	}
	delete(c.pending, f)
	delete(c.grepHit, f)
	c.log = append(c.log, r)
	return r, nil
}

// Before runs ahead of a tool call: grep-hit files the call does not read
// are restored, and an answer restores everything still pending.
func (c *Controller) Before(call Call) ([]Restore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Restore
	readNext := ""
	if call.Name == ToolRead {
		if f, err := c.ws.Resolve(call.Path); err == nil {
			readNext = f
		}
	}
	for _, f := range sortedKeys(c.grepHit) {
		if f == readNext {
			continue
		}
		if _, ok := c.pending[f]; ok {
			r, err := c.restore(f, true, "grep-hit")
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
		delete(c.grepHit, f)
	}
	if call.Name == ToolAnswer {
		for _, f := range sortedKeys(c.pending) {
			r, err := c.restore(f, false, "answer")
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// After runs once a tool returned: a read that showed mutated lines restores
// its file now; grep hits on mutated lines are remembered.
func (c *Controller) After(res Result) ([]Restore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Restore
	if res.Read != nil {
		f := res.Read.File
		delete(c.grepHit, f)
		if c.showsMutation(f, res.Read.Start, res.Read.End) {
			r, err := c.restore(f, true, "read")
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	for _, h := range res.Hits {
		if c.showsMutation(h.File, h.Line, h.Line) {
			c.grepHit[h.File] = true
		}
	}
	return out, nil
}

func (c *Controller) showsMutation(f string, start, end int) bool {
	for _, m := range c.pending[f] {
		if m.Line >= start && m.Line <= end {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
