// Package runtime is Concord's context manager. It tracks every tool
// observation as a source-linked block, indexes blocks by the sources they
// depend on (across all agents of a session), reconciles them when a source
// changes and projects, per agent, what the model must now be shown.
//
// It knows no file system and no agent runtime: sources are reached through
// Adapters; its API is the wire types of package protocol, and the
// transport lives in package rpc.
package runtime

import (
	"context"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// Range is a 1-based inclusive line range (the locator's; the wire's
// protocol.Range converts to it).
type Range = locator.Range

// Content is a source's content at one version.
type Content struct {
	Text    string `json:"text"`
	Version string `json:"version"`
}

// View shows a block's sources as its tool would show them now: the tool
// result in the tool's own format. The intake of tool calls (package intake)
// registers one with each block it makes; the core keeps it with the block
// while the block is live, renders the block's in-place views with it
// (protocol.BlockView's View and Show), and drops it when the block is
// superseded, released or replaced, so nothing outside the core keeps
// per-block state.
type View interface {
	// Render shows sources (the block's, as the view carries them) in the
	// tool's format; ok is false when the tool's output cannot be shown
	// again (a listing: the binding keeps it, or shows the notice).
	Render(sources []protocol.Source) (text string, ok bool)
}

// Adapter plugs one kind of source into the core. A new resource type needs
// an Adapter, not a change in the core.
type Adapter interface {
	// Scheme is the URI scheme this adapter serves ("file", "res").
	Scheme() string
	// Normalize turns a client URI into the canonical source id, itself a URI
	// of the adapter's scheme (file:///abs/clean/path with symlinks resolved),
	// or refuses it (ErrOutsideRoots, ErrInvalidURI).
	Normalize(uri string) (string, error)
	// Read returns the current content (ErrNotFound, ErrBinary, ErrTooLarge, ErrUnreadable).
	Read(ctx context.Context, id string) (Content, error)
	// Stamp is a cheap fingerprint (size and mtime for files). When it is
	// unchanged since the last Read the content is assumed unchanged; "" means
	// "cannot tell cheaply" and forces a Read.
	Stamp(ctx context.Context, id string) (string, error)
	// Watch and Unwatch are reference-counted by the adapter. Change hints go
	// to the Notify function the adapter was built with.
	Watch(id string) error
	Unwatch(id string)
	// Close stops watching everything.
	Close() error
}

// BatchStamper is an Adapter that stamps many sources at once more cheaply
// than one Stamp each (a directory's path walked once for all its files).
// The answers are Stamp's, index by index. Optional: a sync's verify pass
// uses it for the agent's sources.
type BatchStamper interface {
	Stamps(ctx context.Context, ids []string) ([]string, []error)
}

// Notify receives change hints from adapters (a hint: the core re-verifies).
type Notify func(id string)
