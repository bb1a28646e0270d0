package runtime

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/locator"
)

// lookup finds the adapter and canonical id for uri and the source entry,
// creating it. Normalize runs outside the lock (it may touch the file system).
func (m *Manager) lookup(uri string) (*source, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	a := m.adapterForLocked(uri)
	m.mu.Unlock()
	if a == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownScheme, uriScheme(uri))
	}
	id, err := a.Normalize(uri)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sources[id]; ok {
		return s, nil
	}
	s := &source{id: id, adapter: a, display: id, links: map[*link]struct{}{}, scheme: a.Scheme()}
	if s.scheme == "*" {
		s.scheme = uriScheme(id)
	}
	if d, ok := a.(Displayer); ok {
		s.display = d.Display(id)
	}
	if r, ok := a.(Reporter); ok {
		s.reporter = r
	}
	m.sources[id] = s
	return s, nil
}

// Observe registers one tool observation. Events are acknowledged with
// Status EventAck and never tracked. A snapshot is verified against each
// source's current content first: a read that raced a write is reconciled
// at once.
func (m *Manager) Observe(ctx context.Context, obs Observation) (ObserveResult, error) {
	if err := validateObservation(&obs); err != nil {
		return ObserveResult{}, err
	}
	if obs.Kind == Event {
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return ObserveResult{}, ErrClosed
		}
		return ObserveResult{Status: EventAck, Superseded: []string{}}, nil
	}
	srcs := make([]*source, len(obs.Sources))
	for i, ref := range obs.Sources {
		s, err := m.lookup(ref.URI)
		if err != nil {
			return ObserveResult{}, wrapSource("observe", i, ref.URI, err)
		}
		if s.reporter != nil && ref.Version == "" {
			return ObserveResult{}, fieldErr(fmt.Sprintf("sources[%d].version", i), "required for keyed (non-file) sources")
		}
		srcs[i] = s
	}
	m.mu.Lock()
	for _, s := range srcs {
		s.pins++
	}
	m.mu.Unlock()
	unpin := func() {
		m.mu.Lock()
		for _, s := range srcs {
			s.pins--
			s.free()
		}
		m.mu.Unlock()
	}
	loaded := map[*source]bool{}
	for i, s := range srcs {
		if loaded[s] {
			continue
		}
		loaded[s] = true
		if err := m.load(ctx, s, obs.Sources[i]); err != nil {
			unpin()
			m.flushNotify("")
			return ObserveResult{}, wrapSource("observe", i, obs.Sources[i].URI, err)
		}
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		unpin()
		return ObserveResult{}, ErrClosed
	}
	b := m.register(obs, srcs)
	res := ObserveResult{Block: b.id, Status: b.status, Superseded: []string{}}
	if b.status != Invalid {
		res.Superseded = m.supersede(b)
	}
	res.Status = b.status
	for _, s := range srcs {
		s.pins--
	}
	m.mu.Unlock()
	m.syncWatch(srcs...)
	m.syncPendingWatches()
	m.flushNotify("")
	return res, nil
}

// load brings src's current content into the manager (I/O outside the lock).
func (m *Manager) load(ctx context.Context, src *source, ref SourceRef) error {
	src.io.Lock()
	defer src.io.Unlock()
	if src.reporter != nil {
		var text *string
		if ref.Range == nil {
			t := ref.Text
			text = &t
		}
		src.reporter.Report(src.id, ref.Version, text)
	}
	stamp, serr := src.adapter.Stamp(ctx, src.id)
	m.mu.Lock()
	fresh := serr == nil && stamp != "" && src.stamp == stamp && src.state == statePresent && (src.known || src.reporter != nil)
	others := len(src.links) > 0
	m.mu.Unlock()
	if fresh {
		return nil
	}
	if src.reporter != nil && !others {
		// Nothing else depends on this source: take the client's word for
		// the version instead of asking it to read again during observe.
		m.mu.Lock()
		m.applyUnknown(src, stamp, stamp)
		m.mu.Unlock()
		if ref.Range == nil && stamp == ref.Version {
			m.mu.Lock()
			m.attribute(src, m.applyContent(src, stamp, Content{Text: ref.Text, Version: ref.Version}), "", "")
			m.mu.Unlock()
		}
		return nil
	}
	c, err := src.adapter.Read(ctx, src.id)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.mu.Lock()
		m.attribute(src, m.applyGone(src, stamp, err), "", "")
		m.mu.Unlock()
		if src.reporter != nil || unavailable(err) {
			// A keyed source: the client could not answer, trust its report.
			// A file gone, binary, too large or unreadable by now: the
			// model saw its text all the same, so the block is registered
			// invalid and the next sync carries the notice (issue 10 bug 4).
			return nil
		}
		return err
	}
	m.mu.Lock()
	m.attribute(src, m.applyContent(src, stamp, c), "", "")
	m.mu.Unlock()
	return nil
}

// register builds the block, verifies each link against the source's current
// text and indexes it. Caller holds m.mu.
func (m *Manager) register(obs Observation, srcs []*source) *block {
	ag := m.agents[obs.Agent]
	if ag == nil {
		ag = &agentState{name: obs.Agent, blocks: map[*block]struct{}{}, byAnchor: map[string][]*block{}, srcRefs: map[*source]int{}}
		m.agents[obs.Agent] = ag
	}
	if obs.Turn > ag.turn {
		ag.turn = obs.Turn
	}
	m.seq++
	b := &block{id: "b" + strconv.FormatUint(m.seq, 10), seq: m.seq, agent: ag, anchor: obs.Anchor, turn: obs.Turn, status: Valid}
	if obs.Policy != nil {
		p := *obs.Policy
		b.policy = &p
		m.ageUsed = m.ageUsed || p.MaxAgeTurns != nil && *p.MaxAgeTurns > 0
	}
	b.links = make([]*link, len(obs.Sources))
	for i, ref := range obs.Sources {
		l := &link{block: b, idx: i, src: srcs[i], uri: srcs[i].id, whole: ref.Range == nil, text: normalizeText(ref.Text), version: ref.Version, tracked: true}
		if ref.Range != nil {
			l.rng = Range(*ref.Range)
		}
		b.links[i] = l
	}
	for _, l := range b.links {
		// What the model saw: the tool's text, at the version verification
		// established (before any raced-read repair, which is not yet shown).
		l.shown, l.shownRng = l.text, l.rng
		m.verifyLink(l)
	}
	for _, l := range b.links {
		l.src.links[l] = struct{}{}
		ag.srcRefs[l.src]++
	}
	m.blocks[b.id] = b
	ag.blocks[b] = struct{}{}
	replaced := false
	if obs.Anchor != "" {
		// The same tool result registered again (a binding that restarted or
		// re-read its history): the new block replaces the old one outright.
		// Superseding it instead would send the anchor two views.
		for _, old := range slices.Clone(ag.byAnchor[obs.Anchor]) {
			m.unlink(old)
			m.retireSuperseded(old)
			old.status = Released
			m.forget(old)
			m.count("replaced")
			replaced = true
		}
		ag.byAnchor[obs.Anchor] = append(ag.byAnchor[obs.Anchor], b)
	}
	m.recompute(b)
	placeRegistered(b, replaced)
	if b.status != Valid || replaced {
		m.markDirty(b) // the next sync carries the repair (or resets the anchor's view)
	}
	return b
}

// verifyLink compares what the tool showed with the source's current text
// and reconciles a mismatch (a read that raced a write).
func (m *Manager) verifyLink(l *link) {
	src := l.src
	switch {
	case src.state != statePresent:
		if src.reporter != nil {
			return // the client could not be asked: trust its report
		}
		c := causeDeleted
		if src.state == stateUnreadable {
			c = causeUnreadable
		}
		rc := m.newReconciler(src, "", nil, false)
		rc.gone(l, c, src.readErr)
		rc.finish(false)
		return
	case !src.known:
		return // keyed source reported without full text: trust the report
	}
	cur := src.getLines()
	if l.whole {
		// A tool may drop the final newline of a file ending in a blank line.
		if slices.Equal(locator.SplitLines(l.text), cur) || slices.Equal(locator.SplitLines(l.text+"\n"), cur) {
			l.text, l.version = wholeText(src.text), src.version
			l.shown, l.shownVersion = l.text, l.version // the same content, canonical
			return
		}
	} else if l.rng.End <= len(cur) && slices.Equal(spanLines(l.text, l.rng), cur[l.rng.Start-1:l.rng.End]) {
		// The canonical form (lines joined by "\n") keeps text == lines at
		// rng; most tools already send it, so only a terminated or CR text
		// is rebuilt.
		if strings.HasSuffix(l.text, "\n") || strings.IndexByte(l.text, '\r') >= 0 {
			l.text = locator.JoinLines(cur[l.rng.Start-1 : l.rng.End])
		}
		l.version = src.version
		l.shown, l.shownVersion = l.text, l.version // the same content, canonical
		return
	}
	m.count("raced")
	rc := m.newReconciler(src, "", nil, false)
	rc.prefix = "raced read: "
	rc.link(l)
	rc.finish(false)
}

// supersede retires older blocks of the same agent whose every link lies
// inside a link of b. Caller holds m.mu.
func (m *Manager) supersede(b *block) []string {
	cands := map[*block]struct{}{}
	seen := make(map[*source]bool, 1)
	for _, l := range b.links {
		if seen[l.src] {
			continue // a grep block links one source many times: scan it once
		}
		seen[l.src] = true
		for ol := range l.src.links {
			ob := ol.block
			if ob != b && ob.agent == b.agent && ob.seq < b.seq && ob.status != Superseded {
				cands[ob] = struct{}{}
			}
		}
	}
	var old []*block
	for ob := range cands {
		if contained(ob, b) {
			old = append(old, ob)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].seq < old[j].seq })
	ids := make([]string, 0, len(old))
	for _, ob := range old {
		ob.notice = noticeSuperseded(ob, b)
		ob.status, ob.supersededBy, ob.reason = Superseded, b.id, "superseded by "+b.id
		m.unlink(ob)
		m.count("superseded")
		m.markDirty(ob)
		ob.agent.audit = append(ob.agent.audit, ob)
		ids = append(ids, ob.id)
	}
	m.trimAudit(b.agent)
	return ids
}

func contained(ob, nb *block) bool {
	for _, ol := range ob.links {
		in := false
		for _, nl := range nb.links {
			if nl.src == ol.src && (nl.whole || !ol.whole && nl.rng.Start <= ol.rng.Start && ol.rng.End <= nl.rng.End) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// unlink removes b's links from the source index, keeping a small audit
// record (uri, lines, version) and dropping texts. Caller holds m.mu; the
// caller syncs watches afterwards.
func (m *Manager) unlink(b *block) {
	for _, l := range b.links {
		if l.src == nil {
			continue
		}
		delete(l.src.links, l)
		l.src.free()
		if ag := b.agent; ag.srcRefs[l.src] <= 1 {
			delete(ag.srcRefs, l.src)
		} else {
			ag.srcRefs[l.src]--
		}
		m.unwatch = append(m.unwatch, l.src)
		l.display = l.src.display
		l.src, l.text, l.anchor = nil, "", nil
	}
}

// retireSuperseded runs when b leaves the context (released, or replaced by a
// new result for its anchor). The blocks b superseded show only a notice that
// "a newer read is in the context": if b was itself superseded, the newer
// read that replaced b covers them too; otherwise nothing covers them any
// more and they become invalid, asking for a re-read (their text is gone).
// Caller holds m.mu, before changing b's status.
func (m *Manager) retireSuperseded(b *block) {
	var by *block
	if b.status == Superseded {
		by = m.blocks[b.supersededBy]
	}
	for _, s := range b.agent.audit {
		if s == nil || s.status != Superseded || s.supersededBy != b.id {
			continue
		}
		if by != nil {
			s.supersededBy, s.reason = by.id, "superseded by "+by.id
			s.notice = noticeSuperseded(s, by)
		} else {
			s.status, s.supersededBy, s.orphaned = Invalid, "", true
			s.notice = noticeOrphaned(s)
			s.reason = "the newer read " + b.id + " left the context"
			m.count("orphaned")
			m.retireSuperseded(s) // what s superseded lost its cover too
		}
		m.markDirty(s)
	}
}
