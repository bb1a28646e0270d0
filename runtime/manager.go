package runtime

import (
	"cmp"
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// Config configures a Manager.
type Config struct {
	// Options are initialize's params as the client sent them, checked by
	// their Validate (the server does; New does not), with the operator's
	// policy laid under (MergePolicy). The Manager keeps them as they are
	// and reads what it uses: policy, locator, placement, cache. Omitted
	// options take the defaults (LocatorParams, DefaultPlacement,
	// DefaultCacheTTL).
	Options protocol.InitializeParams
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
	// Now is the clock (default time.Now), for tests.
	Now func() time.Time
}

// DefaultAuditLimit is Config.AuditLimit's default.
const DefaultAuditLimit = 1024

// Manager is the context manager. It is safe for concurrent use. Public
// methods take mu for an index operation and release it before adapter I/O
// and before notifying, so a source is read outside the lock and the result
// applied under it, in read order per source.
//
// The locks, and what each guards:
//   - Manager.mu: closed, adapters, fallback, bySource and the whole index
//     (index.go: sources, blocks, agents, their links and placement state).
//   - source.io: orders "read the source, then apply under mu" per source,
//     so results apply in read order while other sources proceed.
//   - source.watchMu: orders Watch/Unwatch calls to the adapter per source,
//     and guards source.watched.
//   - hintQueue.mu: the pending hints (a leaf: nothing is locked under it).
//
// Lock order: source.io, then Manager.mu; source.watchMu, then Manager.mu.
// Nothing takes io or watchMu while holding Manager.mu, and no adapter is
// called under Manager.mu.
type Manager struct {
	// opts are the session's options as Config gave them (opts.Policy is
	// never nil); the fields after it are the views of them the hot paths
	// read, resolved once in New: defaults filled in, units converted.
	opts      protocol.InitializeParams
	params    locator.Params // opts.Locator
	placement string         // opts.Placement: PlacementInplace, PlacementTail or PlacementAuto
	cacheTTL  time.Duration  // opts.Cache.TTL
	price     *CachePrice    // opts.Cache.Price
	clock     func() time.Time

	onChange func([]string)
	log      *slog.Logger

	mu       sync.Mutex // see the type's comment for what it guards
	closed   bool
	adapters map[string]Adapter
	fallback Adapter
	bySource map[string]protocol.Policy // BySource keys normalised to canonical ids
	ix       index                      // guarded by mu

	// reads numbers the source reads as they begin (source.readAt): a read
	// that began after a sync did serves that sync as well as its own.
	reads atomic.Uint64

	hints  *hintQueue
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Manager. Close it to stop its hint worker and adapters.
func New(cfg Config) *Manager {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts, pol := cfg.Options, protocol.PolicyConfig{}
	if opts.Policy != nil {
		pol = *opts.Policy
	}
	opts.Policy = &pol // the Manager's own: the caller's stays the caller's
	if err := pol.Validate("policy"); err != nil {
		// A Go caller that skipped Validate: resolve skips invalid actions.
		log.Warn("policy: invalid entries are ignored", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:      opts,
		params:    LocatorParams(opts.Locator),
		placement: cmp.Or(opts.Placement, DefaultPlacement),
		cacheTTL:  opts.Cache.TTL(),
		clock:     cfg.Now,
		onChange:  cfg.OnChange,
		log:       log,
		adapters:  map[string]Adapter{},
		bySource:  map[string]protocol.Policy{},
		ix:        newIndex(cfg.AuditLimit),
		hints:     newHintQueue(),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	if m.cacheTTL <= 0 { // left out (Validate refuses <= 0 on the wire)
		m.cacheTTL = DefaultCacheTTL
	}
	if opts.Cache != nil {
		m.price = opts.Cache.Price
	}
	for k, pol := range opts.Policy.BySource {
		m.bySource[k] = pol
		m.ix.useAge(&pol)
	}
	for _, pol := range opts.Policy.ByType {
		m.ix.useAge(&pol)
	}
	m.ix.useAge(&opts.Policy.Global)
	go m.runHints()
	return m
}

// locked runs op on the index under the lock, or fails with ErrClosed once
// the manager is closed. I/O and notifications belong outside it.
func locked[T any](m *Manager, op func(ix *index) (T, error)) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		var zero T
		return zero, ErrClosed
	}
	return op(&m.ix)
}

// withLock runs f under the lock: an index update between two pieces of I/O.
func (m *Manager) withLock(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// effective is a policy with every field resolved.
type effective struct {
	local, drift protocol.Action
	driftSet     bool // a layer chose drift (else it is the default, Suppress)
	maxAge       int
	derived      string // which changes correct a summary: protocol.DerivedMentioned (default) or DerivedRange
}

// resolve merges the layers block > source > resource type > global, field
// by field; invalid actions are skipped like empty ones. Caller holds m.mu.
func (m *Manager) resolve(b *block, s *source) effective {
	layers := make([]*protocol.Policy, 0, 4)
	if b != nil && b.policy() != nil {
		layers = append(layers, b.policy())
	}
	if s != nil {
		if p, ok := m.bySource[s.id]; ok {
			layers = append(layers, &p)
		}
		if p, ok := m.opts.Policy.ByType[s.scheme]; ok {
			layers = append(layers, &p)
		}
	}
	layers = append(layers, &m.opts.Policy.Global)
	e := effective{local: protocol.Patch, drift: protocol.Suppress, derived: DefaultDerived}
	var gotLocal, gotAge, gotDerived bool
	for _, p := range layers {
		if !gotLocal && p.Local.Valid() {
			e.local, gotLocal = p.Local, true
		}
		if !e.driftSet && p.Drift.Valid() {
			e.drift, e.driftSet = p.Drift, true
		}
		if !gotAge && p.MaxAgeTurns != nil && *p.MaxAgeTurns >= 0 {
			e.maxAge, gotAge = *p.MaxAgeTurns, true
		}
		if !gotDerived && (p.Derived == protocol.DerivedRange || p.Derived == protocol.DerivedMentioned) {
			e.derived, gotDerived = p.Derived, true
		}
	}
	return e
}

// maxAge is the smallest positive age limit among the block's links; 0 = off.
func (m *Manager) maxAge(b *block) int {
	n := 0
	for _, l := range b.links {
		if a := m.resolve(b, l.src).maxAge; a > 0 && (n == 0 || a < n) {
			n = a
		}
	}
	return n
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
	keys := make([]string, 0, len(m.opts.Policy.BySource))
	for k := range m.opts.Policy.BySource {
		if m.adapterForLocked(k) == a {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	// Normalising may touch the adapter's world (symlinks): outside the lock.
	for _, k := range keys {
		if id, err := a.Normalize(k); err == nil {
			m.mu.Lock()
			m.bySource[id] = m.opts.Policy.BySource[k]
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
	return protocol.Scheme(uri)
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
	return m.ix.generation()
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
func (m *Manager) Stats() protocol.StatsResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ix.stats()
}

// sharesBytes reports whether a and b are the same bytes in memory (the same
// pointer and length): a cheap proof that a text was not replaced, not a
// comparison of contents.
func sharesBytes(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// flushNotify calls OnChange for the agents owed one, outside the lock.
func (m *Manager) flushNotify(exclude string) {
	m.mu.Lock()
	agents := m.ix.takeNotify(exclude)
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

// enqueue hands sources to the background worker; force reads even when
// the stamp did not move.
func (m *Manager) enqueue(ids []string, force bool) { m.hints.add(ids, force) }

func (m *Manager) runHints() {
	defer close(m.done)
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.hints.kick:
		}
		hs := m.hints.take()
		since := m.reads.Load() // the hinted changes happened before this
		for _, h := range hs {
			m.mu.Lock()
			s := m.ix.known(h.id)
			m.mu.Unlock()
			if s == nil {
				continue
			}
			if err := m.verify(m.ctx, s, h.force, since); err != nil && m.ctx.Err() == nil {
				m.log.Warn("hint: verify failed", "source", h.id, "err", err)
			}
			m.flushNotify("")
		}
	}
}

// syncPendingWatches syncs the watches of sources that lost links.
func (m *Manager) syncPendingWatches() {
	m.mu.Lock()
	srcs := m.ix.takeUnwatch()
	m.mu.Unlock()
	m.syncWatch(srcs...)
}
