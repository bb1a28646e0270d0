package runtime

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/concord-ctx/concord/protocol"
)

func itoa(n int) string { return strconv.Itoa(n) }

// SourceChanged handles a change reported by the runtime's own write tool.
// Files are re-read from disk (the disk is the truth; Text is only a hint).
// Keyed sources take Text when given, else the adapter asks the client.
func (m *Manager) SourceChanged(ctx context.Context, ch protocol.SourceChangedParams) (protocol.SourceChangedResult, error) {
	if err := ch.Validate(); err != nil {
		return protocol.SourceChangedResult{}, err
	}
	src, err := m.lookup(ch.URI)
	if err != nil {
		return protocol.SourceChangedResult{}, wrapSource("sourceChanged", 0, ch.URI, err)
	}
	if src.reporter != nil && ch.Text == nil && ch.Version == "" {
		return protocol.SourceChangedResult{}, fieldErr("version", "required for keyed sources without text")
	}
	changed, err := m.reread(ctx, src, ch)
	if err != nil {
		return protocol.SourceChangedResult{}, err
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i].seq < changed[j].seq })
	res := protocol.SourceChangedResult{Blocks: make([]string, 0, len(changed))}
	for _, b := range changed {
		res.Blocks = append(res.Blocks, b.id())
	}
	m.flushNotify("")
	return res, nil
}

// reread reads a reported source again (when something depends on it) and
// applies the result; it returns the blocks whose state changed.
func (m *Manager) reread(ctx context.Context, src *source, ch protocol.SourceChangedParams) ([]*block, error) {
	src.io.Lock()
	defer src.io.Unlock()
	if src.reporter != nil {
		src.reporter.Report(src.id, ch.Version, ch.Text)
	}
	var tracked bool
	m.withLock(func() { tracked = src.tracked() })
	if !tracked {
		return nil, nil
	}
	stamp, _ := src.adapter.Stamp(ctx, src.id)
	changed, _, err := m.readApply(ctx, src, stamp, editBy{agent: ch.Agent, anchor: ch.Anchor})
	return changed, err
}

// Release drops blocks by id, or by the agent's anchors. Unknown block ids,
// or ids of another agent's blocks when Agent is set, fail the whole request
// (nothing is released); unknown anchors are skipped (events have anchors but
// no blocks).
func (m *Manager) Release(ctx context.Context, req protocol.ReleaseParams) (protocol.ReleaseResult, error) {
	if err := req.Validate(); err != nil {
		return protocol.ReleaseResult{}, err
	}
	res, err := locked(m, func(ix *index) (protocol.ReleaseResult, error) { return ix.release(req) })
	if err != nil {
		return protocol.ReleaseResult{}, err
	}
	m.syncPendingWatches()
	m.flushNotify("") // blocks that lost the read superseding them changed
	return res, nil
}

// unknownBlock names the release entry that was refused.
func unknownBlock(i int, format string, args ...any) error {
	return &protocol.FieldError{Field: fmt.Sprintf("blocks[%d]", i), Reason: ErrUnknownBlock.Error() + ": " + fmt.Sprintf(format, args...), Err: ErrUnknownBlock}
}
