package runtime

import (
	"slices"

	"github.com/concord-ctx/concord/protocol"
)

// Block lifecycle (docs/design.md has the diagram). A block is in one
// stage; every change of stage goes through index.enter, which checks it
// against the table below. Within stageLive the block's status follows its
// links (recompute: valid, patched, stale or invalid); the other stages fix
// the status.
type stage uint8

const (
	stageLive       stage = iota // in the source index; its links are reconciled on every change
	stageSuperseded              // a newer read by the same agent covers it: unlinked, an audit record
	stageOrphaned                // superseded, then every newer read covering it left the context: invalid for good
	stageReleased                // released by the binding, or replaced by a new result for its anchor
)

var stageNames = [...]string{stageLive: "live", stageSuperseded: "superseded", stageOrphaned: "orphaned", stageReleased: "released"}

func (s stage) String() string { return stageNames[s] }

// transitions lists the legal moves between stages: a released block is
// gone; superseded to superseded is a re-pointing, when the read that
// covered it was itself superseded and then left the context.
var transitions = [...][]stage{
	stageLive:       {stageSuperseded, stageReleased},
	stageSuperseded: {stageSuperseded, stageOrphaned, stageReleased},
	stageOrphaned:   {stageReleased},
	stageReleased:   nil,
}

// enter moves b to stage to and sets the status that stage fixes. An
// illegal move is counted (illegalTransition), never silently taken: the
// invariant checker fails on any. Caller holds Manager.mu.
func (ix *index) enter(b *block, to stage) {
	if !slices.Contains(transitions[b.stage], to) {
		ix.count("illegalTransition")
		return
	}
	b.stage = to
	if b.x != nil {
		b.x.view = nil // never shown in place again (blockExtra.view)
	}
	switch to {
	case stageSuperseded:
		b.setStatus(protocol.Superseded)
	case stageOrphaned:
		b.setStatus(protocol.Invalid)
	case stageReleased:
		b.setStatus(protocol.Released)
	}
}
