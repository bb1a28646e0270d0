// Package feed carries source changes between the Concord instances of one
// workspace on several hosts. A Bridge publishes the changes its instance
// learns of (its agents' sourceChanged, its watcher's hints) and applies
// the changes other instances publish (runtime.Manager.RemoteChanged). The
// transport is a Transport: package feed/natsfeed (NATS JetStream, built
// with -tags feed) is the one there is. This package knows no NATS.
package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

// Transport moves encoded messages between the instances of one feed.
type Transport interface {
	// Publish stores one message in the feed; it returns once the feed
	// acknowledged it, or fails (not connected, timed out). id identifies
	// the message: publishing it again (a retry) does not duplicate it.
	Publish(ctx context.Context, data []byte, id string) error
	// Start delivers the messages published after this instance joined,
	// one at a time, in order, at least once, until Close. Messages
	// published while it was disconnected arrive when it reconnects.
	Start(handle func(ctx context.Context, data []byte))
	// State says whether the transport is connected, and since when it is
	// not.
	State() (connected bool, since time.Time)
	Close() error
}

// TransportConfig is what opening a transport needs. Credentials are file
// names, handed to the transport as they are and never logged.
type TransportConfig struct {
	URL       string // nats://a:4222,nats://b:4222
	Name      string // the feed's name (CheckName)
	Host      string
	Consumer  string // this instance's durable consumer
	CredsFile string // NATS credentials file (JWT + NKey seed)
	NKeyFile  string // NKey seed file
	Replicas  int    // replicas of the feed's stream when this instance creates it (default 1)
	Logger    *slog.Logger
}

// OpenFunc opens a transport; nil in a build without one.
type OpenFunc func(ctx context.Context, cfg TransportConfig) (Transport, error)

// ErrNotBuilt says how to get a build with the feed.
var ErrNotBuilt = errors.New("this concord was built without the change feed (it would add 5 MB to every plugin binary): " +
	"build it with `go build -tags feed ./cmd/concord` or `make build-feed`")

// Core is what the bridge needs of the context manager.
type Core interface {
	RemoteChanged(ctx context.Context, rc runtime.RemoteChange) ([]string, error)
}

// Reader reads a file's current version (the file adapter).
type Reader interface {
	Read(ctx context.Context, id string) (runtime.Content, error)
}

// Config configures a Bridge.
type Config struct {
	Transport Transport
	Core      Core
	Files     Reader // nil: keyed sources only
	Root      string // the shared workspace root, symlinks resolved ("": keyed sources only)
	Workspace string // the feed's name
	Host      string
	Origin    string // this instance's id in its messages (default NewOrigin())
	Logger    *slog.Logger
	MaxUnsent int // local changes kept while the feed is unreachable (default 10,000; the oldest go first)
}

// Timing of the publisher: one attempt's bound, the retry backoff, and how
// long an unsent change may wait before a sync calls the feed behind.
const (
	publishTimeout = 2 * time.Second
	retryMin       = 50 * time.Millisecond
	retryMax       = 2 * time.Second
	behindGrace    = 2 * time.Second
)

// Bridge joins one instance to its workspace's feed.
type Bridge struct {
	cfg    Config
	origin string
	log    *slog.Logger

	mu      sync.Mutex
	out     []pending         // local changes not yet published, oldest first
	dropped int               // unsent changes dropped because out was full
	known   map[string]string // source key -> the last version published or received
	seq     uint64

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

type pending struct {
	id, agent, version string
	at                 time.Time
}

// New returns a bridge; Start runs it.
func New(cfg Config) *Bridge {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxUnsent <= 0 {
		cfg.MaxUnsent = 10000
	}
	if cfg.Origin == "" {
		cfg.Origin = NewOrigin()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bridge{cfg: cfg, origin: cfg.Origin, log: cfg.Logger.With("feed", cfg.Workspace),
		known: map[string]string{}, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// NewOrigin returns a fresh instance id: 16 hex digits. It tells instances
// apart and is no secret: math/rand/v2's generator, seeded from the OS, is
// enough (crypto/rand cost the default binary 18 KB).
func NewOrigin() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}

// Origin is this instance's id in its messages.
func (b *Bridge) Origin() string { return b.origin }

// Start publishes and receives until Close.
func (b *Bridge) Start() {
	go b.publishLoop()
	b.cfg.Transport.Start(b.receive)
}

// drainFor bounds how long Close waits for the changes still queued: an
// agent's last edit before the session ends must reach the other hosts.
const drainFor = 2 * time.Second

// Close publishes what is queued (while connected, for a moment), then
// stops the bridge and its transport.
func (b *Bridge) Close() error {
	for deadline := time.Now().Add(drainFor); time.Now().Before(deadline); {
		b.mu.Lock()
		n := len(b.out)
		b.mu.Unlock()
		if connected, _ := b.cfg.Transport.State(); n == 0 || !connected {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.cancel()
	<-b.done
	if err := b.cfg.Transport.Close(); err != nil {
		return fmt.Errorf("feed %s close: %w", b.cfg.Workspace, err)
	}
	return nil
}

// Local queues a change this instance learned of: a canonical source id,
// the agent that made it ("" for a watcher's hint) and its version ("" for
// a file: the bridge reads it). It never blocks.
func (b *Bridge) Local(id, agent, version string) {
	if strings.HasPrefix(id, "file:") && (b.cfg.Root == "" || strings.ContainsRune(id, '?')) {
		return // no shared root, or a directory listing: its files speak for it
	}
	b.mu.Lock()
	if len(b.out) >= b.cfg.MaxUnsent {
		b.out = b.out[1:]
		b.dropped++
	}
	b.out = append(b.out, pending{id: id, agent: agent, version: version, at: time.Now()})
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Status is the feed's state for a sync: live, or behind (disconnected, or
// local changes waiting longer than a moment).
func (b *Bridge) Status() protocol.FeedStatus {
	connected, since := b.cfg.Transport.State()
	b.mu.Lock()
	unsent, dropped := len(b.out), b.dropped
	var oldest time.Time
	if unsent > 0 {
		oldest = b.out[0].at
	}
	b.mu.Unlock()
	late := unsent > 0 && time.Since(oldest) > behindGrace
	if connected && !late && dropped == 0 {
		return protocol.FeedStatus{State: protocol.FeedLive}
	}
	if connected || (late && oldest.Before(since)) {
		since = oldest
	}
	st := protocol.FeedStatus{State: protocol.FeedBehind, Unsent: unsent}
	why := "unreachable"
	if connected {
		why = "slow to accept this host's changes"
	}
	if !since.IsZero() {
		st.Since = since.UTC().Format(time.RFC3339)
		why += " since " + st.Since
	}
	if dropped > 0 {
		why += fmt.Sprintf("; %d of this host's changes were never sent", dropped)
	}
	st.Notice = "[concord] the change feed shared with other hosts is " + why +
		": changes made on other hosts may not be reflected yet. Re-read shared files before relying on them."
	return st
}

func (b *Bridge) publishLoop() {
	defer close(b.done)
	for {
		b.mu.Lock()
		var p pending
		ok := len(b.out) > 0
		if ok {
			p = b.out[0]
		}
		b.mu.Unlock()
		if !ok {
			select {
			case <-b.ctx.Done():
				return
			case <-b.kick:
				continue
			}
		}
		if !b.publish(p) {
			return // closed
		}
		b.mu.Lock()
		if len(b.out) > 0 && b.out[0] == p {
			b.out = b.out[1:]
		}
		if len(b.out) == 0 {
			b.dropped = 0 // caught up: the loss was reported while behind
		}
		b.mu.Unlock()
	}
}

// publish sends one local change, retrying until the feed takes it; false
// once the bridge is closed.
func (b *Bridge) publish(p pending) bool {
	m, ok := b.message(p)
	if !ok {
		return true
	}
	data, err := Encode(m)
	if err != nil {
		b.log.Warn("feed: change not published", "err", err)
		return true
	}
	b.mu.Lock()
	b.seq++
	id := b.origin + "-" + strconv.FormatUint(b.seq, 10)
	b.mu.Unlock()
	wait := retryMin
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(b.ctx, publishTimeout)
		err := b.cfg.Transport.Publish(ctx, data, id)
		cancel()
		if err == nil {
			if attempt > 1 {
				b.log.Info("feed: published after retries", "attempts", attempt)
			}
			return true
		}
		if b.ctx.Err() != nil {
			return false
		}
		if attempt == 1 {
			b.log.Warn("feed: publish failed; retrying while local work goes on", "err", err)
		}
		select {
		case <-b.ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// message builds the message of a local change; false when there is
// nothing to say (a version the feed already carries, a file outside the
// shared root).
func (b *Bridge) message(p pending) (Message, bool) {
	m := Message{Workspace: b.cfg.Workspace, Origin: b.origin, Host: b.cfg.Host, Agent: p.agent,
		Version: p.version, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	if strings.HasPrefix(p.id, "file:") {
		rel, err := b.relPath(p.id)
		if err != nil {
			b.log.Debug("feed: not a shared file", "source", p.id, "err", err)
			return Message{}, false
		}
		m.Path = rel
		if b.cfg.Files != nil {
			// The version as the file is now: a deleted or unreadable
			// file goes out without one (the receivers re-read).
			if c, err := b.cfg.Files.Read(b.ctx, p.id); err == nil {
				m.Version = c.Version
			}
		}
	} else {
		m.URI = p.id
	}
	key := m.Path + m.URI
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.Version != "" && b.known[key] == m.Version {
		return Message{}, false
	}
	b.known[key] = m.Version
	return m, true
}

// relPath is a file id's path relative to the shared root.
func (b *Bridge) relPath(id string) (string, error) {
	p, err := fileadapter.Path(id)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(b.cfg.Root, p)
	if err != nil {
		return "", err
	}
	rel = filepath.ToSlash(rel)
	if err := checkPath(rel); err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	return rel, nil
}

// receive applies one message of the feed.
func (b *Bridge) receive(ctx context.Context, data []byte) {
	m, err := Decode(data)
	if err != nil {
		b.log.Warn("feed: malformed message ignored", "bytes", len(data), "err", err)
		return
	}
	if m.Workspace != b.cfg.Workspace {
		b.log.Warn("feed: message for another workspace ignored", "workspace", m.Workspace, "host", m.Host, "origin", m.Origin)
		return
	}
	if m.Origin == b.origin {
		return
	}
	uri := m.URI
	if m.Path != "" {
		if b.cfg.Root == "" {
			return
		}
		uri = (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(b.cfg.Root, filepath.FromSlash(m.Path)))}).String()
	}
	key := m.Path + m.URI
	b.mu.Lock()
	prev := b.known[key]
	if m.Version != "" {
		b.known[key] = m.Version
	}
	b.mu.Unlock()
	if m.Version != "" && prev == m.Version {
		return // this instance published or applied that version already
	}
	blocks, err := b.cfg.Core.RemoteChanged(ctx, runtime.RemoteChange{URI: uri, Version: m.Version, Host: m.Host, Agent: m.Agent})
	if err != nil {
		b.log.Debug("feed: change not applied", "source", uri, "host", m.Host, "err", err)
		return
	}
	if len(blocks) > 0 {
		b.log.Debug("feed: change applied", "source", uri, "host", m.Host, "blocks", blocks)
	}
}
