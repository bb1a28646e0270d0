// Package runtime is Concord's context manager. It tracks every tool
// observation as a source-linked block, indexes blocks by the sources they
// depend on (across all agents of a session), reconciles them when a source
// changes and projects, per agent, what the model must now be shown.
//
// It knows no file system and no agent runtime: sources are reached through
// Adapters, and the wire protocol lives in package rpc.
package runtime

import (
	"context"
	"errors"

	"github.com/concord-ctx/concord/locator"
)

// Status is a block's model-visible state.
type Status string

const (
	Valid      Status = "valid"      // what the model saw is still true
	Patched    Status = "patched"    // repaired in place after a local edit
	Stale      Status = "stale"      // kept, but flagged (aged, or annotate policy)
	Invalid    Status = "invalid"    // omitted from the prompt; a notice asks for a re-read
	Superseded Status = "superseded" // a newer read of the same span replaced it
	Released   Status = "released"   // the runtime dropped it

	// EventAck is the status Observe answers for an event: acknowledged,
	// never tracked. It is never a block's status.
	EventAck Status = "event"
)

// Kind separates snapshots of a source from events (results of actions).
type Kind string

const (
	Snapshot Kind = "snapshot"
	Event    Kind = "event" // acknowledged, never tracked, collapsed or rewritten
)

// Action is what a policy does to a block whose source changed.
type Action string

const (
	Patch    Action = "patch"    // relocate and rewrite in place (on drift, which cannot be relocated: as Refresh)
	Refresh  Action = "refresh"  // re-read the whole range from the source
	Annotate Action = "annotate" // keep the old text, with a stale warning
	Suppress Action = "suppress" // omit, with a notice to re-read path lines A-B
)

// Range is a 1-based inclusive line range.
type Range = locator.Range

// SourceRef links an observation to one source: which source (URI), which
// part (Range; nil means the whole source) and what the tool showed (Text,
// the raw lines joined by "\n", without the tool's own decoration).
type SourceRef struct {
	URI     string `json:"uri"`
	Range   *Range `json:"range,omitempty"`
	Text    string `json:"text"`
	Version string `json:"version,omitempty"` // optional: the version the tool read (e.g. "sha256:…"); required for keyed sources
}

// Observation is one tool result to register.
type Observation struct {
	Agent   string      `json:"agent"`
	Turn    int         `json:"turn"`
	Anchor  string      `json:"anchor"` // the runtime's handle, e.g. the tool call id
	Kind    Kind        `json:"kind,omitempty"`
	Sources []SourceRef `json:"sources"`
	Policy  *Policy     `json:"policy,omitempty"` // optional block-level override
}

// ObserveResult answers Observe.
type ObserveResult struct {
	Block      string   `json:"block"`      // "" for events
	Status     Status   `json:"status"`     // status right after registration (a raced read may already be patched)
	Superseded []string `json:"superseded"` // older blocks this one superseded
}

// Change reports that a source changed, typically from the runtime's own
// write tool. Text, when non-nil, is the new full content; Version is the
// new version when the client knows it (required for keyed sources without Text).
type Change struct {
	URI     string  `json:"uri"`
	Agent   string  `json:"agent,omitempty"`
	Text    *string `json:"text,omitempty"`
	Version string  `json:"version,omitempty"`
}

// ChangeResult answers SourceChanged.
type ChangeResult struct {
	Blocks []string `json:"blocks"` // blocks whose state changed
}

// SyncRequest asks for an agent's projection before a model call.
type SyncRequest struct {
	Agent string `json:"agent"`
	Turn  int    `json:"turn"`
	Full  bool   `json:"full,omitempty"` // return the full live set, not just the delta
}

// SyncResult is the projection: blocks whose model-visible state changed
// since the agent's previous sync (or all live blocks when Full).
type SyncResult struct {
	Generation uint64      `json:"generation"`
	Full       bool        `json:"full"`
	Blocks     []BlockView `json:"blocks"`
}

// BlockView is what a binding needs to rewrite one tool result.
// Sources present: show their text (rendered in the tool's format).
// Notice present with Sources: show both (annotate). Notice alone: show
// only the notice (the content is suppressed).
type BlockView struct {
	Block        string       `json:"block"`
	Anchor       string       `json:"anchor"`
	Agent        string       `json:"agent"`
	Turn         int          `json:"turn"`
	Status       Status       `json:"status"`
	Sources      []SourceView `json:"sources,omitempty"`
	Notice       string       `json:"notice,omitempty"`
	SupersededBy string       `json:"supersededBy,omitempty"`
	Reason       string       `json:"reason,omitempty"`
}

// SourceView is the current state of one source link.
type SourceView struct {
	URI     string `json:"uri"`
	Range   *Range `json:"range,omitempty"`
	Text    string `json:"text"`
	Version string `json:"version,omitempty"`
	// TotalLines is the source's current line count, so a binding can
	// re-render an "end of file" claim truthfully; absent when the server
	// does not know the content (a keyed source reported by version only).
	TotalLines *int `json:"totalLines,omitempty"`
}

// ReleaseRequest drops blocks, by id or by (agent, anchor).
type ReleaseRequest struct {
	Blocks  []string `json:"blocks,omitempty"`
	Agent   string   `json:"agent,omitempty"`
	Anchors []string `json:"anchors,omitempty"`
}

// ReleaseResult answers Release.
type ReleaseResult struct {
	Released []string `json:"released"`
}

// Stats are counters for operators and benchmarks.
type Stats struct {
	Blocks          map[Status]int `json:"blocks"`
	Reconciliations map[string]int `json:"reconciliations"` // by locator outcome and action: unchanged, moved, patched, invalid, refreshed, …
	VerifyPasses    int            `json:"verifyPasses"`
	Sources         int            `json:"sources"`
	Agents          int            `json:"agents"`
	BytesHeld       int64          `json:"bytesHeld"` // payload and source text held
}

// Policy says what to do on a local edit and on drift, and when a block
// merely aged. Empty fields inherit: block > source > resource type > global.
type Policy struct {
	Local       Action `json:"local,omitempty"`       // default Patch
	Drift       Action `json:"drift,omitempty"`       // default Suppress
	MaxAgeTurns *int   `json:"maxAgeTurns,omitempty"` // 0 or nil = off
}

// PolicyConfig holds the policy layers below the block level.
type PolicyConfig struct {
	Global   Policy            `json:"global"`
	ByType   map[string]Policy `json:"byType,omitempty"`   // by adapter scheme, e.g. "file", "res"
	BySource map[string]Policy `json:"bySource,omitempty"` // by source URI
}

// Content is a source's content at one version.
type Content struct {
	Text    string `json:"text"`
	Version string `json:"version"`
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

// Notify receives change hints from adapters (a hint: the core re-verifies).
type Notify func(id string)

// Errors adapters and the manager return; rpc maps them to wire error codes.
var (
	ErrOutsideRoots  = errors.New("source outside the workspace roots")
	ErrInvalidURI    = errors.New("invalid source uri")
	ErrUnknownScheme = errors.New("no adapter for uri scheme")
	ErrNotFound      = errors.New("source not found")
	ErrBinary        = errors.New("source is binary")
	ErrTooLarge      = errors.New("source exceeds size cap")
	ErrUnreadable    = errors.New("source unreadable")
	ErrInvalidParams = errors.New("invalid parameters")
	ErrClosed        = errors.New("manager closed")
)
