package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/rpc/protocol"
	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// FeedOptions are the operator's change-feed settings (serve's --feed
// flags). No URL: no feed.
type FeedOptions struct {
	URL       string
	Name      string // the workspace's feed
	Host      string // default: the hostname
	Root      string // the shared workspace root (default: the first root)
	CredsFile string
	NKeyFile  string
	Replicas  int // of the stream, when this instance creates it
}

// merge lays initialize's feed over the operator's and checks the result.
func (o FeedOptions) merge(p *protocol.FeedParams, open feed.OpenFunc) (FeedOptions, error) {
	if p != nil {
		for _, f := range []struct {
			dst *string
			src string
		}{{&o.URL, p.URL}, {&o.Name, p.Name}, {&o.Host, p.Host}, {&o.Root, p.Root}} {
			if f.src != "" {
				*f.dst = f.src
			}
		}
	}
	if o.URL == "" {
		return o, nil
	}
	if open == nil {
		return o, rpc.FieldError("feed", feed.ErrNotBuilt.Error())
	}
	if o.Name == "" {
		return o, rpc.FieldError("feed.name", "required with a feed: the workspace's feed name, the same on every host")
	}
	if err := feed.CheckName(o.Name); err != nil {
		return o, rpc.FieldError("feed.name", err.Error())
	}
	if o.Root != "" && !filepath.IsAbs(o.Root) {
		return o, rpc.FieldError("feed.root", fmt.Sprintf("must be an absolute path, not %q", o.Root))
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
		if o.Host == "" {
			o.Host = "unknown"
		}
	}
	if strings.ContainsFunc(o.Host, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(o.Host) > 255 {
		return o, rpc.FieldError("feed.host", fmt.Sprintf("%q is not a usable host name", o.Host))
	}
	return o, nil
}

// feedRoot is the shared root source keys are relative to, symlinks
// resolved as the file adapter resolves source paths.
func feedRoot(o FeedOptions, roots []string) string {
	r := o.Root
	if r == "" && len(roots) > 0 {
		r = roots[0]
	}
	if rp, err := filepath.EvalSymlinks(r); err == nil {
		r = rp
	}
	return r
}

// withFeed joins the session to its feed, when it has one: the core gains
// a bridge that publishes sourceChanged and applies other hosts' changes,
// and sync reports the feed's state.
func withFeed(ctx context.Context, m *runtime.Manager, o FeedOptions, open feed.OpenFunc, fa *fileadapter.Adapter, ka *keyed.Adapter, root string, log *slog.Logger) (rpc.Core, error) {
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
