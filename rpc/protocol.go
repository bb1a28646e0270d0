package rpc

// The wire structs of docs/protocol.md, version 1. JSON names here are the
// contract; change them only together with the document.

// ProtocolVersion is the one protocol version this server speaks.
const ProtocolVersion = 1

// Method names, client to server.
const (
	MethodInitialize    = "initialize"
	MethodObserve       = "observe"
	MethodSourceChanged = "sourceChanged"
	MethodSync          = "sync"
	MethodRelease       = "release"
	MethodStats         = "stats"
	MethodShutdown      = "shutdown"
	MethodExit          = "exit"            // notification
	MethodCancelRequest = "$/cancelRequest" // notification
)

// Method names, server to client.
const (
	MethodBlocksChanged = "blocksChanged" // notification
	MethodReadSource    = "readSource"    // request
)

// Framings of the byte stream.
const (
	FramingContentLength = "content-length"
	FramingNewline       = "newline"
)

// Watch modes of initialize.
const (
	WatchAuto     = "auto"
	WatchFsnotify = "fsnotify"
	WatchPoll     = "poll"
	WatchHooks    = "hooks"
)

// Info names a client or server program.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeParams opens the session. ProtocolVersion is required (0 means
// missing); Roots is required (an empty list allows keyed sources only).
type InitializeParams struct {
	ProtocolVersion int            `json:"protocolVersion"`
	ClientInfo      *Info          `json:"clientInfo,omitempty"`
	Roots           []string       `json:"roots"`
	Watch           string         `json:"watch,omitempty"`
	Policy          *PolicyConfig  `json:"policy,omitempty"`
	Locator         *LocatorParams `json:"locator,omitempty"`
}

// LocatorParams are the locality thresholds; an omitted field keeps the
// server's default.
type LocatorParams struct {
	MinSimilarity     *float64 `json:"minSimilarity,omitempty"`
	SubstitutionRatio *float64 `json:"substitutionRatio,omitempty"`
	MinSubstitutions  *int     `json:"minSubstitutions,omitempty"`
	ContextLines      *int     `json:"contextLines,omitempty"`
}

// Policy is one policy layer; empty fields inherit.
type Policy struct {
	Local       string `json:"local,omitempty"`
	Drift       string `json:"drift,omitempty"`
	MaxAgeTurns *int   `json:"maxAgeTurns,omitempty"`
}

// PolicyConfig holds the layers below the block level.
type PolicyConfig struct {
	Global   Policy            `json:"global"`
	ByType   map[string]Policy `json:"byType,omitempty"`
	BySource map[string]Policy `json:"bySource,omitempty"`
}

// InitializeResult answers initialize.
type InitializeResult struct {
	ProtocolVersion int          `json:"protocolVersion"`
	ServerInfo      Info         `json:"serverInfo"`
	Capabilities    Capabilities `json:"capabilities"`
}

// Capabilities tell the client what this server does.
type Capabilities struct {
	Watch         string   `json:"watch"`   // effective watch mode
	Schemes       []string `json:"schemes"` // "file", and "*" for keyed sources of any other scheme
	Framing       string   `json:"framing"`
	Notifications []string `json:"notifications"`
	Requests      []string `json:"requests"`
	MaxMessage    int64    `json:"maxMessage"` // bytes; larger messages are refused
}

// Range is a 1-based, inclusive line range.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Source links an observation (or a block view) to one source.
type Source struct {
	URI     string `json:"uri"`
	Range   *Range `json:"range,omitempty"`
	Text    string `json:"text"`
	Version string `json:"version,omitempty"`
}

// ObserveParams register one tool observation.
type ObserveParams struct {
	Agent   string   `json:"agent"`
	Turn    int      `json:"turn"`
	Anchor  string   `json:"anchor"`
	Kind    string   `json:"kind,omitempty"` // "snapshot" (default) or "event"
	Sources []Source `json:"sources"`
	Policy  *Policy  `json:"policy,omitempty"`
}

// ObserveResult answers observe.
type ObserveResult struct {
	Block      string   `json:"block"`
	Status     string   `json:"status"`
	Superseded []string `json:"superseded"`
}

// SourceChangedParams report a change made by the runtime's own tools.
type SourceChangedParams struct {
	URI     string  `json:"uri"`
	Agent   string  `json:"agent,omitempty"`
	Text    *string `json:"text,omitempty"`
	Version string  `json:"version,omitempty"`
}

// SourceChangedResult answers sourceChanged.
type SourceChangedResult struct {
	Blocks []string `json:"blocks"`
}

// SyncParams ask for an agent's projection.
type SyncParams struct {
	Agent string `json:"agent"`
	Turn  int    `json:"turn"`
	Full  bool   `json:"full,omitempty"`
}

// SyncResult is the projection.
type SyncResult struct {
	Generation uint64      `json:"generation"`
	Full       bool        `json:"full"`
	Blocks     []BlockView `json:"blocks"`
}

// BlockView is what a binding needs to rewrite one tool result.
type BlockView struct {
	Block        string   `json:"block"`
	Anchor       string   `json:"anchor"`
	Agent        string   `json:"agent"`
	Turn         int      `json:"turn"`
	Status       string   `json:"status"`
	Sources      []Source `json:"sources,omitempty"`
	Notice       string   `json:"notice,omitempty"`
	SupersededBy string   `json:"supersededBy,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// ReleaseParams drop blocks by id, or by anchor within Agent.
type ReleaseParams struct {
	Agent   string   `json:"agent,omitempty"`
	Blocks  []string `json:"blocks,omitempty"`
	Anchors []string `json:"anchors,omitempty"`
}

// ReleaseResult answers release.
type ReleaseResult struct {
	Released []string `json:"released"`
}

// StatsResult answers stats.
type StatsResult struct {
	Blocks          map[string]int `json:"blocks"`
	Reconciliations map[string]int `json:"reconciliations"`
	VerifyPasses    int            `json:"verifyPasses"`
	Sources         int            `json:"sources"`
	Agents          int            `json:"agents"`
	BytesHeld       int64          `json:"bytesHeld"`
}

// BlocksChangedParams is the server's hint that a sync would return something.
type BlocksChangedParams struct {
	Agents     []string `json:"agents"`
	Generation uint64   `json:"generation"`
}

// ReadSourceParams ask the client for a keyed source's current content.
type ReadSourceParams struct {
	URI string `json:"uri"`
}

// ReadSourceResult answers readSource.
type ReadSourceResult struct {
	Text    string `json:"text"`
	Version string `json:"version"`
}

// CancelParams name the request $/cancelRequest cancels.
type CancelParams struct {
	ID any `json:"id"`
}
