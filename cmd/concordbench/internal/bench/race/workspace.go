// Package race lays a task's paragraphs out as a workspace on disk, runs the
// agent's tools (grep, glob, read_file) against it, and plays the race: it
// plants the task's mutations, then restores the originals out of band (real
// writes, not through the agent's tools) right after the agent has seen them.
package race

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// Display is the workspace's path as the model sees it, in every mode and
// task: the real directory (under TMPDIR, named per mode) is replaced by
// it in whatever reaches the context, so token counts do not depend on
// TMPDIR and a path never tells a model which mode it runs in.
const Display = "/workspace"

// Workspace is one task's directory.
type Workspace struct {
	Dir   string
	files []string // relative paths, sorted
	runs  int
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
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", f, err)
		}
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

// DisplayPath is a workspace file's path as the model sees it.
func (w *Workspace) DisplayPath(rel string) string { return Display + "/" + rel }

// Neutral replaces the real directory in s (a notice, say) by Display.
func (w *Workspace) Neutral(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "file://"+filepath.ToSlash(w.Dir), Display), filepath.ToSlash(w.Dir), Display)
}

// Resolve maps a path an agent gave (relative, "./x", or absolute inside the
// workspace, real or as displayed) to a workspace file.
func (w *Workspace) Resolve(p string) (string, error) {
	p = strings.TrimSpace(p)
	p = strings.TrimPrefix(p, "file://")
	if rest, ok := strings.CutPrefix(p, Display+"/"); ok {
		p = rest
	}
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
	Reason string `json:"reason"` // "read", "grep-hit", "answer", "repeat", "in-flight"
	// By is the writer: "" out of band, "peer" another agent (concurrent).
	By string `json:"by,omitempty"`
	// Before and After are the whole file around the write ("" After: the
	// file was deleted), for the modes that show changed lines.
	Before string `json:"-"`
	After  string `json:"-"`
	Edit   string `json:"edit,omitempty"` // edits schedule: the structural edit that came with it
}

// Race schedules (tasks.Task.Race).
const (
	Hotpot     = ""           // restore right after the agent saw the mutation
	Repeated   = "repeated"   // then a second wrong value, then the original again, one per call
	Edits      = "edits"      // the restore comes with a structural edit of the file
	Concurrent = "concurrent" // a second agent makes the restore with its own edit tool
	InFlight   = "inflight"   // the restore lands after the next sync, before the model's reply
	// Compaction: nothing is restored while the agent reads; once the
	// session is compacted (Compact), every mutation is restored and one
	// line the summary never restated changes too (Noise).
	Compaction = "compaction"
)

// Controller plants a task's mutations and restores them as the agent moves:
//   - after read_file returned mutated lines, the file is restored at once;
//   - a file whose mutated line showed up in grep hits is restored when the
//     agent's next call is not a read of that file;
//   - before an answer, every remaining mutation is restored.
type Controller struct {
	ws       *Workspace
	schedule string
	seed     int
	mu       sync.Mutex
	pending  map[string][]tasks.Mutation // file -> mutations still on disk
	grepHit  map[string]bool             // files a grep showed mutated lines of
	log      []Restore
	// follow are writes still to come, one per later call (repeated) or
	// the recreate after a delete (edits); deferred restores land in flight.
	follow   []followUp
	deferred []string
	task     tasks.Task // compaction: where its noise goes
	noised   bool       // compaction: the noise edit is on disk
}

type followUp struct {
	file, content, reason string
}

// NewController returns a controller for ws; Arm plants the mutations.
func NewController(ws *Workspace) *Controller {
	return &Controller{ws: ws, pending: map[string][]tasks.Mutation{}, grepHit: map[string]bool{}}
}

// Schedule sets the race schedule; seed picks the structural edit (edits)
// or the noise edit (compaction).
func (c *Controller) Schedule(schedule string, seed int) {
	c.schedule, c.seed = schedule, seed
}

// ScheduleTask sets the schedule of task t (its Race) and keeps t, whose
// paragraphs and evidence the compaction schedule's noise edit needs.
func (c *Controller) ScheduleTask(t tasks.Task, seed int) {
	c.Schedule(t.Race, seed)
	c.task = t
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

// Final writes, without a race, what the schedule leaves on disk in the
// end: the originals, with the structural edit of the edits schedule.
func (c *Controller) Final(muts []tasks.Mutation) error {
	if c.schedule == Compaction {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, err := c.noise(false)
		return err
	}
	if c.schedule != Edits {
		return nil
	}
	byFile := map[string][]tasks.Mutation{}
	for _, m := range muts {
		byFile[m.File] = append(byFile[m.File], m)
	}
	for _, f := range slices.Sorted(maps.Keys(byFile)) {
		b, err := os.ReadFile(c.ws.Abs(f))
		if err != nil {
			return fmt.Errorf("final %s: %w", f, err)
		}
		after, _ := structural(Lines(string(b)), byFile[f], c.seed)
		if err := writeInPlace(c.ws.Abs(f), after); err != nil {
			return fmt.Errorf("final %s: %w", f, err)
		}
	}
	return nil
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

// restore writes the original lines of f back (caller holds mu), in the
// way the schedule says: with a structural edit (edits), by the peer
// (concurrent), followed by more writes (repeated).
func (c *Controller) restore(f string, seen bool, reason string) (Restore, error) {
	ms := c.pending[f]
	b, err := os.ReadFile(c.ws.Abs(f))
	if err != nil {
		return Restore{}, fmt.Errorf("restore %s: %w", f, err)
	}
	lines := Lines(string(b))
	r := Restore{File: f, Seen: seen, Reason: reason, Before: string(b)}
	for _, m := range ms {
		if m.Line >= 1 && m.Line <= len(lines) {
			lines[m.Line-1] = m.Original
		}
		r.Lines = append(r.Lines, m.Line)
		r.Mutated = append(r.Mutated, m.Mutated)
		r.Original = append(r.Original, m.Original)
	}
	after := strings.Join(lines, "\n") + "\n"
	if seen {
		switch c.schedule {
		case Concurrent:
			r.By = "peer"
		case Repeated:
			// A second wrong value on the repaired line, then the original.
			second := append([]string(nil), lines...)
			for _, m := range ms {
				if m.Line >= 1 && m.Line <= len(second) {
					second[m.Line-1] = secondValue(m)
				}
			}
			c.follow = append(c.follow, followUp{f, strings.Join(second, "\n") + "\n", "repeat"}, followUp{f, after, "repeat"})
		case Edits:
			var ed string
			after, ed = structural(lines, ms, c.seed)
			r.Edit = ed
			if ed == "delete+recreate" {
				c.follow = append(c.follow, followUp{f, after, "recreate"})
				after = ""
			}
		}
	}
	if after == "" {
		if err := os.Remove(c.ws.Abs(f)); err != nil {
			return Restore{}, fmt.Errorf("restore %s: %w", f, err)
		}
	} else if err := writeInPlace(c.ws.Abs(f), after); err != nil {
		return Restore{}, fmt.Errorf("restore %s: %w", f, err)
	}
	r.After = after
	delete(c.pending, f)
	delete(c.grepHit, f)
	c.log = append(c.log, r)
	return r, nil
}

// secondValue is another wrong value for a mutated line: the mutation
// applied to the mutated text once more, or a plain marker when that gives
// the same line.
func secondValue(m tasks.Mutation) string {
	for i := 0; i < len(m.Original) && i < len(m.Mutated); i++ {
		if m.Original[i] != m.Mutated[i] {
			j, k := len(m.Original), len(m.Mutated)
			for j > i && k > i && m.Original[j-1] == m.Mutated[k-1] {
				j--
				k--
			}
			return m.Mutated[:k] + " (revised)" + m.Mutated[k:]
		}
	}
	return m.Mutated + " (revised)"
}

// structural restores the original lines with one of five edits (by seed):
// lines inserted above, a line deleted above, the line moved, a large
// rewrite around it, or a delete followed by a recreate (lines inserted).
func structural(lines []string, ms []tasks.Mutation, seed int) (string, string) {
	kinds := []string{"insert-above", "delete-above", "move", "rewrite", "delete+recreate"}
	kind := kinds[seed%len(kinds)]
	line := ms[0].Line
	note := func(i int) string { return fmt.Sprintf("Editorial note %d: this paragraph was revised.", i) }
	out := append([]string(nil), lines...)
	switch kind {
	case "insert-above", "delete+recreate":
		out = append([]string{note(1), note(2), note(3)}, out...)
	case "delete-above":
		if line > 1 {
			out = append(out[:line-2], out[line-1:]...)
		} else {
			out = append([]string{note(1)}, out...)
			kind = "insert-above"
		}
	case "move":
		l := out[line-1]
		rest := append(append([]string(nil), out[:line-1]...), out[line:]...)
		if line == len(out) {
			out = append([]string{l}, rest...)
		} else {
			out = append(rest, l)
		}
	case "rewrite":
		var nw []string
		for i, l := range out {
			if i == line-1 {
				nw = append(nw, l)
				continue
			}
			nw = append(nw, fmt.Sprintf("Sentence %d of this paragraph was rewritten by an editor.", i+1), note(i+1))
		}
		out = append([]string{note(0)}, nw...)
	}
	return strings.Join(out, "\n") + "\n", kind
}

// writeFollow applies one pending follow-up write (caller holds mu).
func (c *Controller) writeFollow(u followUp) (Restore, error) {
	b, _ := os.ReadFile(c.ws.Abs(u.file))
	if err := writeInPlace(c.ws.Abs(u.file), u.content); err != nil {
		return Restore{}, fmt.Errorf("%s %s: %w", u.reason, u.file, err)
	}
	r := Restore{File: u.file, Seen: true, Reason: u.reason, Before: string(b), After: u.content}
	c.log = append(c.log, r)
	return r, nil
}

// InFlight runs after a sync and before the model's reply: deferred
// restores (inflight) land now, so only the next sync can show them.
func (c *Controller) InFlight() ([]Restore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Restore
	for _, f := range c.deferred {
		if _, ok := c.pending[f]; !ok {
			continue
		}
		r, err := c.restore(f, true, "in-flight")
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	c.deferred = nil
	return out, nil
}

// Before runs ahead of a tool call: grep-hit files the call does not read
// are restored, and an answer restores everything still pending.
func (c *Controller) Before(call Call) ([]Restore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Restore
	// One follow-up write per call; an answer drops the rest (the last
	// write of a repeated series puts back what is on disk already) but
	// recreates a deleted file.
	// A read of a file whose series is still running sees its end: the
	// writer finished before the agent looked (a read must not show a
	// wrong value no later call could correct).
	if call.Name == ToolRead && len(c.follow) > 0 {
		if f, err := c.ws.Resolve(call.Path); err == nil {
			var rest []followUp
			for _, u := range c.follow {
				if u.file != f {
					rest = append(rest, u)
					continue
				}
				r, err := c.writeFollow(u)
				if err != nil {
					return out, err
				}
				out = append(out, r)
			}
			if len(rest) < len(c.follow) {
				c.follow = rest
				return out, nil
			}
		}
	}
	if len(c.follow) > 0 {
		if call.Name == ToolAnswer {
			for _, u := range c.follow {
				if u.reason == "recreate" {
					r, err := c.writeFollow(u)
					if err != nil {
						return out, err
					}
					out = append(out, r)
				}
			}
			c.follow = nil
		} else {
			u := c.follow[0]
			c.follow = c.follow[1:]
			r, err := c.writeFollow(u)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	readNext := ""
	if call.Name == ToolRead {
		if f, err := c.ws.Resolve(call.Path); err == nil {
			readNext = f
		}
	}
	for _, f := range slices.Sorted(maps.Keys(c.grepHit)) {
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
		for _, f := range slices.Sorted(maps.Keys(c.pending)) {
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
	if c.schedule == Compaction {
		return out, nil // everything changes at the compaction
	}
	if res.Read != nil {
		f := res.Read.File
		delete(c.grepHit, f)
		if c.showsMutation(f, res.Read.Start, res.Read.End) {
			if c.schedule == InFlight {
				c.deferred = append(c.deferred, f)
				return out, nil
			}
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
