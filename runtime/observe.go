package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// lookup finds the adapter and canonical id for uri and the source entry,
// creating it. Normalize runs outside the lock (it may touch the file system).
func (m *Manager) lookup(uri string) (*source, error) {
	a, err := locked(m, func(*index) (Adapter, error) { return m.adapterForLocked(uri), nil })
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownScheme, uriScheme(uri))
	}
	id, err := a.Normalize(uri)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ix.source(id, a), nil
}

// Observe registers one tool observation. Events are acknowledged with
// Status EventAck and never tracked. A snapshot is verified against each
// source's current content first: a read that raced a write is reconciled
// at once.
func (m *Manager) Observe(ctx context.Context, obs protocol.ObserveParams) (protocol.ObserveResult, error) {
	return m.ObserveView(ctx, obs, nil)
}

// ObserveView is Observe for a block whose in-place views v renders (nil:
// none, as Observe). The block keeps v while it is live.
func (m *Manager) ObserveView(ctx context.Context, obs protocol.ObserveParams, v View) (protocol.ObserveResult, error) {
	if err := obs.Validate(); err != nil {
		return protocol.ObserveResult{}, err
	}
	if obs.Kind == protocol.Event {
		return locked(m, func(*index) (protocol.ObserveResult, error) {
			return protocol.ObserveResult{Status: protocol.EventAck, Superseded: []string{}}, nil
		})
	}
	srcs, err := m.lookupAll(obs.Sources)
	if err != nil {
		return protocol.ObserveResult{}, err
	}
	// Pinned, the sources keep their text while they load, before any
	// link holds them.
	m.pin(srcs, 1)
	if err := m.loadAll(ctx, srcs, obs.Sources); err != nil {
		m.pin(srcs, -1)
		m.flushNotify("")
		return protocol.ObserveResult{}, err
	}
	res, err := locked(m, func(*index) (protocol.ObserveResult, error) {
		b := m.register(obs, srcs, v)
		res := protocol.ObserveResult{Block: b.id(), Superseded: []string{}}
		if b.status() != protocol.Invalid {
			res.Superseded = m.ix.supersede(b)
		}
		res.Status = b.status()
		return res, nil
	})
	m.pin(srcs, -1)
	if err != nil {
		return protocol.ObserveResult{}, err
	}
	m.syncWatch(srcs...)
	m.syncPendingWatches()
	m.flushNotify("")
	return res, nil
}

// lookupAll resolves every source of an observation, checking that keyed
// sources carry a version.
func (m *Manager) lookupAll(refs []protocol.Source) ([]*source, error) {
	srcs := make([]*source, len(refs))
	for i, ref := range refs {
		s, err := m.lookup(ref.URI)
		if err != nil {
			return nil, wrapSource("observe", i, ref.URI, err)
		}
		if s.reporter != nil && ref.Version == "" {
			return nil, protocol.FieldErrorf(fmt.Sprintf("sources[%d].version", i), "required for keyed (non-file) sources")
		}
		srcs[i] = s
	}
	return srcs, nil
}

// pin adds delta to the sources' pins; unpinned sources without links let
// their text go.
func (m *Manager) pin(srcs []*source, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range srcs {
		s.pins += delta
		if delta < 0 {
			s.free()
		}
	}
}

// loadAll loads each distinct source once (I/O outside the lock).
func (m *Manager) loadAll(ctx context.Context, srcs []*source, refs []protocol.Source) error {
	loaded := map[*source]bool{}
	for i, s := range srcs {
		if loaded[s] {
			continue
		}
		loaded[s] = true
		if err := m.load(ctx, s, refs[i]); err != nil {
			return wrapSource("observe", i, refs[i].URI, err)
		}
	}
	return nil
}

// load brings src's current content into the manager (I/O outside the lock).
func (m *Manager) load(ctx context.Context, src *source, ref protocol.Source) error {
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
	if m.settled(src, stamp, serr, ref) {
		return nil
	}
	_, err, cut := m.readApply(ctx, src, stamp, editBy{})
	switch {
	case cut != nil:
		return cut
	case err == nil:
		return nil
	}
	if errors.Is(err, ErrTooLarge) && src.reporter == nil {
		// Over the size cap nothing can tell whether the read is still
		// true, and "changed" would be a guess that sends the agent into
		// re-reads of an untouched file: refused, the read passes through
		// as the tool showed it.
		return err
	}
	if src.reporter != nil || unavailable(err) {
		// A keyed source: the client could not answer, trust its report.
		// A file gone, binary, too large or unreadable by now: the model
		// saw its text all the same, so the block is registered invalid
		// and the next sync carries the notice (issue 10 bug 4).
		return nil
	}
	return err
}

// settled reports, under the lock, that src needs no read: its stamp is
// the one already applied, or it is a keyed source nothing else depends on,
// so the client's word for the version is taken (and applied) instead of
// asking it to read again during observe.
func (m *Manager) settled(src *source, stamp string, serr error, ref protocol.Source) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case serr == nil && stamp != "" && src.stamp == stamp && src.state == statePresent && (src.known || src.reporter != nil):
		return true
	case src.reporter != nil && src.nlinks == 0:
		m.applyUnknown(src, stamp, stamp)
		if ref.Range == nil && stamp == ref.Version {
			m.attribute(src, m.applyContent(src, stamp, Content{Text: ref.Text, Version: ref.Version}, nil), "", "")
		}
		return true
	}
	return false
}

// register builds the block, verifies each link against the source's current
// text and indexes it. Caller holds m.mu.
func (m *Manager) register(obs protocol.ObserveParams, srcs []*source, v View) *block {
	ag := m.ix.agent(obs.Agent)
	if obs.Turn > ag.turn {
		ag.turn = obs.Turn
	}
	b := m.ix.newBlock(ag, obs.Anchor, obs.Turn, len(obs.Sources))
	if obs.Policy != nil {
		p := *obs.Policy
		b.ext().policy = &p
		m.ix.useAge(&p)
	}
	if v != nil {
		b.ext().view = v
	}
	for i, ref := range obs.Sources {
		l := b.links[i]
		*l = link{block: b, src: srcs[i], whole: ref.Range == nil, text: observedText(ref.Text, ref.Range == nil || ref.Range.Start == 1), version: ref.Version, tracked: true}
		if ref.Range != nil {
			l.rng = Range(*ref.Range)
		}
	}
	for _, l := range b.links {
		// What the model saw: the tool's text, at the version verification
		// established (before any raced-read repair, which is not yet shown).
		m.verifyLink(l)
	}
	m.ix.addBlock(b)
	replaced := false
	if obs.Anchor != "" {
		// The same tool result registered again (a binding that restarted or
		// re-read its history): the new block replaces the old one outright.
		// Superseding it instead would send the anchor two views.
		replaced = m.ix.replaceAnchor(ag, obs.Anchor)
		m.ix.addAnchor(b)
	}
	m.recompute(b)
	placeRegistered(b, replaced)
	if b.status() != protocol.Valid || replaced {
		m.ix.markDirty(b) // the next sync carries the repair (or resets the anchor's view)
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
		if sameLines(locator.SplitLines(l.text), cur) || sameLines(locator.SplitLines(l.text+"\n"), cur) {
			l.text, l.version = wholeText(src.text), src.version
			l.showCurrent() // the same content, canonical
			return
		}
	} else if shown, at := spanLines(l.text, l.rng), curSpan(cur, l.rng); at != nil && sameLines(shown, at) {
		// The canonical form (lines joined by "\n") keeps text == lines at
		// rng; most tools already send it, so only a terminated or CR text,
		// or one decoded from non-UTF-8 bytes, is rebuilt.
		if strings.HasSuffix(l.text, "\n") || strings.IndexByte(l.text, '\r') >= 0 || !slices.Equal(shown, at) {
			l.text = locator.JoinLines(at)
		}
		l.version = src.version
		l.showCurrent() // the same content, canonical
		l.tail = l.rng.End == len(cur)
		return
	}
	m.ix.count("raced")
	rc := m.newReconciler(src, "", nil, false)
	rc.prefix = "raced read: "
	rc.link(l)
	rc.finish(false)
}

// curSpan is the source's lines at r, or nil when r runs past the end.
func curSpan(cur []string, r Range) []string {
	if r.End > len(cur) {
		return nil
	}
	return cur[r.Start-1 : r.End]
}
