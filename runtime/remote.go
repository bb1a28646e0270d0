package runtime

import (
	"context"
	"fmt"
	"sort"
)

// RemoteChange is a change to a source made through another Concord
// instance of the same workspace (another host), as a change feed reports
// it. The core knows no feed: whoever carries changes between instances
// calls Manager.RemoteChanged.
type RemoteChange struct {
	URI     string // the source, as this instance's adapters name it
	Version string // the new version, when known
	Host    string // the writer's host
	Agent   string // the writer's agent, when known
}

// remoteChangeError is why a client-reported source cannot be re-read here:
// another host changed it and only that host's client knows the content.
type remoteChangeError struct{ RemoteChange }

func (e *remoteChangeError) Error() string {
	if e.Version == "" {
		return "changed on host " + e.Host
	}
	return fmt.Sprintf("changed on host %s to version %s", e.Host, e.Version)
}

func (e *remoteChangeError) Unwrap() error { return ErrUnreadable }

// RemoteChanged applies a change another instance reported, before the next
// sync. A source no block here depends on is left alone. A source this
// instance can read (a file on a shared file system) is re-read at once,
// whatever its stamp says: a network file system's attributes may lag the
// write. A client-reported (keyed) source, whose content only the writer's
// client knows, has its links marked changed on that host with a notice
// naming it, until this instance's client reports or shows the source
// again. It returns the blocks whose state changed.
func (m *Manager) RemoteChanged(ctx context.Context, ch RemoteChange) ([]string, error) {
	src, err := m.tracked(ch.URI)
	if err != nil || src == nil {
		return nil, err
	}
	changed, err := m.remoteChanged(ctx, src, ch)
	if err != nil {
		return nil, err
	}
	m.flushNotify("")
	sort.Slice(changed, func(i, j int) bool { return changed[i].seq < changed[j].seq })
	ids := make([]string, len(changed))
	for i, b := range changed {
		ids[i] = b.id()
	}
	return ids, nil
}

// remoteChanged re-reads a file another host changed, or marks a keyed
// source changed, under src.io.
func (m *Manager) remoteChanged(ctx context.Context, src *source, ch RemoteChange) ([]*block, error) {
	src.io.Lock()
	defer src.io.Unlock()
	stamp, _ := src.adapter.Stamp(ctx, src.id)
	if src.reporter == nil {
		changed, _, err := m.readApply(ctx, src, stamp, editBy{})
		return changed, err
	}
	var changed []*block
	m.withLock(func() { changed = m.applyRemote(src, stamp, ch) })
	return changed, nil
}

// tracked returns the source uri names when some block depends on it, else
// nil; it creates no source entry.
func (m *Manager) tracked(uri string) (*source, error) {
	a, err := locked(m, func(*index) (Adapter, error) { return m.adapterForLocked(uri), nil })
	if err != nil || a == nil {
		return nil, err
	}
	id, err := a.Normalize(uri)
	if err != nil {
		return nil, fmt.Errorf("remote change %s: %w", uri, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.ix.known(id); s != nil && s.nlinks > 0 {
		return s, nil
	}
	return nil, nil
}

// applyRemote marks a keyed source changed on another host. A version this
// instance already holds changes nothing (its client reported it first).
// Caller holds m.mu.
func (m *Manager) applyRemote(src *source, stamp string, ch RemoteChange) []*block {
	if ch.Version != "" && src.version == ch.Version && src.state == statePresent {
		return nil
	}
	changed := m.applyGone(src, stamp, &remoteChangeError{ch})
	m.attribute(src, changed, "", "")
	seen := make(map[*block]bool, len(changed))
	for _, b := range changed {
		seen[b] = true
	}
	// The notice names the host, not a read error; a later change by
	// another host (or to another version) updates it.
	for _, l := range src.ordered() {
		if l.state == linkOK || l.cause != causeUnreadable {
			continue
		}
		n := noticeRemote(l, ch)
		if l.notice() == n {
			continue
		}
		l.setNotice(n)
		m.recompute(l.block)
		if !seen[l.block] {
			seen[l.block] = true
			m.ix.markDirty(l.block)
			changed = append(changed, l.block)
		}
	}
	return changed
}

func noticeRemote(l *link, ch RemoteChange) string {
	by := ""
	if ch.Agent != "" {
		by = " by agent " + ch.Agent
	}
	return fmt.Sprintf("[concord] %s was changed on host %s%s after this read; the content shown earlier%s may be outdated. Re-read %s before relying on it.",
		l.name(), ch.Host, by, l.shownLines(), l.target())
}
