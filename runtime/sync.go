package runtime

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/concord-ctx/concord/protocol"
)

// verify brings src up to date: a cheap Stamp, and a Read only when the stamp
// moved (or force). I/O happens outside the manager lock; src.io keeps reads
// and applies of one source in order.
func (m *Manager) verify(ctx context.Context, src *source, force bool, since uint64) error {
	src.io.Lock()
	defer src.io.Unlock()
	if src.readAt > since {
		return nil // a read that began after the caller's did is applied: it is newer than needed
	}
	var live, fresh bool
	var prev string
	m.withLock(func() {
		live = !m.closed && src.tracked()
		prev = src.stamp
		// An unchanged stamp means nothing new, unless the content was never read.
		fresh = src.state != statePresent || src.known || src.reporter != nil || src.textless() && src.version != ""
	})
	if !live {
		return nil
	}
	stamp, serr := src.adapter.Stamp(ctx, src.id)
	if !force && serr == nil && stamp != "" && stamp == prev && fresh {
		return nil
	}
	_, _, err := m.readApply(ctx, src, stamp, editBy{})
	return err
}

// readApply reads src and applies what the read found: its content, or
// that it is gone or unreadable (readErr, applied all the same). The
// stamp, taken before the read, is stored with the content, so it is never
// newer than it. Only a read cut short by ctx applies nothing (err).
// Caller holds src.io: reads and applies of one source stay in order, and
// readAt tells later verifies that this read covers them.
func (m *Manager) readApply(ctx context.Context, src *source, stamp string, by editBy) (changed []*block, readErr, err error) {
	src.readAt = m.reads.Add(1)
	c, readErr := src.adapter.Read(ctx, src.id)
	if readErr != nil && ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	return m.applyRead(src, stamp, c, readErr, by), readErr, nil
}

// applyRead applies the outcome of one Read of src under the lock and
// returns the blocks whose state changed. by names the agent's edit that
// made the change, when the agent reported it (zero: an outside change).
func (m *Manager) applyRead(src *source, stamp string, c Content, err error, by editBy) []*block {
	p := m.prepare(src, c, err)
	m.mu.Lock()
	defer m.mu.Unlock()
	var changed []*block
	if err != nil {
		changed = m.applyGone(src, stamp, err)
	} else {
		changed = m.applyContent(src, stamp, c, p)
	}
	m.attribute(src, changed, by.agent, by.anchor)
	return changed
}

// verifyWorkers bounds the parallel reads of one verify pass (the sources
// whose stamps moved): reads wait on the disk, so a few in flight hide it.
const verifyWorkers = 8

// stampCheck is one source of a verify pass: its stamp before the pass,
// and whether an unchanged stamp may be trusted (its content was read).
type stampCheck struct {
	src   *source
	prev  string
	fresh bool
}

// verifyAll verifies srcs: their stamps first, all at once and serially (a
// BatchStamper walks each directory once; parallel stats of cached inodes
// only add scheduling on a few cores), then a Read of each source whose
// stamp moved, in parallel when there are many.
func (m *Manager) verifyAll(ctx context.Context, srcs []*source, since uint64) error {
	checks := make([]stampCheck, 0, len(srcs))
	m.withLock(func() {
		if m.closed {
			return
		}
		for _, s := range srcs {
			if s.tracked() {
				// An unchanged stamp means nothing new, unless the content was never read.
				checks = append(checks, stampCheck{s, s.stamp, s.state != statePresent || s.known || s.reporter != nil || s.textless() && s.version != ""})
			}
		}
	})
	if len(checks) == 0 {
		return nil
	}
	stamps, errs := stampAll(ctx, checks)
	if err := ctx.Err(); err != nil {
		return err
	}
	var moved []int
	for i, c := range checks {
		if errs[i] == nil && stamps[i] != "" && stamps[i] == c.prev && c.fresh {
			continue
		}
		moved = append(moved, i)
	}
	return readAll(moved, func(i int) error { return m.verifyRead(ctx, checks[i].src, stamps[i], since) })
}

// stampAll stamps every check's source: one batch per adapter that can take
// one (in the order of the checks), one Stamp each otherwise.
func stampAll(ctx context.Context, checks []stampCheck) ([]string, []error) {
	stamps := make([]string, len(checks))
	errs := make([]error, len(checks))
	var batches map[BatchStamper][]int
	for i, c := range checks {
		if bs, ok := c.src.adapter.(BatchStamper); ok {
			if batches == nil {
				batches = map[BatchStamper][]int{}
			}
			batches[bs] = append(batches[bs], i)
			continue
		}
		stamps[i], errs[i] = c.src.adapter.Stamp(ctx, c.src.id)
	}
	for bs, idx := range batches {
		ids := make([]string, len(idx))
		for k, i := range idx {
			ids[k] = checks[i].src.id
		}
		st, es := bs.Stamps(ctx, ids)
		for k, i := range idx {
			stamps[i], errs[i] = st[k], es[k]
		}
	}
	return stamps, errs
}

// readAll calls read for each of moved: serially when they are few, else on
// verifyWorkers goroutines; the first error stops the pass.
func readAll(moved []int, read func(int) error) error {
	if len(moved) < 2*verifyWorkers {
		for _, i := range moved {
			if err := read(i); err != nil {
				return err
			}
		}
		return nil
	}
	next := make(chan int)
	errc := make(chan error, verifyWorkers)
	var wg sync.WaitGroup
	for w := 0; w < verifyWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := read(i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, i := range moved {
		select {
		case next <- i:
		case err = <-errc:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// verifyRead reads src, whose stamp was taken (before the read, so the
// stamp is never newer than the content it is stored with) and moved.
func (m *Manager) verifyRead(ctx context.Context, src *source, stamp string, since uint64) error {
	src.io.Lock()
	defer src.io.Unlock()
	if src.readAt > since {
		// Another sync's (or the worker's) read began after this pass did
		// and is applied: it saw every change this sync must show. Many
		// agents syncing at once share one read of a moving file.
		return nil
	}
	var live bool
	m.withLock(func() { live = !m.closed && src.tracked() })
	if !live {
		return nil
	}
	_, _, err := m.readApply(ctx, src, stamp, editBy{})
	return err
}

// Sync verifies every source with live blocks, flags the agent's aged
// blocks, and returns the agent's projection: the blocks whose model-visible
// state changed since its previous Sync, or every block when Full. An agent
// that has observed nothing gets an empty projection.
func (m *Manager) Sync(ctx context.Context, req protocol.SyncParams) (protocol.SyncResult, error) {
	if err := req.Validate(); err != nil {
		return protocol.SyncResult{}, err
	}
	since := m.reads.Load() // reads that begin after this are new enough for this sync
	plan, err := locked(m, func(ix *index) (syncPlan, error) { return ix.planSync(req, m.now()), nil })
	if err != nil {
		return protocol.SyncResult{}, err
	}
	if plan.agent == nil {
		return protocol.SyncResult{Generation: plan.gen, Full: req.Full, Blocks: []protocol.BlockView{},
			Flushed: m.placement != PlacementInplace && (req.Full || req.PrefixRebuilt)}, nil
	}
	// Every source with live blocks is verified: the agent's own sources
	// here, before projecting; the others by the background worker (their
	// agents hear of changes via OnChange), so a slow read of someone
	// else's source never blocks this sync.
	m.enqueue(plan.others, false)
	if err := m.verifyAll(ctx, plan.own, since); err != nil {
		return protocol.SyncResult{}, err
	}
	var rs []rendering
	res, err := locked(m, func(ix *index) (protocol.SyncResult, error) {
		res := m.project(plan.agent, req)
		rs = m.renderings(res.Blocks)
		return res, nil
	})
	if err != nil {
		return protocol.SyncResult{}, err
	}
	render(res.Blocks, rs)
	m.flushNotify(req.Agent)
	return res, nil
}

// syncPlan is what a sync verifies before it projects.
type syncPlan struct {
	agent  *agentState // nil: the agent has observed nothing
	gen    uint64
	own    []*source // sources with the agent's live blocks
	others []string  // other sources with live blocks, for the worker
}

// maxPrelude bounds the agents whose syncs are remembered before they
// observe anything (a client that names a new agent per call gains nothing).
const maxPrelude = 1024

func (ix *index) planSync(req protocol.SyncParams, now time.Time) syncPlan {
	ag := ix.agents[req.Agent]
	if ag == nil {
		// Its calls and prompt size still count: the first read's place in
		// the prompt (priced rewrites) is where this prompt ends.
		if p, ok := ix.prelude[req.Agent]; ok || len(ix.prelude) < maxPrelude {
			p.calls, p.last = p.calls+1, now
			if req.PromptChars > 0 {
				p.prompt = req.PromptChars
			}
			ix.prelude[req.Agent] = p
		}
		return syncPlan{gen: ix.gen}
	}
	if req.Turn > ag.turn {
		ag.turn = req.Turn
	}
	p := syncPlan{agent: ag, own: make([]*source, 0, len(ag.srcRefs)+len(ag.provRefs))}
	for _, s := range ix.sources {
		if ag.srcRefs[s] > 0 || ag.provRefs[s] > 0 {
			p.own = append(p.own, s)
		} else if s.tracked() {
			p.others = append(p.others, s.id)
		}
	}
	return p
}

// project ages the agent's blocks and takes its projection: the dirty
// blocks (or all, when Full), whose views become what the model last saw.
// Caller holds m.mu.
func (m *Manager) project(ag *agentState, req protocol.SyncParams) protocol.SyncResult {
	m.ix.verified()
	m.age(ag, req.Turn)
	var bs []*block
	if req.Full {
		for b := range ag.all() {
			bs = append(bs, b)
		}
	} else {
		for b := range ag.dirty {
			bs = append(bs, b)
		}
	}
	ag.dirty = nil
	m.ix.notified(ag.name)
	sort.Slice(bs, func(i, j int) bool { return bs[i].seq < bs[j].seq })
	res := protocol.SyncResult{Full: req.Full}
	res.Blocks, res.Flushed = m.place(ag, bs, req)
	res.Generation = m.ix.generation() // after place: a flush re-places deferred views, a new projection
	return res
}

// age flags the agent's blocks not re-read within their resource type's
// maxAgeTurns. Caller holds m.mu.
func (m *Manager) age(ag *agentState, turn int) {
	if !m.ix.aging() {
		return // no layer sets maxAgeTurns and no block does
	}
	for b := range ag.all() {
		if b.aged || b.status() == protocol.Superseded || b.status() == protocol.Invalid {
			continue
		}
		n := m.maxAge(b)
		if n <= 0 || turn-b.turn <= n {
			continue
		}
		b.aged = true
		b.ext().ageNotice = noticeAged(b, turn, n)
		b.ext().reason = "aged: observed at turn " + itoa(b.turn) + ", now turn " + itoa(turn) + " (maxAgeTurns " + itoa(n) + ")"
		m.recompute(b)
		m.ix.count("aged")
		m.ix.markDirty(b)
	}
}

// view is the model-facing projection of one block. Caller holds m.mu.
func view(b *block) protocol.BlockView {
	v := protocol.BlockView{Block: b.id(), Anchor: b.anchor, Agent: b.agent.name, Turn: b.turn, Status: b.status(),
		Notice: b.notice(), SupersededBy: b.supersededBy(), Reason: b.reason()}
	switch b.status() {
	case protocol.Valid, protocol.Patched, protocol.Stale:
		v.Sources = make([]protocol.Source, len(b.links))
		for i, l := range b.links {
			sv := protocol.Source{URI: l.uri(), Text: l.text, Version: l.version, TotalLines: l.totalLines()}
			if !l.whole {
				r := protocol.Range(l.rng)
				sv.Range = &r
			}
			v.Sources[i] = sv
		}
	}
	return v
}

// totalLines is the current line count of l's source, nil when unknown.
func (l *link) totalLines() *int {
	s := l.src
	if s == nil || s.state != statePresent || !s.known {
		return nil
	}
	n := lineCount(s.text)
	return &n
}

// lineCount is len(locator.SplitLines(s)) without building the slice.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
