package runtime

import (
	"context"
	"fmt"
	"sort"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// SourceChanged handles a change reported by the runtime's own write tool.
// Files are re-read from disk (the disk is the truth; Text is only a hint).
// Keyed sources take Text when given, else the adapter asks the client.
func (m *Manager) SourceChanged(ctx context.Context, ch Change) (ChangeResult, error) {
	if err := validateURI("uri", ch.URI); err != nil {
		return ChangeResult{}, err
	}
	src, err := m.lookup(ch.URI)
	if err != nil {
		return ChangeResult{}, wrapSource("sourceChanged", 0, ch.URI, err)
	}
	if src.reporter != nil && ch.Text == nil && ch.Version == "" {
		return ChangeResult{}, fieldErr("version", "required for keyed sources without text")
	}
	res := ChangeResult{Blocks: []string{}}
	src.io.Lock()
	if src.reporter != nil {
		src.reporter.Report(src.id, ch.Version, ch.Text)
	}
	m.mu.Lock()
	tracked := len(src.links) > 0
	m.mu.Unlock()
	if !tracked {
		src.io.Unlock()
		return res, nil
	}
	stamp, _ := src.adapter.Stamp(ctx, src.id)
	c, rerr := src.adapter.Read(ctx, src.id)
	if rerr != nil && ctx.Err() != nil {
		src.io.Unlock()
		return ChangeResult{}, ctx.Err()
	}
	if rerr == nil && ch.Text != nil && src.reporter == nil && normalizeText(*ch.Text) != normalizeText(c.Text) {
		m.log.Debug("sourceChanged: reported text differs from the source; the source wins", "source", src.id)
	}
	m.mu.Lock()
	var changed []*block
	if rerr != nil {
		changed = m.applyGone(src, stamp, rerr)
	} else {
		changed = m.applyContent(src, stamp, c)
	}
	m.attribute(src, changed, ch.Agent, ch.Anchor)
	sort.Slice(changed, func(i, j int) bool { return changed[i].seq < changed[j].seq })
	for _, b := range changed {
		res.Blocks = append(res.Blocks, b.id)
	}
	m.mu.Unlock()
	src.io.Unlock()
	m.flushNotify("")
	return res, nil
}

// Release drops blocks by id, or by the agent's anchors. Unknown block ids,
// or ids of another agent's blocks when Agent is set, fail the whole request
// (nothing is released); unknown anchors are skipped (events have anchors but
// no blocks).
func (m *Manager) Release(ctx context.Context, req ReleaseRequest) (ReleaseResult, error) {
	if err := validateRelease(req); err != nil {
		return ReleaseResult{}, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ReleaseResult{}, ErrClosed
	}
	var bs []*block
	seen := map[*block]bool{}
	for i, id := range req.Blocks {
		b, ok := m.blocks[id]
		if !ok {
			m.mu.Unlock()
			return ReleaseResult{}, unknownBlock(i, "%q", id)
		}
		if req.Agent != "" && b.agent.name != req.Agent {
			// One agent's binding must not drop another agent's tracking.
			m.mu.Unlock()
			return ReleaseResult{}, unknownBlock(i, "%q belongs to agent %q, not %q", id, b.agent.name, req.Agent)
		}
		if !seen[b] {
			seen[b] = true
			bs = append(bs, b)
		}
	}
	if ag := m.agents[req.Agent]; ag != nil {
		for _, a := range req.Anchors {
			for _, b := range ag.byAnchor[a] {
				if !seen[b] {
					seen[b] = true
					bs = append(bs, b)
				}
			}
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].seq < bs[j].seq })
	res := ReleaseResult{Released: make([]string, 0, len(bs))}
	for _, b := range bs {
		m.unlink(b)
		m.retireSuperseded(b)
		b.status = Released
		m.forget(b)
		m.count("released")
		res.Released = append(res.Released, b.id)
	}
	m.mu.Unlock()
	m.syncPendingWatches()
	m.flushNotify("") // blocks that lost the read superseding them changed
	return res, nil
}

// forget drops a block from every index. Caller holds m.mu and has unlinked it.
func (m *Manager) forget(b *block) {
	delete(m.blocks, b.id)
	ag := b.agent
	delete(ag.blocks, b)
	delete(ag.dirty, b)
	rest := ag.byAnchor[b.anchor][:0]
	for _, x := range ag.byAnchor[b.anchor] {
		if x != b {
			rest = append(rest, x)
		}
	}
	if len(rest) == 0 {
		delete(ag.byAnchor, b.anchor)
	} else {
		ag.byAnchor[b.anchor] = rest
	}
}

// trimAudit keeps an agent's audit trail of superseded blocks within
// m.auditMax. Only blocks a sync already reported are forgotten: an
// unreported one still owes its agent the notice that hides the old read.
// Caller holds m.mu.
func (m *Manager) trimAudit(ag *agentState) {
	for len(ag.audit) > m.auditMax {
		b := ag.audit[0]
		if b.status == Superseded || b.orphaned {
			if _, owed := ag.dirty[b]; owed {
				return
			}
			m.forget(b)
			m.count("auditDropped")
		}
		ag.audit[0] = nil
		ag.audit = ag.audit[1:]
	}
}

// unknownBlock names the release entry that was refused.
func unknownBlock(i int, format string, args ...any) error {
	return &FieldError{Field: fmt.Sprintf("blocks[%d]", i), Reason: ErrUnknownBlock.Error() + ": " + fmt.Sprintf(format, args...), Err: ErrUnknownBlock}
}
