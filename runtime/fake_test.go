package runtime

import (
	"github.com/concord-ctx/concord/protocol"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeAdapter is an Adapter built from function fields.
type fakeAdapter struct {
	scheme    string
	normalize func(uri string) (string, error)
	read      func(ctx context.Context, id string) (Content, error)
	stamp     func(ctx context.Context, id string) (string, error)
	watch     func(id string) error
	unwatch   func(id string)
}

func (f *fakeAdapter) Scheme() string                                     { return f.scheme }
func (f *fakeAdapter) Normalize(uri string) (string, error)               { return f.normalize(uri) }
func (f *fakeAdapter) Read(c context.Context, id string) (Content, error) { return f.read(c, id) }
func (f *fakeAdapter) Stamp(c context.Context, id string) (string, error) { return f.stamp(c, id) }
func (f *fakeAdapter) Watch(id string) error                              { return f.watch(id) }
func (f *fakeAdapter) Unwatch(id string)                                  { f.unwatch(id) }
func (f *fakeAdapter) Close() error                                       { return nil }
func (f *fakeAdapter) Display(id string) string                           { return strings.TrimPrefix(id, "mem:/") }

// memStore backs a fake adapter with an in-memory map of sources.
type memStore struct {
	mu      sync.Mutex
	files   map[string]string // id -> content
	errs    map[string]error
	stamps  map[string]int
	watches map[string]int
	reads   atomic.Int64
	gate    map[string]chan struct{} // read of id waits on the channel
}

func newMem() (*memStore, *fakeAdapter) {
	s := &memStore{files: map[string]string{}, errs: map[string]error{}, stamps: map[string]int{}, watches: map[string]int{}, gate: map[string]chan struct{}{}}
	a := &fakeAdapter{
		scheme: "mem",
		normalize: func(uri string) (string, error) {
			if !strings.HasPrefix(uri, "mem://") {
				return "", fmt.Errorf("%w: %s", ErrInvalidURI, uri)
			}
			if strings.Contains(uri, "outside") {
				return "", fmt.Errorf("%s: %w", uri, ErrOutsideRoots)
			}
			return strings.TrimSuffix(uri, "/"), nil
		},
		read: func(ctx context.Context, id string) (Content, error) {
			s.reads.Add(1)
			s.mu.Lock()
			g := s.gate[id]
			s.mu.Unlock()
			if g != nil {
				select {
				case <-g:
				case <-ctx.Done():
					return Content{}, ctx.Err()
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.errs[id]; err != nil {
				return Content{}, err
			}
			t, ok := s.files[id]
			if !ok {
				return Content{}, fmt.Errorf("read %s: %w", id, ErrNotFound)
			}
			return Content{Text: t, Version: hashOf(t)}, nil
		},
		stamp: func(ctx context.Context, id string) (string, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, ok := s.files[id]; !ok {
				return "", ErrNotFound
			}
			return fmt.Sprint(s.stamps[id]), nil
		},
		watch: func(id string) error {
			s.mu.Lock()
			s.watches[id]++
			s.mu.Unlock()
			return nil
		},
		unwatch: func(id string) {
			s.mu.Lock()
			s.watches[id]--
			s.mu.Unlock()
		},
	}
	return s, a
}

func hashOf(t string) string {
	h := sha256.Sum256([]byte(t))
	return "sha256:" + hex.EncodeToString(h[:8])
}

// set writes a source and moves its stamp.
func (s *memStore) set(id, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[id] = text
	delete(s.errs, id)
	s.stamps[id]++
}

func (s *memStore) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, id)
	s.stamps[id]++
}

func (s *memStore) watching(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches[id]
}

// lines returns "line 1\n…\nline n\n" style content with custom lines.
func numbered(n int) []string {
	ls := make([]string, n)
	for i := range ls {
		ls[i] = fmt.Sprintf("func f%d() { return value%d + other%d }", i+1, i+1, i+1)
	}
	return ls
}

func text(ls []string) string { return strings.Join(ls, "\n") + "\n" }

func span(ls []string, s, e int) string { return strings.Join(ls[s-1:e], "\n") }

func rng(s, e int) *protocol.Range { return &protocol.Range{Start: s, End: e} }

type harness struct {
	t     testing.TB
	m     *Manager
	mem   *memStore
	mu    sync.Mutex
	calls [][]string
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t}
	cfg.OnChange = func(agents []string) {
		h.mu.Lock()
		h.calls = append(h.calls, agents)
		h.mu.Unlock()
	}
	if cfg.Options.Placement == "" {
		cfg.Options.Placement = PlacementInplace // the repairs themselves; placement has its own tests
	}
	h.m = New(cfg)
	var a *fakeAdapter
	h.mem, a = newMem()
	h.m.AddAdapter(a)
	t.Cleanup(func() { h.m.Close() })
	return h
}

func (h *harness) observe(agent string, turn int, anchor string, refs ...protocol.Source) protocol.ObserveResult {
	h.t.Helper()
	r, err := h.m.Observe(context.Background(), protocol.ObserveParams{Agent: agent, Turn: turn, Anchor: anchor, Sources: refs})
	if err != nil {
		h.t.Fatalf("observe %s: %v", anchor, err)
	}
	return r
}

func (h *harness) changed(id string) protocol.SourceChangedResult {
	h.t.Helper()
	r, err := h.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: id})
	if err != nil {
		h.t.Fatalf("sourceChanged %s: %v", id, err)
	}
	return r
}

func (h *harness) sync(agent string, turn int) protocol.SyncResult {
	h.t.Helper()
	r, err := h.m.Sync(context.Background(), protocol.SyncParams{Agent: agent, Turn: turn})
	if err != nil {
		h.t.Fatalf("sync %s: %v", agent, err)
	}
	return r
}

func (h *harness) onChangeCalls() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.calls...)
}

func one(t *testing.T, r protocol.SyncResult) protocol.BlockView {
	t.Helper()
	if len(r.Blocks) != 1 {
		t.Fatalf("want 1 block in projection, got %d: %+v", len(r.Blocks), r.Blocks)
	}
	return r.Blocks[0]
}
