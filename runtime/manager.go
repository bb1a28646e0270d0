package runtime

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/rpc/protocol"
)

// Config configures a Manager.
type Config struct {
	Policy  PolicyConfig
	Locator *protocol.LocatorParams // omitted fields take locator.DefaultParams (see LocatorParams)
	// OnChange, when set, is called after a change altered the model-visible
	// state of some agents' blocks (a hint for the blocksChanged
	// notification; Sync stays the source of truth). It is called outside the
	// manager's lock, from the goroutine that made the change (an RPC handler
	// or the manager's hint worker), possibly concurrently; it must not block
	// for long and may call back into the Manager (e.g. Generation).
	OnChange func(agents []string)
	Logger   *slog.Logger
	// AuditLimit bounds the superseded blocks kept per agent as an audit
	// trail (default DefaultAuditLimit); beyond it the oldest ones that were
	// already reported by a sync are forgotten, so a long session that
	// re-reads the same lines does not grow without bound.
	AuditLimit int
	// Placement is where repairs of messages the model has seen go
	// (PlacementInplace, the default; PlacementTail; PlacementAuto), and
	// CacheTTL how long the provider keeps a prompt cached (default
	// DefaultCacheTTL). Now is the clock (default time.Now), for tests.
	Placement string
	CacheTTL  time.Duration
	Now       func() time.Time
}

// DefaultAuditLimit is Config.AuditLimit's default.
const DefaultAuditLimit = 1024

// Manager is the context manager. It is safe for concurrent use. Its lock is
// never held during adapter I/O: sources are read outside it and the result
// applied under it, in read order per source.
type Manager struct {
	params   locator.Params
	policy   PolicyConfig
	onChange func([]string)
	log      *slog.Logger

	mu       sync.Mutex
	closed   bool
	adapters map[string]Adapter
	fallback Adapter
	bySource map[string]Policy // BySource keys normalised to canonical ids
	sources  map[string]*source
	blocks   map[string]*block
	agents   map[string]*agentState
	seq      uint64
	gen      uint64
	recon    map[string]int
	verifies int
	notify   map[string]struct{} // agents owed an OnChange call
	ageUsed  bool                // some policy layer sets maxAgeTurns > 0
	auditMax int

	placement string
	cacheTTL  time.Duration
	clock     func() time.Time
	unwatch   []*source // sources that lost links; watches synced after unlock

	hintMu  sync.Mutex
	pending map[string]bool // source id -> force a read
	hintCh  chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
}

type srcState uint8

const (
	statePresent srcState = iota
	stateDeleted
	stateUnreadable
)

// source is one source (file, keyed resource) with live links. Its last known
// text is kept once, shared by all its blocks, so a change is one diff plus a
// batch locate.
type source struct {
	id       string
	scheme   string // policy type: the adapter's scheme, or the URI's for the "*" adapter
	display  string // for notices: plain path for files, the URI otherwise
	adapter  Adapter
	reporter Reporter // non-nil for client-reported (keyed) sources

	io sync.Mutex // serialises read+apply so content is applied in read order

	// guarded by Manager.mu
	state   srcState
	known   bool // text is the content at version
	text    string
	lines   []string // lazily split from text, sharing its memory
	version string
	stamp   string
	readErr string
	links   map[*link]struct{}
	pins    int // observations loading this source; keeps its text alive

	pl srcPlace // guarded by Manager.mu

	watchMu sync.Mutex // orders Watch/Unwatch calls
	watched bool       // guarded by watchMu
}

func (s *source) getLines() []string {
	if s.lines == nil && s.text != "" {
		s.lines = locator.SplitLines(s.text)
	}
	return s.lines
}

// wanted reports whether the source should be watched and its text kept.
func (s *source) wanted() bool { return len(s.links) > 0 || s.pins > 0 }

func (s *source) free() {
	if s.wanted() {
		return
	}
	s.text, s.lines, s.known, s.stamp, s.version = "", nil, false, "", ""
}

type linkState uint8

const (
	linkOK      linkState = iota
	linkStale             // annotated: old text kept, with a warning
	linkInvalid           // omitted: notice only
)

type cause uint8

const (
	causeNone cause = iota
	causePolicy
	causeDeleted
	causeUnreadable
)

// link is one source link of a block. rng is the range the model was last
// shown; while tracked it is also where that text sits in the source's
// current text (text == current lines at rng).
type link struct {
	block   *block
	idx     int     // position in block.links, for a deterministic order
	src     *source // nil once the block left the index (audit only)
	uri     string
	whole   bool
	rng     Range
	text    string // model-visible text
	version string // version text reflects
	// shown* is what the model last saw of this link: the observation, then
	// each view a sync delivered. Annotate keeps it, not a repair that was
	// made but never delivered.
	shown        string
	shownRng     Range
	shownVersion string
	state        linkState
	cause        cause
	tracked      bool
	patched      bool            // text or lines differ from the observation
	anchor       *locator.Anchor // kept while the source is gone, to find the span again
	notice       string
	display      string // the source's display name, kept once the link leaves the index
	pl           linkPlace
}

type block struct {
	id           string
	seq          uint64
	agent        *agentState
	anchor       string
	turn         int
	policy       *Policy
	links        []*link
	status       Status
	notice       string
	reason       string
	supersededBy string
	orphaned     bool // superseded, then the newer read left the context: invalid for good
	aged         bool
	ageNotice    string
	pl           blockPlace
}

type agentState struct {
	name     string
	turn     int
	blocks   map[*block]struct{}
	byAnchor map[string][]*block
	dirty    map[*block]struct{}
	srcRefs  map[*source]int // live links per source: the sources a sync must wait for
	audit    []*block        // superseded blocks, oldest first (bounded by Manager.auditMax)
	pl       agentPlace
}

// New returns a Manager. Close it to stop its hint worker and adapters.
func New(cfg Config) *Manager {
	p := LocatorParams(cfg.Locator)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := ValidatePolicyConfig("policy", &cfg.Policy); err != nil {
		log.Warn("policy: invalid entries are ignored", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		params:   p,
		policy:   cfg.Policy,
		onChange: cfg.OnChange,
		log:      log,
		adapters: map[string]Adapter{},
		bySource: map[string]Policy{},
		sources:  map[string]*source{},
		blocks:   map[string]*block{},
		agents:   map[string]*agentState{},
		recon:    map[string]int{},
		notify:   map[string]struct{}{},
		pending:  map[string]bool{},
		hintCh:   make(chan struct{}, 1),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		auditMax: cfg.AuditLimit,
	}
	m.placement, m.cacheTTL, m.clock = cfg.Placement, cfg.CacheTTL, cfg.Now
	if m.cacheTTL <= 0 {
		m.cacheTTL = DefaultCacheTTL
	}
	if m.auditMax <= 0 {
		m.auditMax = DefaultAuditLimit
	}
	for k, pol := range cfg.Policy.BySource {
		m.bySource[k] = pol
		m.ageUsed = m.ageUsed || pol.MaxAgeTurns != nil && *pol.MaxAgeTurns > 0
	}
	for _, pol := range cfg.Policy.ByType {
		m.ageUsed = m.ageUsed || pol.MaxAgeTurns != nil && *pol.MaxAgeTurns > 0
	}
	m.ageUsed = m.ageUsed || cfg.Policy.Global.MaxAgeTurns != nil && *cfg.Policy.Global.MaxAgeTurns > 0
	go m.runHints()
	return m
}

// AddAdapter plugs in a resource adapter. An adapter whose Scheme() is "*"
// serves every scheme no other adapter serves.
func (m *Manager) AddAdapter(a Adapter) {
	m.mu.Lock()
	if a.Scheme() == "*" {
		m.fallback = a
	} else {
		m.adapters[strings.ToLower(a.Scheme())] = a
	}
	keys := make([]string, 0, len(m.policy.BySource))
	for k := range m.policy.BySource {
		if m.adapterForLocked(k) == a {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	// Normalising may touch the adapter's world (symlinks): outside the lock.
	for _, k := range keys {
		if id, err := a.Normalize(k); err == nil {
			m.mu.Lock()
			m.bySource[id] = m.policy.BySource[k]
			m.mu.Unlock()
		} else {
			m.log.Warn("policy.bySource: key not usable", "uri", k, "err", err)
		}
	}
}

// uriScheme returns the lower-cased scheme of uri; a plain absolute path is "file".
func uriScheme(uri string) string {
	if strings.HasPrefix(uri, "/") {
		return "file"
	}
	return scheme(uri)
}

func (m *Manager) adapterForLocked(uri string) Adapter {
	sc := uriScheme(uri)
	if sc == "" {
		return nil
	}
	if a, ok := m.adapters[sc]; ok {
		return a
	}
	return m.fallback
}

// Generation is the current projection generation: it grows whenever some
// block's model-visible state changes. Sync returns it; a blocksChanged
// notification can carry it.
func (m *Manager) Generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// Close stops the hint worker and closes every adapter. Later calls fail
// with ErrClosed. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	adapters := make([]Adapter, 0, len(m.adapters)+1)
	for _, a := range m.adapters {
		adapters = append(adapters, a)
	}
	if m.fallback != nil {
		adapters = append(adapters, m.fallback)
	}
	m.mu.Unlock()
	m.cancel()
	<-m.done
	var first error
	for _, a := range adapters {
		if err := a.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats returns counters for operators and benchmarks.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Stats{Blocks: map[Status]int{}, Reconciliations: map[string]int{}, VerifyPasses: m.verifies, Agents: len(m.agents)}
	for k, v := range m.recon {
		st.Reconciliations[k] = v
	}
	for _, b := range m.blocks {
		st.Blocks[b.status]++
		for _, l := range b.links {
			if l.src != nil && l.whole && sameString(l.text, l.src.text) {
				continue // shares the source's copy
			}
			st.BytesHeld += int64(len(l.text))
		}
	}
	for _, s := range m.sources {
		if len(s.links) > 0 {
			st.Sources++
		}
		st.BytesHeld += int64(len(s.text))
	}
	return st
}

func sameString(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// markDirty records that b's model-visible state changed.
func (m *Manager) markDirty(b *block) {
	if b.agent.dirty == nil {
		b.agent.dirty = map[*block]struct{}{}
	}
	b.agent.dirty[b] = struct{}{}
	m.gen++
	m.notify[b.agent.name] = struct{}{}
}

// flushNotify calls OnChange for the agents owed one, outside the lock.
func (m *Manager) flushNotify(exclude string) {
	m.mu.Lock()
	if len(m.notify) == 0 {
		m.mu.Unlock()
		return
	}
	agents := make([]string, 0, len(m.notify))
	for a := range m.notify {
		if a != exclude {
			agents = append(agents, a)
		}
	}
	m.notify = map[string]struct{}{}
	m.mu.Unlock()
	if len(agents) == 0 || m.onChange == nil {
		return
	}
	sort.Strings(agents)
	m.onChange(agents)
}

// syncWatch makes the adapter's watch match whether the source is wanted.
// Called outside the manager lock; watchMu orders concurrent callers and the
// last one applies the latest wish.
func (m *Manager) syncWatch(srcs ...*source) {
	for _, s := range srcs {
		s.watchMu.Lock()
		m.mu.Lock()
		want := s.wanted() && !m.closed
		m.mu.Unlock()
		switch {
		case want && !s.watched:
			if err := s.adapter.Watch(s.id); err != nil {
				// Not fatal: the verify pass before each sync still catches changes.
				m.log.Warn("watch failed; relying on the verify pass", "source", s.id, "err", err)
			}
			s.watched = true
		case !want && s.watched:
			s.adapter.Unwatch(s.id)
			s.watched = false
		}
		s.watchMu.Unlock()
	}
}

// Hint tells the manager that source id (a canonical URI) may have changed.
// It never blocks: the source is re-verified by the hint worker. Adapters
// use it as their Notify function.
func (m *Manager) Hint(id string) { m.enqueue([]string{id}, true) }

// enqueue hands sources to the background worker; force reads even when the
// stamp did not move (a hint: the hash decides).
func (m *Manager) enqueue(ids []string, force bool) {
	if len(ids) == 0 {
		return
	}
	m.hintMu.Lock()
	for _, id := range ids {
		m.pending[id] = m.pending[id] || force
	}
	m.hintMu.Unlock()
	select {
	case m.hintCh <- struct{}{}:
	default:
	}
}

func (m *Manager) runHints() {
	defer close(m.done)
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.hintCh:
		}
		m.hintMu.Lock()
		ids := make([]string, 0, len(m.pending))
		for id := range m.pending {
			ids = append(ids, id)
		}
		force := m.pending
		m.pending = map[string]bool{}
		m.hintMu.Unlock()
		sort.Strings(ids)
		for _, id := range ids {
			m.mu.Lock()
			s := m.sources[id]
			m.mu.Unlock()
			if s == nil {
				continue
			}
			if err := m.verify(m.ctx, s, force[id]); err != nil && m.ctx.Err() == nil {
				m.log.Warn("hint: verify failed", "source", id, "err", err)
			}
			m.flushNotify("")
		}
	}
}

func (m *Manager) count(k string) { m.recon[k]++ }

// syncPendingWatches syncs the watches of sources that lost links.
func (m *Manager) syncPendingWatches() {
	m.mu.Lock()
	srcs := m.unwatch
	m.unwatch = nil
	m.mu.Unlock()
	m.syncWatch(srcs...)
}
