package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/concord-ctx/concord/hook"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/runtime"
)

// socketOptions are serve's socket mode: one session shared by every
// connection to a unix socket, for runtimes whose hooks are a new process
// per event (`concord hook`, docs/protocol.md "Hook transport").
type socketOptions struct {
	path string
	idle time.Duration
}

func socketFlags(flags *pflag.FlagSet, o *socketOptions) {
	flags.StringVar(&o.path, "socket", "", "serve one session to every connection on this unix socket (its directory must be this user's, mode 0700) instead of stdin/stdout; `concord hook` starts such servers")
	flags.DurationVar(&o.idle, "idle", hook.DefaultIdle, "with --socket: end after this long without a request")
}

// serveSocket serves cfg's session on a unix socket until a client's
// shutdown, the idle timeout or a signal (ctx). Every connection speaks the
// protocol (initialize first); the first initialize builds the session,
// later ones attach to it.
func serveSocket(ctx context.Context, so socketOptions, cfg rpc.Config, logw io.Writer, level slog.Level) error {
	if so.idle <= 0 {
		return usageError{errors.New("--idle must be positive")}
	}
	if err := hook.CheckDir(filepath.Dir(so.path)); err != nil {
		return fmt.Errorf("--socket: %w", err)
	}
	label := strings.TrimSuffix(filepath.Base(so.path), ".sock")
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level})).With("server", label, "pid", os.Getpid())
	// Each hook is a connection: its initialize and the like are debug
	// detail, or the log would grow by a few lines per tool call.
	connLog := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: max(level, slog.LevelWarn)})).With("server", label)
	if level <= slog.LevelDebug {
		connLog = log
	}
	ln, err := listen(so.path)
	if err != nil {
		return err
	}
	shared := &sharedSession{build: cfg.NewSession, log: log}
	cfg.NewSession = shared.attach
	cfg.Logger = connLog

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	why := make(chan string, 1)
	end := func(reason string) {
		select {
		case why <- reason:
		default:
		}
		stop()
	}
	cfg.OnShutdown = func() { end("shutdown") }
	hooks := hookConns{shared: shared, log: log, end: end}

	var last atomic.Int64 // unix nanos of the latest accept, read or close
	touch := func() { last.Store(time.Now().UnixNano()) }
	touch()
	go func() {
		tick := time.NewTicker(min(max(so.idle/4, 10*time.Millisecond), 30*time.Second))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if time.Since(time.Unix(0, last.Load())) > so.idle {
					end("idle")
					return
				}
			}
		}
	}()

	// Connections outlive ctx by a grace period: a hook in flight when the
	// session ends still gets its answer.
	connCtx, cancelConns := context.WithCancel(context.Background())
	defer cancelConns()
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if ctx.Err() == nil {
					log.Error("accept", "error", err)
					end("accept failed")
				}
				return
			}
			touch()
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer touch()
				defer c.Close()
				hooks.serveConn(connCtx, activity{c, touch}, c, cfg)
			}()
		}
	}()
	log.Info("listening", "socket", so.path, "idle", so.idle)
	<-ctx.Done()
	reason := "signal"
	select {
	case reason = <-why:
	default:
	}
	ln.Close() // removes the socket: the next hook starts a new server
	done := make(chan struct{})
	go func() { conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		cancelConns()
		<-done
	}
	if err := shared.close(); err != nil {
		log.Warn("close session", "error", err)
	}
	log.Info("ended", "reason", reason)
	return nil
}

// listen binds the socket 0600. A path already taken (a live server, or
// a stale socket nobody removed) is an error: the starter (package hook)
// removes stale sockets under its lock, never the server.
func listen(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("--socket: %w", err)
	}
	// The directory (0700) already keeps others out; the mode says so too.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--socket: %w", err)
	}
	return ln, nil
}

// activity is a connection whose reads count as the session's activity.
type activity struct {
	net.Conn
	touch func()
}

func (a activity) Read(p []byte) (int, error) {
	n, err := a.Conn.Read(p)
	if n > 0 {
		a.touch()
	}
	return n, err
}

// sharedSession is one session served to every connection: the first
// initialize builds the core, later ones get the same one. The core is
// closed with the server, not with a connection. Its notifications and
// readSource would go to the connection that built it, which a hook
// closes at once: the session gets neither (hooks use files only).
type sharedSession struct {
	build rpc.NewSessionFunc
	log   *slog.Logger

	mu    sync.Mutex
	core  rpc.Core
	watch string
	lanes map[string]*sync.Mutex // per agent: its requests run one at a time, across connections
}

func (s *sharedSession) attach(ctx context.Context, cfg rpc.SessionConfig) (rpc.Core, string, error) {
	core, err := s.attachWith(ctx, func() (rpc.SessionConfig, error) { return cfg, nil })
	if err != nil {
		return nil, "", err
	}
	return core, s.watch, nil
}

// attachWith is attach with the session's config made only when this
// builds the session: a hook's initialize params are checked once, not on
// every tool call.
func (s *sharedSession) attachWith(ctx context.Context, config func() (rpc.SessionConfig, error)) (rpc.Core, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.core == nil {
		cfg, err := config()
		if err != nil {
			return nil, err
		}
		cfg.Notify = func([]string) {}
		cfg.Fetch = func(context.Context, string) (runtime.Content, error) {
			return runtime.Content{}, errors.New("keyed sources are not read over the hook socket")
		}
		core, watch, err := s.build(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s.core, s.watch = core, watch
		s.log.Info("session built", "roots", cfg.Options.Roots, "watch", watch, "placement", cfg.Options.Placement)
	}
	return sharedCore{s}, nil
}

// lane returns agent's lock, locked: requests naming the same agent keep
// their order across connections as they do on one (docs/protocol.md,
// "Ordering and concurrency").
func (s *sharedSession) lane(agent string) func() {
	s.mu.Lock()
	if s.lanes == nil {
		s.lanes = map[string]*sync.Mutex{}
	}
	l := s.lanes[agent]
	if l == nil {
		l = &sync.Mutex{}
		s.lanes[agent] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// get is the core, or runtime.ErrClosed once the server closed it.
func (s *sharedSession) get() (rpc.Core, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.core == nil {
		return nil, runtime.ErrClosed
	}
	return s.core, nil
}

func (s *sharedSession) close() error {
	s.mu.Lock()
	core := s.core
	s.core = nil
	s.mu.Unlock()
	if core == nil {
		return nil
	}
	return core.Close()
}

// sharedCore is a connection's view of the shared session. Close detaches
// the connection; the session goes on.
type sharedCore struct{ s *sharedSession }

var _ rpc.Core = sharedCore{}

func (c sharedCore) Recognize(ctx context.Context, p protocol.RecognizeParams) (protocol.RecognizeResult, error) {
	defer c.s.lane(p.Agent)()
	core, err := c.s.get()
	if err != nil {
		return protocol.RecognizeResult{}, err
	}
	return core.Recognize(ctx, p)
}

func (c sharedCore) Observe(ctx context.Context, p protocol.ObserveParams) (protocol.ObserveResult, error) {
	defer c.s.lane(p.Agent)()
	core, err := c.s.get()
	if err != nil {
		return protocol.ObserveResult{}, err
	}
	return core.Observe(ctx, p)
}

func (c sharedCore) SourceChanged(ctx context.Context, p protocol.SourceChangedParams) (protocol.SourceChangedResult, error) {
	defer c.s.lane(p.Agent)()
	core, err := c.s.get()
	if err != nil {
		return protocol.SourceChangedResult{}, err
	}
	return core.SourceChanged(ctx, p)
}

func (c sharedCore) Sync(ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error) {
	defer c.s.lane(p.Agent)()
	core, err := c.s.get()
	if err != nil {
		return protocol.SyncResult{}, err
	}
	return core.Sync(ctx, p)
}

func (c sharedCore) Release(ctx context.Context, p protocol.ReleaseParams) (protocol.ReleaseResult, error) {
	defer c.s.lane(p.Agent)()
	core, err := c.s.get()
	if err != nil {
		return protocol.ReleaseResult{}, err
	}
	return core.Release(ctx, p)
}

func (c sharedCore) Compacted(ctx context.Context, p protocol.CompactedParams) (protocol.CompactedResult, error) {
	defer c.s.lane(p.Agent)()
	core, err := c.s.get()
	if err != nil {
		return protocol.CompactedResult{}, err
	}
	return core.Compacted(ctx, p)
}

// Schemes are the shared session's (none once it is closed).
func (c sharedCore) Schemes() []string {
	core, err := c.s.get()
	if err != nil {
		return nil
	}
	return core.Schemes()
}

func (c sharedCore) Stats() protocol.StatsResult {
	core, err := c.s.get()
	if err != nil {
		return protocol.StatsResult{}
	}
	return core.Stats()
}

func (sharedCore) Close() error { return nil }
