//go:build feed

package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// withFeed joins the session to its feed, when it has one: the core gains
// a bridge that publishes sourceChanged and applies other hosts' changes,
// and sync reports the feed's state.
func withFeed(ctx context.Context, m *runtime.Manager, o FeedOptions, open feed.OpenFunc, fa *fileadapter.Adapter, ka *keyed.Adapter, root string, log *slog.Logger) (manager, error) {
	if o.URL == "" {
		return m, nil
	}
	origin := feed.NewOrigin()
	tr, err := open(ctx, feed.TransportConfig{URL: o.URL, Name: o.Name, Host: o.Host, Consumer: o.Host + "_" + origin,
		CredsFile: o.CredsFile, NKeyFile: o.NKeyFile, Replicas: o.Replicas, Logger: log})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("feed %s: %w", o.Name, err)
	}
	cfg := feed.Config{Transport: tr, Core: m, Workspace: o.Name, Host: o.Host, Origin: origin, Logger: log}
	if fa != nil {
		cfg.Files, cfg.Root = fa, root
	}
	c := &feedCore{Manager: m, b: feed.New(cfg), fa: fa, ka: ka}
	c.b.Start()
	return c, nil
}

// feedCore is a session's core with a feed.
type feedCore struct {
	*runtime.Manager
	b  *feed.Bridge
	fa *fileadapter.Adapter // nil without roots
	ka *keyed.Adapter
}

// SourceChanged applies the change, then hands it to the feed (which never
// blocks): the file's version is read by the bridge, a keyed source's is the
// reported one.
func (c *feedCore) SourceChanged(ctx context.Context, p protocol.SourceChangedParams) (protocol.SourceChangedResult, error) {
	res, err := c.Manager.SourceChanged(ctx, p)
	if err != nil {
		return res, err
	}
	if isFileURI(p.URI) {
		if c.fa != nil {
			if id, err := c.fa.Normalize(p.URI); err == nil {
				c.b.Local(id, p.Agent, "")
			}
		}
		return res, nil
	}
	if id, err := c.ka.Normalize(p.URI); err == nil {
		v := p.Version
		if v == "" && p.Text != nil {
			h := sha256.Sum256([]byte(*p.Text)) // the keyed adapter's version of reported text
			v = "sha256:" + hex.EncodeToString(h[:])
		}
		c.b.Local(id, p.Agent, v)
	}
	return res, nil
}

// Sync adds the feed's state: a sync never waits for the feed.
func (c *feedCore) Sync(ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error) {
	res, err := c.Manager.Sync(ctx, p)
	if err == nil {
		st := c.b.Status()
		res.Feed = &st
	}
	return res, err
}

// Close leaves the feed, then closes the core.
func (c *feedCore) Close() error {
	ferr := c.b.Close()
	if err := c.Manager.Close(); err != nil {
		return err
	}
	return ferr
}

func isFileURI(uri string) bool {
	return strings.HasPrefix(uri, "/") || len(uri) >= 5 && strings.EqualFold(uri[:5], "file:")
}

// feedHint is the file adapter's notify: the manager's hint, and, once the
// session has a feed, a change to publish.
type feedHint struct {
	m *runtime.Manager
	b atomic.Pointer[feed.Bridge]
}

func (h *feedHint) notify(id string) {
	h.m.Hint(id)
	if b := h.b.Load(); b != nil {
		b.Local(id, "", "")
	}
}

// attach starts publishing the watcher's changes, once core has a feed.
func (h *feedHint) attach(core manager) {
	if fc, ok := core.(*feedCore); ok {
		h.b.Store(fc.b)
	}
}
