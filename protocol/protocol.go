// Package protocol holds the wire messages of docs/protocol.md, version 1:
// one set of types, with their JSON names, used by the server (package rpc),
// the Go client (rpc/client), the benchmark and the core's API (package
// runtime). It is pure types and their rules (the standard library only):
// each params type's Validate checks what JSON types cannot express, naming
// the wire field, so a field and its rule are added in one place. JSON
// names here are the contract; change them only together with the document.
//
// The bindings' wire types are generated from these (go generate, see
// internal/wiregen). A string field tagged enum:"X" takes the values of the
// untyped X* constants, which the generated types spell out as a union; a
// field tagged or:"string" also takes a string (string | T).
package protocol

//go:generate go run ./internal/wiregen -root ..

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Version is the one protocol version this server speaks.
const Version = 1

// Method names, client to server.
const (
	MethodInitialize    = "initialize"
	MethodObserve       = "observe"
	MethodSourceChanged = "sourceChanged"
	MethodSync          = "sync"
	MethodRelease       = "release"
	MethodStats         = "stats"
	MethodRecognize     = "recognize"
	MethodCompacted     = "compacted"
	MethodHook          = "hook" // serve --socket only, alone on its connection: one hook event (HookParams)
	MethodShutdown      = "shutdown"
	MethodExit          = "exit"            // notification
	MethodCancelRequest = "$/cancelRequest" // notification
)

// Method names, server to client.
const (
	MethodBlocksChanged = "blocksChanged" // notification
	MethodReadSource    = "readSource"    // request
)

// MethodSpec describes one wire method for the generated bindings: what its
// params and result are (a zero value of the Go type; nil for none) and
// which way it goes. A method is added here and in the server's table.
type MethodSpec struct {
	Name         string
	Params       any
	Result       any // nil: no result (notifications; shutdown answers null)
	Notification bool
	ToClient     bool // server to client
}

// Methods lists every method of the protocol, so that generated bindings
// (go generate) carry the types of each.
var Methods = []MethodSpec{
	{Name: MethodInitialize, Params: InitializeParams{}, Result: InitializeResult{}},
	{Name: MethodObserve, Params: ObserveParams{}, Result: ObserveResult{}},
	{Name: MethodSourceChanged, Params: SourceChangedParams{}, Result: SourceChangedResult{}},
	{Name: MethodSync, Params: SyncParams{}, Result: SyncResult{}},
	{Name: MethodRelease, Params: ReleaseParams{}, Result: ReleaseResult{}},
	{Name: MethodStats, Result: StatsResult{}},
	{Name: MethodRecognize, Params: RecognizeParams{}, Result: RecognizeResult{}},
	{Name: MethodCompacted, Params: CompactedParams{}, Result: CompactedResult{}},
	{Name: MethodShutdown},
	{Name: MethodExit, Notification: true},
	{Name: MethodCancelRequest, Params: CancelParams{}, Notification: true},
	{Name: MethodBlocksChanged, Params: BlocksChangedParams{}, Notification: true, ToClient: true},
	{Name: MethodReadSource, Params: ReadSourceParams{}, Result: ReadSourceResult{}, ToClient: true},
}

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

// Error codes of docs/protocol.md.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeNotInitialized   = -32002
	CodeUnsupportedProto = -32003
	CodeOutsideRoots     = -32010
	CodeUnavailable      = -32011
	CodeUnknownBlock     = -32012
	CodeRequestCancelled = -32800
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
	// DerivedStale: a compaction summary (a derived block) whose sources
	// changed where the results it replaced showed them; its notice is the
	// correction, and the summary itself stays as written.
	DerivedStale Status = "derived-stale"

	// EventAck is the status observe answers for an event: acknowledged,
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
	Watch           string         `json:"watch,omitempty" enum:"Watch"`
	Policy          *PolicyConfig  `json:"policy,omitempty"`
	Locator         *LocatorParams `json:"locator,omitempty"`
	// Placement says where repairs of a message the model has seen go:
	// PlacementInplace, PlacementTail or PlacementAuto (default).
	Placement string       `json:"placement,omitempty" enum:"Placement"`
	Cache     *CacheParams `json:"cache,omitempty"` // hints for placement
	// Feed joins the change feed shared by the instances of one workspace
	// on several hosts (a build with the feed only; see docs/protocol.md).
	Feed *FeedParams `json:"feed,omitempty"`
}

// Validate checks initialize's params: the one place every option is
// checked, from the version to the locator thresholds. What depends on the
// host (a root that does not exist, a feed this build lacks) is checked
// where it is used.
func (p *InitializeParams) Validate() error {
	if p.ProtocolVersion == 0 {
		return FieldErrorf("protocolVersion", "required (this server speaks %d)", Version)
	}
	if p.Roots == nil {
		return FieldErrorf("roots", "required: the workspace roots, absolute paths ([] for keyed sources only)")
	}
	for i, r := range p.Roots {
		if !filepath.IsAbs(r) {
			return FieldErrorf(fmt.Sprintf("roots[%d]", i), "must be an absolute path, not %q", r)
		}
	}
	switch p.Watch {
	case "", WatchAuto, WatchFsnotify, WatchPoll, WatchHooks:
	default:
		return FieldErrorf("watch", "must be auto, fsnotify, poll or hooks, not %q", p.Watch)
	}
	switch p.Placement {
	case "", PlacementInplace, PlacementTail, PlacementAuto:
	default:
		return FieldErrorf("placement", "must be inplace, tail or auto, not %q", p.Placement)
	}
	if err := p.Cache.Validate("cache"); err != nil {
		return err
	}
	if err := p.Policy.Validate("policy"); err != nil {
		return err
	}
	return p.Locator.Validate("locator")
}

// FeedParams are initialize's change-feed settings; an omitted field keeps
// the operator's (serve's --feed flags). Credentials are never here: they
// are the operator's (--feed-creds, --feed-nkey).
type FeedParams struct {
	URL  string `json:"url,omitempty"`  // nats://host:4222[,nats://...]
	Name string `json:"name,omitempty"` // the workspace's feed: the same on every host
	Host string `json:"host,omitempty"` // this host's name in other hosts' notices (default: the hostname)
	Root string `json:"root,omitempty"` // the shared workspace root source keys are relative to (default: roots[0])
}

// FeedStatus is the change feed's state, in every sync of a session with a
// feed. State is FeedLive or FeedBehind: disconnected, or local changes not
// yet published; Since is when it fell behind (RFC 3339), Unsent the local
// changes waiting, Notice a sentence for the model.
type FeedStatus struct {
	State  string `json:"state" enum:"Feed"`
	Since  string `json:"since,omitempty"`
	Unsent int    `json:"unsent,omitempty"`
	Notice string `json:"notice,omitempty"`
}

// Feed states.
const (
	FeedLive   = "live"
	FeedBehind = "behind"
)

// Repair placements (initialize's placement).
const (
	PlacementInplace = "inplace" // rewrite the old tool message
	PlacementTail    = "tail"    // keep it byte-identical; an erratum goes after the newest message
	PlacementAuto    = "auto"    // in place where that is free (never sent, cache expired, prefix rebuilt), else tail (the default)
)

// CacheParams describe the provider's prompt cache, as far as placement
// needs it.
type CacheParams struct {
	// TTLSeconds: the prompt cache is taken to have expired when more than
	// this passed since the agent's previous sync (default 300).
	TTLSeconds *float64 `json:"ttlSeconds,omitempty"`
	// Price, under placement auto, also rewrites in place a message the
	// model has seen when that costs less than its erratum would (it needs
	// sync's promptChars to know what a rewrite invalidates). Also a
	// string: a preset ("anthropic", "openai") or "WRITE,READ".
	Price *CachePrice `json:"price,omitempty" or:"string"`
}

// Validate checks the cache hints; field names them ("cache").
func (c *CacheParams) Validate(field string) error {
	if c == nil {
		return nil
	}
	if c.TTLSeconds != nil && !(*c.TTLSeconds > 0) {
		return FieldErrorf(field+".ttlSeconds", "must be > 0 (seconds)")
	}
	if p := c.Price; p != nil && p.bad != "" {
		return FieldErrorf(field+".price", "%s", p.bad)
	}
	if p := c.Price; p != nil && !(p.Write > 0 && !math.IsInf(p.Write, 0) && p.Read >= 0 && p.Read <= p.Write) {
		return FieldErrorf(field+".price", "must have write > 0 and 0 <= read <= write (multiples of the input price), not write %g, read %g", p.Write, p.Read)
	}
	return nil
}

// TTL is the cache lifetime the hints ask for, 0 when they leave it out
// (then the server's default applies).
func (c *CacheParams) TTL() time.Duration {
	if c == nil || c.TTLSeconds == nil {
		return 0
	}
	return time.Duration(*c.TTLSeconds * float64(time.Second))
}

// CachePrice is what one prompt token costs, in units of the provider's
// plain input price, when the call writes it to the cache (a miss; 1.25 at
// Anthropic, 1 at OpenAI) and when it reads it from the cache (0.1 at
// Anthropic, 0.5 at OpenAI).
type CachePrice struct {
	Write float64 `json:"write"`
	Read  float64 `json:"read"`
	bad   string  // why a string names no price: Validate reports it with the field's name
}

// CachePresets are the prices cache.price may name (any case).
var CachePresets = map[string]CachePrice{"anthropic": {Write: 1.25, Read: 0.1}, "openai": {Write: 1, Read: 0.5}}

// UnmarshalJSON takes {write, read}, or a string: a preset or "WRITE,READ".
// A string naming no price decodes (so that every binding's option is
// checked here, once) and fails Validate.
func (c *CachePrice) UnmarshalJSON(data []byte) error {
	var text string
	if json.Unmarshal(data, &text) != nil {
		type plain CachePrice // without this method
		if err := json.Unmarshal(data, (*plain)(c)); err != nil {
			*c = CachePrice{bad: fmt.Sprintf(`must be "anthropic", "openai", "WRITE,READ" or {write, read}, not %.40s`, data)}
		}
		return nil
	}
	*c = CachePrice{}
	name := strings.ToLower(strings.TrimSpace(text))
	if p, ok := CachePresets[name]; ok {
		*c = p
		return nil
	}
	w, r, ok := strings.Cut(name, ",")
	if !ok || strings.Contains(r, ",") {
		c.bad = fmt.Sprintf("%q is not anthropic, openai or \"WRITE,READ\"", text)
		return nil
	}
	var err1, err2 error
	c.Write, err1 = strconv.ParseFloat(strings.TrimSpace(w), 64)
	c.Read, err2 = strconv.ParseFloat(strings.TrimSpace(r), 64)
	if err1 != nil || err2 != nil {
		c.bad = fmt.Sprintf("%q: WRITE,READ must be two numbers", text)
	}
	return nil
}

// LocatorParams are the locality thresholds; an omitted field keeps the
// server's default, and a present one (0 included) is used as given.
type LocatorParams struct {
	MinSimilarity     *float64 `json:"minSimilarity,omitempty"`
	SubstitutionRatio *float64 `json:"substitutionRatio,omitempty"`
	MinSubstitutions  *int     `json:"minSubstitutions,omitempty"`
	ContextLines      *int     `json:"contextLines,omitempty"`
}

// Validate checks the thresholds; field names the whole ("locator").
func (l *LocatorParams) Validate(field string) error {
	switch {
	case l == nil:
	case l.MinSimilarity != nil && (*l.MinSimilarity < 0 || *l.MinSimilarity > 1):
		return FieldErrorf(field+".minSimilarity", "must be between 0 and 1")
	case l.SubstitutionRatio != nil && (*l.SubstitutionRatio < 0 || *l.SubstitutionRatio > 1):
		return FieldErrorf(field+".substitutionRatio", "must be between 0 and 1")
	case l.MinSubstitutions != nil && *l.MinSubstitutions < 0:
		return FieldErrorf(field+".minSubstitutions", "must be >= 0")
	case l.ContextLines != nil && *l.ContextLines < 0:
		return FieldErrorf(field+".contextLines", "must be >= 0")
	}
	return nil
}

// Policy says what to do on a local edit and on drift, and when a block
// merely aged. Empty fields inherit: block > source > resource type > global.
type Policy struct {
	Local       Action `json:"local,omitempty"`       // default patch
	Drift       Action `json:"drift,omitempty"`       // default suppress
	MaxAgeTurns *int   `json:"maxAgeTurns,omitempty"` // 0 or nil = off
	// Derived says which changes to a source a compaction summary was
	// built from are worth a correction: DerivedMentioned (default) or
	// DerivedRange.
	Derived string `json:"derived,omitempty" enum:"Derived"`
}

// Which changes correct a summary (Policy.Derived; docs/protocol.md,
// "Derived context").
const (
	DerivedRange     = "range"     // any change to a line the replaced results showed
	DerivedMentioned = "mentioned" // only changed lines whose old text, or a word the change took out of them, the summary mentions
)

// PolicyConfig holds the policy layers below the block level.
type PolicyConfig struct {
	Global   Policy            `json:"global"`
	ByType   map[string]Policy `json:"byType,omitempty"`   // by adapter scheme, e.g. "file", "res"
	BySource map[string]Policy `json:"bySource,omitempty"` // by source URI
}

// Valid reports whether a is one of the four actions.
func (a Action) Valid() bool {
	switch a {
	case Patch, Refresh, Annotate, Suppress:
		return true
	}
	return false
}

// Validate checks one policy layer; field names it on the wire ("policy",
// "policy.global").
func (p *Policy) Validate(field string) error {
	if p == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		a    Action
	}{{"local", p.Local}, {"drift", p.Drift}} {
		if f.a != "" && !f.a.Valid() {
			return FieldErrorf(field+"."+f.name, "must be patch, refresh, annotate or suppress, not %q", f.a)
		}
	}
	if p.MaxAgeTurns != nil && *p.MaxAgeTurns < 0 {
		return FieldErrorf(field+".maxAgeTurns", "must be >= 0")
	}
	switch p.Derived {
	case "", DerivedRange, DerivedMentioned:
	default:
		return FieldErrorf(field+".derived", "must be range or mentioned, not %q", p.Derived)
	}
	return nil
}

// Validate checks every layer; field names the whole ("policy"). Keys are
// visited in sorted order, so the error named is deterministic.
func (c *PolicyConfig) Validate(field string) error {
	if c == nil {
		return nil
	}
	if err := c.Global.Validate(field + ".global"); err != nil {
		return err
	}
	for _, layer := range []struct {
		name string
		m    map[string]Policy
	}{{"byType", c.ByType}, {"bySource", c.BySource}} {
		keys := make([]string, 0, len(layer.m))
		for k := range layer.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := layer.m[k]
			if err := p.Validate(field + "." + layer.name + "." + k); err != nil {
				return err
			}
		}
	}
	return nil
}

// InitializeResult answers initialize.
type InitializeResult struct {
	ProtocolVersion int          `json:"protocolVersion"`
	ServerInfo      Info         `json:"serverInfo"`
	Capabilities    Capabilities `json:"capabilities"`
}

// Capabilities tell the client what this server does.
type Capabilities struct {
	Watch         string   `json:"watch" enum:"Watch"` // effective watch mode
	Schemes       []string `json:"schemes"`            // "file", and "*" for keyed sources of any other scheme
	Framing       string   `json:"framing" enum:"Framing"`
	Notifications []string `json:"notifications"`
	Requests      []string `json:"requests"`
	MaxMessage    int64    `json:"maxMessage"` // bytes; larger messages are refused
	// Placement is the effective repair placement, always present (a
	// server without cache-aware repair leaves it out: inplace).
	Placement string `json:"placement,omitempty" enum:"Placement"`
}

// Range is a 1-based, inclusive line range.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Source links an observation, or a block view, to one source: which source
// (URI), which part (Range; nil means the whole source) and its text (the
// raw lines joined by "\n", without the tool's own decoration).
type Source struct {
	URI     string `json:"uri"`
	Range   *Range `json:"range,omitempty"`
	Text    string `json:"text"`
	Version string `json:"version,omitempty"` // "sha256:…" for files; required for keyed sources in observe
	// TotalLines is the source's current line count (in sync views only), so a binding can
	// re-render "end of file" headers and footers truthfully.
	TotalLines *int `json:"totalLines,omitempty"`
}

// ObserveParams register one tool observation.
type ObserveParams struct {
	Agent   string   `json:"agent"`
	Turn    int      `json:"turn"`
	Anchor  string   `json:"anchor"`         // the runtime's handle, e.g. the tool call id
	Kind    Kind     `json:"kind,omitempty"` // snapshot (default) or event
	Sources []Source `json:"sources"`
	Policy  *Policy  `json:"policy,omitempty"` // optional block-level override
}

// Validate checks observe's params; an empty Kind is a snapshot.
func (o *ObserveParams) Validate() error {
	if o.Agent == "" {
		return FieldErrorf("agent", "required")
	}
	if o.Turn < 0 {
		return FieldErrorf("turn", "must be >= 0")
	}
	switch o.Kind {
	case "", Snapshot, Event:
	default:
		return FieldErrorf("kind", "must be snapshot or event, not %q", o.Kind)
	}
	if len(o.Sources) == 0 && o.Kind != Event {
		return FieldErrorf("sources", "required: at least one source")
	}
	for i := range o.Sources {
		if err := o.Sources[i].Validate(fmt.Sprintf("sources[%d]", i)); err != nil {
			return err
		}
	}
	return o.Policy.Validate("policy")
}

// Validate checks one observed source; field names it ("sources[1]").
func (s *Source) Validate(field string) error {
	if err := validateURI(field+".uri", s.URI); err != nil {
		return err
	}
	if r := s.Range; r != nil {
		if r.Start < 1 {
			return FieldErrorf(field+".range.start", "must be >= 1 (lines are 1-based)")
		}
		if r.End == 0 { // absent: 0 is never a valid end
			return FieldErrorf(field+".range.end", "required: the last line read (inclusive, >= start)")
		}
		if r.End < r.Start {
			return FieldErrorf(field+".range.end", "must be >= start (%d)", r.Start)
		}
	}
	return nil
}

func validateURI(field, uri string) error {
	if uri == "" {
		return FieldErrorf(field, "required")
	}
	if Scheme(uri) == "" {
		return FieldErrorf(field, "must be a URI with a scheme (file:///abs/path, res://…), not %q", clip(uri, 80))
	}
	return nil
}

// Scheme returns the URI's lower-cased scheme, or "" when it has none.
func Scheme(uri string) string {
	i := strings.IndexByte(uri, ':')
	if i <= 0 {
		return ""
	}
	for j, c := range uri[:i] {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return ""
		}
	}
	return strings.ToLower(uri[:i])
}

// clip shortens s to n bytes for an error message, never cutting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ObserveResult answers observe.
type ObserveResult struct {
	Block      string   `json:"block"`      // "" for events
	Status     Status   `json:"status"`     // right after registration (a raced read may already be patched)
	Superseded []string `json:"superseded"` // older blocks this one superseded
}

// SourceChangedParams report a change made by the runtime's own tools. Text,
// when non-nil, is the new full content; Version is the new version when the
// client knows it (required for keyed sources without Text).
type SourceChangedParams struct {
	URI     string  `json:"uri"`
	Agent   string  `json:"agent,omitempty"`
	Text    *string `json:"text,omitempty"`
	Version string  `json:"version,omitempty"`
	// Anchor is the tool call that made the change (the edit's id): errata
	// can then point the agent to its own edit instead of repeating text.
	Anchor string `json:"anchor,omitempty"`
}

// Validate checks sourceChanged's params (the version a keyed source needs
// is the core's to check: only it knows which sources are keyed).
func (c *SourceChangedParams) Validate() error { return validateURI("uri", c.URI) }

// SourceChangedResult answers sourceChanged.
type SourceChangedResult struct {
	Blocks []string `json:"blocks"` // blocks whose state changed
}

// SyncParams ask for an agent's projection before a model call.
type SyncParams struct {
	Agent string `json:"agent"`
	Turn  int    `json:"turn"`
	Full  bool   `json:"full,omitempty"` // the full live set, not just the delta
	// PrefixRebuilt: the runtime rebuilt the prompt before this call
	// (condensed, compacted, dropped messages), so the cached prefix is
	// gone: every deferred repair is placed in place (a flush).
	PrefixRebuilt bool `json:"prefixRebuilt,omitempty"`
	// PromptChars is the size, in characters, of the messages this model
	// call carries as the runtime has them before this sync's views and
	// errata (0: not reported). With cache.price it tells the server how
	// much an in-place rewrite would invalidate.
	PromptChars int `json:"promptChars,omitempty"`
}

// Validate checks sync's params.
func (p *SyncParams) Validate() error {
	if p.Agent == "" {
		return FieldErrorf("agent", "required")
	}
	if p.Turn < 0 {
		return FieldErrorf("turn", "must be >= 0")
	}
	if p.PromptChars < 0 {
		return FieldErrorf("promptChars", "must be >= 0")
	}
	return nil
}

// SyncResult is the projection: blocks whose model-visible state changed
// since the agent's previous sync (or all live blocks when Full).
type SyncResult struct {
	Generation uint64      `json:"generation"`
	Full       bool        `json:"full"`
	Blocks     []BlockView `json:"blocks"`
	// Flushed (placement tail or auto): every deferred repair is in Blocks,
	// in place; drop every erratum note attached by earlier syncs.
	Flushed bool `json:"flushed,omitempty"`
	// Feed is the change feed's state; nil when the session has no feed.
	Feed *FeedStatus `json:"feed,omitempty"`
}

// BlockView is what a binding needs to rewrite one tool result.
// Sources present: show their text (rendered in the tool's format).
// Notice present with Sources: show both (annotate). Notice alone: show
// only the notice (the content is suppressed).
type BlockView struct {
	Block        string   `json:"block"`
	Anchor       string   `json:"anchor"`
	Agent        string   `json:"agent"`
	Turn         int      `json:"turn"`
	Status       Status   `json:"status"`
	Sources      []Source `json:"sources,omitempty"`
	Notice       string   `json:"notice,omitempty"`
	SupersededBy string   `json:"supersededBy,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	// Placement "tail": leave the anchor's message as it is and attach
	// Erratum after the newest message; Status, Sources and Notice then
	// describe the current truth, for information. "" means in place.
	Placement string `json:"placement,omitempty"`
	Erratum   string `json:"erratum,omitempty"`
	// View (blocks registered by recognize, in place, with Sources): the
	// tool result as the tool would show the sources now, in its own format.
	View string `json:"view,omitempty"`
	// Show (blocks registered by recognize, in place): exactly the text to
	// show instead of the tool's original output (the view, the view then
	// the notice, or the notice alone), composed by the server; absent: the
	// original output stands (valid again, or released).
	Show *string `json:"show,omitempty"`
}

// ToolCall is one finished tool call as the runtime has it (recognize).
type ToolCall struct {
	Runtime   string          `json:"runtime"`             // a runtime whose tools recognize knows (recognize.Runtimes)
	Tool      string          `json:"tool"`                // the tool's name in that runtime
	Arguments json.RawMessage `json:"arguments,omitempty"` // the call's arguments object
	Output    string          `json:"output"`              // exactly the text the model was shown
	ExitCode  *int            `json:"exitCode,omitempty"`  // a command's exit status
	// Cwd: the working directory the runtime reported (OpenHands: after the
	// command; OpenCode: where it started); relative paths resolve against it.
	Cwd       string          `json:"cwd,omitempty"`
	Truncated bool            `json:"truncated,omitempty"` // the runtime cut the output
	Error     bool            `json:"error,omitempty"`     // the runtime marked the result an error
	Metadata  json.RawMessage `json:"metadata,omitempty"`  // the runtime's metadata (OpenCode's display)
}

// RecognizeParams ask the server to decide what a tool call showed and to
// register it: observe for what it showed, sourceChanged for what it wrote.
type RecognizeParams struct {
	Agent  string   `json:"agent"`
	Turn   int      `json:"turn"`
	Anchor string   `json:"anchor"`
	Call   ToolCall `json:"call"`
	Policy *Policy  `json:"policy,omitempty"`
}

// The binding lifecycle (docs/protocol.md, "Binding lifecycle"), the same
// in every binding: start the server lazily, restart a server that died
// after a growing wait, give up after BindingMaxRestarts and pass every
// tool result through unchanged, saying so once.
const (
	BindingMaxRestarts      = 3     // restarts of a server that died, per session, before the binding gives up
	BindingBackoffMs        = 100   // wait before restart k (k = 1, 2, …): BindingBackoffMs * 4^(k-1) ms
	BindingRequestTimeoutMs = 5000  // a request unanswered this long counts the server as dead
	BindingStartTimeoutMs   = 10000 // starting the server and its initialize
)

// What recognize found a call to be.
const (
	RecognizedRead    = "read"    // parts of files: a block
	RecognizedListing = "listing" // a directory listing: a block
	RecognizedWrite   = "write"   // the tool wrote files: reported as sourceChanged
	RecognizedQuery   = "query"   // a function of many files (grep -l, find | grep): a block on one query source, re-run when its scope changes
	RecognizedEvent   = "event"   // an action's result: acknowledged, never tracked
)

// SourceRef names a registered source without its text.
type SourceRef struct {
	URI   string `json:"uri"`
	Range *Range `json:"range,omitempty"`
}

// HookParams carry one hook event of an agent runtime as the runtime wrote
// it (serve --socket; docs/protocol.md, "Hook transport"): the server reads
// it, does what it means with the session and answers what the hook prints.
// A hook request is alone on its connection, with no initialize before it:
// Initialize holds initialize's params, which build the session when the
// server has none yet.
type HookParams struct {
	Runtime    string            `json:"runtime"` // a runtime `concord hook` serves ("claude-code")
	Initialize *InitializeParams `json:"initialize"`
	Event      json.RawMessage   `json:"event"` // the hook's JSON input, as read from its stdin
}

// HookResult answers hook: exactly what the hook prints on stdout ("" for
// nothing), in the runtime's own answer format.
type HookResult struct {
	Output string `json:"output"`
}

// RecognizeResult answers recognize: what the call was and what the server
// did with it.
type RecognizeResult struct {
	Kind   string `json:"kind" enum:"Recognized"` // one of the Recognized* values
	Format string `json:"format,omitempty"`       // the recognizer, e.g. "terminal/grep"
	Reason string `json:"reason,omitempty"`       // why a call is not tracked
	// Block registered for what the call showed ("" when none); Status and
	// Superseded as observe answers them (no status for a write).
	Block      string      `json:"block"`
	Status     Status      `json:"status,omitempty"`
	Superseded []string    `json:"superseded"`
	Sources    []SourceRef `json:"sources,omitempty"` // what was registered, in order (the text is the call's)
	Writes     []string    `json:"writes,omitempty"`  // file URIs reported changed by this call
	Changed    []string    `json:"changed,omitempty"` // blocks whose state those writes changed
}

// CompactedParams report a compaction: the runtime replaced the tool
// results anchored at Replaced (the agent's anchors) by one message,
// anchored at Anchor, whose full text is Text (the summary). The server
// keeps the summary as a derived block and releases the replaced blocks.
type CompactedParams struct {
	Agent    string   `json:"agent"`
	Anchor   string   `json:"anchor"`
	Text     string   `json:"text"`
	Replaced []string `json:"replaced"`
	Turn     int      `json:"turn,omitempty"`
}

// Validate checks compacted's params.
func (p *CompactedParams) Validate() error {
	switch {
	case p.Agent == "":
		return FieldErrorf("agent", "required")
	case p.Anchor == "":
		return FieldErrorf("anchor", "required: the summary message's anchor (corrections name it)")
	case p.Turn < 0:
		return FieldErrorf("turn", "must be >= 0")
	}
	for i, a := range p.Replaced {
		if a == "" {
			return FieldErrorf(fmt.Sprintf("replaced[%d]", i), "must be an anchor, not empty")
		}
	}
	return nil
}

// Provenance is one range a derived block was built from: the lines the
// replaced results showed of a source (1-based, inclusive), at the version
// they showed.
type Provenance struct {
	URI       string `json:"uri"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Version   string `json:"version,omitempty"`
}

// CompactedResult answers compacted: the derived block ("" when no
// replaced anchor was tracked), what it was built from, and the anchors
// whose blocks were released.
type CompactedResult struct {
	Derived    string       `json:"derived"`
	Provenance []Provenance `json:"provenance"`
	Released   []string     `json:"released"`
}

// ReleaseParams drop blocks by id, or by anchor within Agent.
type ReleaseParams struct {
	Agent   string   `json:"agent,omitempty"`
	Blocks  []string `json:"blocks,omitempty"`
	Anchors []string `json:"anchors,omitempty"`
}

// Validate checks release's params.
func (p *ReleaseParams) Validate() error {
	if len(p.Blocks) == 0 && len(p.Anchors) == 0 {
		return FieldErrorf("blocks", "required: blocks or anchors (with agent)")
	}
	if len(p.Anchors) > 0 && p.Agent == "" {
		return FieldErrorf("agent", "required with anchors")
	}
	return nil
}

// ReleaseResult answers release.
type ReleaseResult struct {
	Released []string `json:"released"`
}

// StatsResult answers stats: counters for operators and benchmarks.
type StatsResult struct {
	Blocks          map[Status]int `json:"blocks"`
	Reconciliations map[string]int `json:"reconciliations"` // by locator outcome and action: unchanged, moved, patched, invalid, refreshed, …
	VerifyPasses    int            `json:"verifyPasses"`
	Sources         int            `json:"sources"`
	Agents          int            `json:"agents"`
	BytesHeld       int64          `json:"bytesHeld"` // payload and source text held
	// Syncs: how long the syncs answered so far took the server (absent
	// before the first; filled by the server, not the core).
	Syncs *SyncTimes `json:"syncs,omitempty"`
	// HeapLiveBytes is the server process's live heap as of its last
	// garbage collection (filled by the server): what a session keeps,
	// without the garbage RSS also counts.
	HeapLiveBytes int64 `json:"heapLiveBytes,omitempty"`
}

// SyncTimes time the syncs a server answered, in milliseconds at the median
// and the 99th percentile: from the request's admission to its result
// (handled) and to its reply written (answered). Answered minus handled is
// the wait for the output pipe, which a client that reads slowly lengthens.
type SyncTimes struct {
	Count         int64   `json:"count"`
	Bytes         int64   `json:"bytes"` // the replies' JSON
	HandledP50Ms  float64 `json:"handledP50Ms"`
	HandledP99Ms  float64 `json:"handledP99Ms"`
	AnsweredP50Ms float64 `json:"answeredP50Ms"`
	AnsweredP99Ms float64 `json:"answeredP99Ms"`
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

// Error is a JSON-RPC error object, as the server sends it and as the Go
// client returns it (use errors.As to read the code).
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("concord error %d: %s (data %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("concord error %d: %s", e.Code, e.Message)
}

// ErrInvalidParams is what every FieldError is (errors.Is), unless it
// wraps a more precise cause.
var ErrInvalidParams = errors.New("invalid parameters")

// FieldError is invalid params naming the offending wire field in the
// wire's own notation ("sources[0].range.end"); the server answers it with
// CodeInvalidParams and data {"field": Field}. It wraps Err, or
// ErrInvalidParams when Err is nil.
type FieldError struct {
	Field  string
	Reason string
	Err    error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidParams) (or Err) true.
func (e *FieldError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrInvalidParams
}

// FieldErrorf is a FieldError with a formatted reason.
func FieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
