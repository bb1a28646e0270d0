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
	res, err := locked(m, func(ix *index) (ReleaseResult, error) { return ix.release(req) })
	if err != nil {
		return ReleaseResult{}, err
	}
	m.syncPendingWatches()
	m.flushNotify("") // blocks that lost the read superseding them changed
	return res, nil
}

// unknownBlock names the release entry that was refused.
func unknownBlock(i int, format string, args ...any) error {
	return &FieldError{Field: fmt.Sprintf("blocks[%d]", i), Reason: ErrUnknownBlock.Error() + ": " + fmt.Sprintf(format, args...), Err: ErrUnknownBlock}
}
