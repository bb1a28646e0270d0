package runtime

import (
	"slices"
	"strings"

	"github.com/concord-ctx/concord/protocol"
)

// What the model is shown instead of a tool result (protocol.BlockView's
// Show), composed here once so that no binding keeps a render table
// (docs/protocol.md, "How a binding renders a block view").

// rendering is one in-place view of a sync whose block has a View: taken
// under the lock, rendered after it (a View may read files).
type rendering struct {
	at    int    // index in the sync's views
	view  View   // the block's renderer
	names string // the block's sources as a notice names them, for a fallback
}

// retired is the View of a block that left stageLive: it renders nothing,
// so the block's Show is its notice (superseded, orphaned), and it holds
// nothing of the tool's output.
type retired struct{}

func (retired) Render([]protocol.Source) (string, bool) { return "", false }

// renderings lists the in-place views of blocks that have a View. Caller
// holds m.mu.
func (m *Manager) renderings(views []protocol.BlockView) []rendering {
	var rs []rendering
	for i := range views {
		v := &views[i]
		if v.Placement != "" {
			continue // at the tail: the message in place stays as it is
		}
		b := m.ix.block(v.Block)
		if b == nil || b.x == nil || b.x.view == nil {
			continue
		}
		names := make([]string, 0, len(b.links))
		for _, l := range b.links {
			if n := l.name(); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		rs = append(rs, rendering{at: i, view: b.x.view, names: strings.Join(names, ", ")})
	}
	return rs
}

// render fills View and Show of each rendering's view. Outside the lock.
func render(views []protocol.BlockView, rs []rendering) {
	for _, r := range rs {
		v := &views[r.at]
		text, ok := "", false
		if len(v.Sources) > 0 {
			text, ok = r.view.Render(v.Sources)
		}
		if ok {
			v.View = text
		}
		if s, show := compose(v, text, ok, r.names); show {
			v.Show = &s
		}
	}
}

// compose is the text shown instead of the tool's output for an in-place
// view; show is false when the original output stands (valid: it is true
// again; released: the block is gone).
func compose(v *protocol.BlockView, view string, rendered bool, names string) (text string, show bool) {
	switch {
	case v.Status == protocol.Valid || v.Status == protocol.Released:
		return "", false
	case rendered && v.Status == protocol.Patched:
		return view, true
	case rendered && v.Status == protocol.Stale && v.Notice != "":
		return strings.TrimRight(view, "\n") + "\n\n" + v.Notice, true
	case v.Notice != "":
		return v.Notice, true // invalid, superseded: the notice replaces the output
	case rendered:
		return view, true
	}
	// A state no renderer or notice covers (never expected): say the output is
	// no longer accurate rather than leave stale text standing.
	return "[concord] " + names + " changed since this read; the content shown earlier is no longer accurate. Re-read it before relying on it.", true
}
