// Package keyed is the adapter for sources whose versions and content the
// client reports (res://db/users/42, mcp://server/resource, https://…): any
// scheme no other adapter serves. It touches no file system; when the
// manager needs content it does not have, it asks the client through fetch.
package keyed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/concord-ctx/concord/runtime"
)

// Fetch asks the client for a source's current content (rpc wires it to the
// server->client readSource request).
type Fetch func(ctx context.Context, uri string) (runtime.Content, error)

// keepVersions bounds how many past versions per source are remembered to
// recognise a late report of an older version.
const keepVersions = 32

type entry struct {
	latest  string
	content *runtime.Content // content at latest, when known
	seen    []string         // past versions, oldest first
}

// Adapter serves keyed sources. Safe for concurrent use.
type Adapter struct {
	fetch Fetch
	mu    sync.Mutex
	ents  map[string]*entry
}

var (
	_ runtime.Adapter  = (*Adapter)(nil)
	_ runtime.Reporter = (*Adapter)(nil)
)

// New returns a keyed adapter; fetch may be nil (then content the client did
// not report is unreadable).
func New(fetch Fetch) *Adapter {
	return &Adapter{fetch: fetch, ents: map[string]*entry{}}
}

// Scheme is "*": every scheme not otherwise served.
func (a *Adapter) Scheme() string { return "*" }

// Normalize accepts any absolute URI with a scheme and something after it;
// the scheme is lower-cased, the rest kept as given (keys are opaque).
func (a *Adapter) Normalize(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%w: %v", runtime.ErrInvalidURI, err)
	}
	if u.Scheme == "" {
		return "", fmt.Errorf("%w: %q has no scheme", runtime.ErrInvalidURI, uri)
	}
	rest := uri[len(u.Scheme)+1:]
	if strings.Trim(rest, "/") == "" {
		return "", fmt.Errorf("%w: %q names no resource", runtime.ErrInvalidURI, uri)
	}
	return strings.ToLower(u.Scheme) + ":" + rest, nil
}

// Report records a version (and content, when text is given) the client
// stated. A version reported earlier that is no longer the latest is a late
// report of an old read and is ignored. An empty version with text gets a
// content hash.
func (a *Adapter) Report(id, version string, text *string) {
	if version == "" && text != nil {
		version = hashText(*text)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.ents[id]
	if e == nil {
		e = &entry{}
		a.ents[id] = e
	}
	if version == "" {
		// "changed, version unknown": forget the latest so the next Read fetches.
		e.latest, e.content = "", nil
		return
	}
	if version != e.latest {
		for _, v := range e.seen {
			if v == version {
				return
			}
		}
		if e.latest != "" {
			e.seen = append(e.seen, e.latest)
			if len(e.seen) > keepVersions {
				e.seen = e.seen[len(e.seen)-keepVersions:]
			}
		}
		e.latest, e.content = version, nil
	}
	if text != nil {
		e.content = &runtime.Content{Text: *text, Version: version}
	}
}

// Read returns the reported content at the latest version, or asks the
// client (fetch) when it is not known.
func (a *Adapter) Read(ctx context.Context, id string) (runtime.Content, error) {
	a.mu.Lock()
	if e := a.ents[id]; e != nil && e.content != nil && e.content.Version == e.latest {
		c := *e.content
		a.mu.Unlock()
		return c, nil
	}
	a.mu.Unlock()
	if a.fetch == nil {
		return runtime.Content{}, fmt.Errorf("read %s: %w: the client cannot be asked", id, runtime.ErrUnreadable)
	}
	c, err := a.fetch(ctx, id)
	if err != nil {
		return runtime.Content{}, fmt.Errorf("read %s: %w: %w", id, runtime.ErrUnreadable, err)
	}
	if c.Version == "" {
		c.Version = hashText(c.Text)
	}
	a.Report(id, c.Version, &c.Text)
	return c, nil
}

// Stamp is the latest reported version: the verify pass never fetches
// unless the client reported a change it did not describe.
func (a *Adapter) Stamp(ctx context.Context, id string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.ents[id]; e != nil {
		return e.latest, nil
	}
	return "", nil
}

// Watch is a no-op: the client reports changes.
func (a *Adapter) Watch(id string) error { return nil }

// Unwatch is a no-op.
func (a *Adapter) Unwatch(id string) {}

// Close forgets everything.
func (a *Adapter) Close() error {
	a.mu.Lock()
	a.ents = map[string]*entry{}
	a.mu.Unlock()
	return nil
}

func hashText(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}
