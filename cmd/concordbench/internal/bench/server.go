package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/rpc/client"
	"github.com/concord-ctx/concord/session"
)

// caller is a connection to one Concord session: the real `concord serve`
// subprocess (*client.Client) or the same server run in this process.
type caller interface {
	Call(ctx context.Context, method string, params, result any) error
	Close() error
}

// dial starts a session: a subprocess of bin when it is set, otherwise
// rpc.Serve in this process over a pair of pipes, with the session wiring
// `concord serve` uses (package session: the manager, the file adapter, the
// keyed adapter) at serve's default intervals.
func dial(ctx context.Context, bin string, stderr io.Writer) (caller, error) {
	if bin != "" {
		c, err := client.Options{Stderr: stderr}.Start(ctx, bin, "serve")
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return serveInProcess(stderr), nil
}

// inProcess is rpc.Serve on one end of two pipes and a JSON-RPC connection
// on the other: the same framing, dispatch and ordering as the subprocess,
// without the process.
type inProcess struct {
	conn   *jsonrpc2.Conn
	toSrv  *io.PipeWriter
	done   chan struct{}
	status int
	err    error
	once   sync.Once
	cerr   error
}

type pipeRWC struct {
	io.Reader
	io.Writer
	close func() error
}

func (p pipeRWC) Close() error { return p.close() }

func serveInProcess(stderr io.Writer) *inProcess {
	srvIn, toSrv := io.Pipe()
	fromSrv, srvOut := io.Pipe()
	log := slog.New(slog.DiscardHandler)
	if stderr != nil {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	p := &inProcess{toSrv: toSrv, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.status, p.err = rpc.Serve(context.Background(), srvIn, srvOut, rpc.Config{
			NewSession: sessions(session.Options{PollInterval: 2 * time.Second, Debounce: 50 * time.Millisecond}),
			Name:       "concord",
			Version:    "bench",
			Logger:     log,
		})
		srvOut.Close()
		srvIn.Close()
	}()
	rwc := pipeRWC{Reader: fromSrv, Writer: toSrv, close: func() error {
		toSrv.Close()
		return fromSrv.Close()
	}}
	p.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(rwc, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			// blocksChanged hints need no answer; the bench syncs before
			// every call anyway. readSource is for keyed sources, unused.
			if req.Notif {
				return nil, nil
			}
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "bench client handles no requests"}
		}), jsonrpc2.SetLogger(discard{}))
	return p
}

func (p *inProcess) Call(ctx context.Context, method string, params, result any) error {
	return p.conn.Call(ctx, method, params, result)
}

// Close ends the session as the subprocess client does: shutdown, exit,
// close the input, wait for Serve to return.
func (p *inProcess) Close() error {
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.conn.Call(ctx, protocol.MethodShutdown, nil, nil); err == nil {
			_ = p.conn.Notify(ctx, protocol.MethodExit, nil)
		}
		p.toSrv.Close()
		select {
		case <-p.done:
		case <-ctx.Done():
			p.cerr = errors.New("in-process concord did not stop within 5s")
		}
		_ = p.conn.Close()
		if p.cerr == nil && p.err != nil {
			p.cerr = fmt.Errorf("in-process concord: %w", p.err)
		}
		if p.cerr == nil && p.status != 0 {
			p.cerr = fmt.Errorf("in-process concord: exit status %d", p.status)
		}
	})
	return p.cerr
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// sessions hands rpc.Serve the sessions package session builds (as
// cmd/concord does: the wiring knows no transport).
func sessions(o session.Options) rpc.NewSessionFunc {
	build := session.New(o)
	return func(ctx context.Context, c rpc.SessionConfig) (rpc.Core, string, error) {
		core, watch, err := build(ctx, session.Config(c))
		if err != nil {
			return nil, "", err
		}
		return core, watch, nil
	}
}
