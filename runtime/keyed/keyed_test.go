package keyed_test

import (
	"github.com/concord-ctx/concord/protocol"

	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// client plays the client side of readSource.
type client struct {
	mu      sync.Mutex
	content map[string]runtime.Content
	err     error
	fetches int
}

func (c *client) fetch(ctx context.Context, uri string) (runtime.Content, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetches++
	if c.err != nil {
		return runtime.Content{}, c.err
	}
	v, ok := c.content[uri]
	if !ok {
		return runtime.Content{}, errors.New("no such resource")
	}
	return v, nil
}

func (c *client) set(uri, text, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.content[uri] = runtime.Content{Text: text, Version: version}
}

func (c *client) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

func TestNormalize(t *testing.T) {
	a := keyed.New(nil)
	tests := []struct{ in, want string }{
		{"res://db/users/42", "res://db/users/42"},
		{"RES://db/users/42", "res://db/users/42"},
		{"mcp://server/resource?x=1", "mcp://server/resource?x=1"},
		{"https://example.com/a", "https://example.com/a"},
		{"", ""},
		{"res://", ""},
		{"no-scheme", ""},
		{"%zz://x", ""},
	}
	for _, tc := range tests {
		got, err := a.Normalize(tc.in)
		if tc.want == "" {
			if !errors.Is(err, runtime.ErrInvalidURI) {
				t.Errorf("%q: got %q, %v; want ErrInvalidURI", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestReportStampRead(t *testing.T) {
	c := &client{content: map[string]runtime.Content{}}
	a := keyed.New(c.fetch)
	ctx := context.Background()
	id := "res://db/users/42"
	if s, _ := a.Stamp(ctx, id); s != "" {
		t.Fatalf("stamp of unknown: %q", s)
	}
	txt := "name: Ann\nrole: admin"
	a.Report(id, "v1", &txt)
	if got, err := a.Read(ctx, id); err != nil || got.Text != txt || got.Version != "v1" || c.count() != 0 {
		t.Fatalf("read %+v %v fetches=%d", got, err, c.count())
	}
	a.Report(id, "v2", nil) // changed, content unknown: Read asks the client
	c.set(id, "name: Ann\nrole: user", "v2")
	if got, err := a.Read(ctx, id); err != nil || got.Version != "v2" || c.count() != 1 {
		t.Fatalf("read %+v %v fetches=%d", got, err, c.count())
	}
	a.Report(id, "v1", nil) // a late report of an older read is ignored
	if s, _ := a.Stamp(ctx, id); s != "v2" {
		t.Fatalf("stamp %q after late report", s)
	}
	if _, err := a.Read(ctx, id); err != nil || c.count() != 1 {
		t.Fatalf("read fetched again: %v fetches=%d", err, c.count())
	}
	a.Report(id, "v3", nil)
	c.err = errors.New("client cannot answer")
	if _, err := a.Read(ctx, id); !errors.Is(err, runtime.ErrUnreadable) {
		t.Fatalf("err %v, want ErrUnreadable", err)
	}
	if _, err := keyed.New(nil).Read(ctx, id); !errors.Is(err, runtime.ErrUnreadable) {
		t.Fatalf("nil fetch: %v", err)
	}
}

const uri = "res://db/users/42"

func setup(t *testing.T, pol protocol.PolicyConfig) (*runtime.Manager, *client) {
	t.Helper()
	c := &client{content: map[string]runtime.Content{}}
	m := runtime.New(runtime.Config{Options: protocol.InitializeParams{Policy: &pol}})
	m.AddAdapter(keyed.New(c.fetch))
	t.Cleanup(func() { m.Close() })
	return m, c
}

func TestManagerKeyedSources(t *testing.T) {
	local := "id: 42\nname: Ann Lee\nrole: user\nteam: core"
	drift := "id: 42\nstatus: deleted by an administrator last week\nreason: account merge into another one\nteam: core"
	tests := []struct {
		name    string
		pol     protocol.PolicyConfig
		text    *string // sourceChanged text; nil = version only (fetch)
		fetched string  // what the client answers readSource with
		fetches int
		status  protocol.Status
		want    string // source text in the view; "" = none
		notice  string
	}{
		{"local edit reported with text", protocol.PolicyConfig{}, &local, "", 0, protocol.Patched, "name: Ann Lee\nrole: user", ""},
		{"local edit fetched", protocol.PolicyConfig{}, nil, local, 1, protocol.Patched, "name: Ann Lee\nrole: user", ""},
		{"drift suppressed", protocol.PolicyConfig{}, nil, drift, 1, protocol.Invalid, "", "[concord] res://db/users/42 changed since this read; the content shown earlier (lines 2-3) is no longer accurate. Where those lines are now is unknown. Re-read res://db/users/42 (now 4 lines) before relying on it."},
		{"drift refreshed through fetch", protocol.PolicyConfig{ByType: map[string]protocol.Policy{"res": {Drift: protocol.Refresh}}}, nil, drift,
			1, protocol.Patched, "status: deleted by an administrator last week\nreason: account merge into another one", ""},
		{"client cannot answer", protocol.PolicyConfig{}, nil, "", 1, protocol.Invalid, "", "could not be re-read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, c := setup(t, tc.pol)
			ctx := context.Background()
			o, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "q1",
				Sources: []protocol.Source{{URI: uri, Range: &protocol.Range{Start: 2, End: 3}, Text: "name: Ann Lee\nrole: admin", Version: "v1"}}})
			if err != nil || o.Status != protocol.Valid {
				t.Fatalf("observe %+v %v", o, err)
			}
			if r, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2}); err != nil || len(r.Blocks) != 0 {
				t.Fatalf("sync %+v %v", r, err)
			}
			if c.count() != 0 {
				t.Fatalf("observe/verify fetched %d times", c.count())
			}
			if tc.fetched != "" {
				c.set(uri, tc.fetched, "v2")
			} else if tc.text == nil {
				c.err = errors.New("readSource: method not found")
			}
			cr, err := m.SourceChanged(ctx, protocol.SourceChangedParams{URI: uri, Text: tc.text, Version: "v2"})
			if err != nil || len(cr.Blocks) != 1 {
				t.Fatalf("sourceChanged %+v %v", cr, err)
			}
			r, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 3})
			if err != nil || len(r.Blocks) != 1 {
				t.Fatalf("sync %+v %v", r, err)
			}
			v := r.Blocks[0]
			if v.Status != tc.status || c.count() != tc.fetches {
				t.Fatalf("got %+v, fetches %d", v, c.count())
			}
			if tc.want != "" && (len(v.Sources) != 1 || v.Sources[0].Text != tc.want || v.Sources[0].Version != "v2") {
				t.Fatalf("sources %+v", v.Sources)
			}
			if !strings.Contains(v.Notice, tc.notice) {
				t.Fatalf("notice %q, want %q", v.Notice, tc.notice)
			}
			// The verify pass never fetches needlessly.
			if _, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 4}); err != nil || c.count() != tc.fetches {
				t.Fatalf("sync fetched again: %v %d", err, c.count())
			}
		})
	}
}

func TestKeyedRacedRead(t *testing.T) {
	m, c := setup(t, protocol.PolicyConfig{})
	ctx := context.Background()
	v1 := "a: 1\nb: 2\nc: 3"
	v2 := "a: 1\nb: 20\nc: 3"
	if _, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "q1",
		Sources: []protocol.Source{{URI: uri, Text: v1, Version: "v1"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SourceChanged(ctx, protocol.SourceChangedParams{URI: uri, Text: &v2, Version: "v2"}); err != nil {
		t.Fatal(err)
	}
	// A read of v1 reported after v2 is known: verified against v2.
	o, err := m.Observe(ctx, protocol.ObserveParams{Agent: "sub", Turn: 1, Anchor: "q2",
		Sources: []protocol.Source{{URI: uri, Range: &protocol.Range{Start: 2, End: 2}, Text: "b: 2", Version: "v1"}}})
	if err != nil || o.Status != protocol.Patched || c.count() != 0 {
		t.Fatalf("observe %+v %v fetches=%d", o, err, c.count())
	}
	r, _ := m.Sync(ctx, protocol.SyncParams{Agent: "sub", Turn: 2})
	if len(r.Blocks) != 1 || r.Blocks[0].Sources[0].Text != "b: 20" {
		t.Fatalf("sync %+v", r)
	}
}

func TestKeyedValidation(t *testing.T) {
	m, _ := setup(t, protocol.PolicyConfig{})
	ctx := context.Background()
	_, err := m.Observe(ctx, protocol.ObserveParams{Agent: "main", Sources: []protocol.Source{{URI: uri, Text: "x"}}})
	var fe *protocol.FieldError
	if !errors.As(err, &fe) || fe.Field != "sources[0].version" {
		t.Fatalf("observe without version: %v", err)
	}
	_, err = m.SourceChanged(ctx, protocol.SourceChangedParams{URI: uri})
	if !errors.As(err, &fe) || fe.Field != "version" {
		t.Fatalf("sourceChanged without version or text: %v", err)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"res://db/users/42", "MCP://s/r", "https://x/y?q#f", "res://", "a:b", ":x", "%41://x"} {
		f.Add(s)
	}
	a := keyed.New(nil)
	f.Fuzz(func(t *testing.T, uri string) {
		id, err := a.Normalize(uri)
		if err != nil {
			if !errors.Is(err, runtime.ErrInvalidURI) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidURI", uri, err)
			}
			return
		}
		again, err := a.Normalize(id)
		if err != nil || again != id {
			t.Fatalf("%q -> %q -> %q, %v: not idempotent", uri, id, again, err)
		}
	})
}
