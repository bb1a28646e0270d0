// Package rpc is Concord's JSON-RPC 2.0 server: the lifecycle, dispatch of
// each wire method to the core (a table, methods.go), per-agent ordering,
// blocksChanged notifications and the mapping of core errors to wire codes
// (errors.go). The wire types are package protocol, the framing is
// rpc/internal/frame, and the Go client is rpc/client. docs/protocol.md is
// the contract this package implements.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/internal/frame"
	"github.com/concord-ctx/concord/runtime"
)

// Core is what the server needs of a session: its context manager, the
// intake of tool calls (recognize) and the URI schemes it serves;
// *session.Core satisfies it.
type Core interface {
	Observe(ctx context.Context, p protocol.ObserveParams) (protocol.ObserveResult, error)
	SourceChanged(ctx context.Context, p protocol.SourceChangedParams) (protocol.SourceChangedResult, error)
	Sync(ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error)
	Recognize(ctx context.Context, p protocol.RecognizeParams) (protocol.RecognizeResult, error)
	Release(ctx context.Context, p protocol.ReleaseParams) (protocol.ReleaseResult, error)
	Compacted(ctx context.Context, p protocol.CompactedParams) (protocol.CompactedResult, error)
	Stats() protocol.StatsResult
	// Schemes are the URI schemes the session's adapters serve, for
	// initialize's capabilities ("*": any other, through readSource).
	Schemes() []string
	Close() error
}

// Config configures Serve.
type Config struct {
	NewSession NewSessionFunc
	Name       string // server name reported by initialize ("concord")
	Version    string
	Framing    string // protocol.FramingContentLength (default) or protocol.FramingNewline
	MaxMessage int64  // default DefaultMaxMessage
	// Policy is the operator's policy (--policy FILE); initialize's policy
	// overrides it field by field.
	Policy protocol.PolicyConfig
	// ReadSourceTimeout bounds one readSource round trip (default 30s).
	ReadSourceTimeout time.Duration
	Logger            *slog.Logger // default: discard
	Trace             bool         // log every message read and written
	// OnShutdown, when set, is called after a shutdown request closed the
	// session's core: a server whose connections share one session (serve
	// --socket) ends the whole session then, not only this connection.
	OnShutdown func()
}

type state int

const (
	stateNew state = iota
	stateRunning
	stateShutdown
)

// Server serves one session over one connection.
type Server struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	conn    *jsonrpc2.Conn // set by the first Handle: NewConn reads before it returns
	state   state
	core    Core
	cancels map[jsonrpc2.ID]context.CancelFunc
	exit    chan int // exit notification: the process status
	closing bool     // Serve is returning: requests still arriving are dropped

	sched    scheduler
	notes    notifier
	handlers sync.WaitGroup
	notified chan struct{} // closed when the notifier goroutine ended

	// input is cancelled when stdin ends: no answer to readSource can come
	// any more, so pending and later fetches fail at once.
	input    context.Context
	endInput context.CancelFunc

	nextID atomic.Uint64 // ids of server-to-client requests

	stream *frame.Stream // writes results (writeResult)
	syncs  syncTimes     // for stats
}

// Serve runs the protocol on in/out until exit or the end of in. It returns
// the process status: 0 after shutdown+exit or at the end of input, 1 for an
// exit without shutdown. The session's core is closed before it returns.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg Config) (int, error) {
	if cfg.NewSession == nil {
		return 1, errors.New("rpc.Serve: Config.NewSession is required")
	}
	if cfg.Framing == "" {
		cfg.Framing = protocol.FramingContentLength
	}
	if cfg.Framing != protocol.FramingContentLength && cfg.Framing != protocol.FramingNewline {
		return 1, fmt.Errorf("rpc.Serve: unknown framing %q (want %s or %s)", cfg.Framing, protocol.FramingContentLength, protocol.FramingNewline)
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	if cfg.ReadSourceTimeout <= 0 {
		cfg.ReadSourceTimeout = 30 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "concord"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, cancels: map[jsonrpc2.ID]context.CancelFunc{}, exit: make(chan int, 1)}
	s.input, s.endInput = context.WithCancel(context.Background())
	defer s.endInput()
	s.sched.init()
	s.notes.init()

	st := frame.New(in, out, nil, cfg.Framing, cfg.MaxMessage)
	st.AnswerBad = true
	s.stream = st
	st.OnBad = func(e *Error) { log.Warn("bad message", "code", e.Code, "error", e.Message) }
	st.OnSkip = func(n, max int64) {
		log.Warn("oversized message: skipping its body before answering it", "contentLength", n, "limit", max,
			"note", fmt.Sprintf("the next %d bytes of input are dropped; a message sent within them is lost", n))
	}
	st.AtEnd = func() {
		s.endInput()
		s.waitHandlers(endGrace)
	}
	if cfg.Trace {
		st.Trace = func(dir string, msg []byte) { log.Info("rpc "+dir, "json", clip(string(msg), 64<<10)) }
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Requests come straight from the frame's decode (Stream.OnRequest):
	// admitted in arrival order, each runs on the goroutine that read it
	// while another reads on. jsonrpc2's connection takes the responses
	// (to readSource) and writes error replies.
	var conn *jsonrpc2.Conn
	ready := make(chan struct{})
	st.OnRequest = func(req *jsonrpc2.Request) func() {
		<-ready
		return s.admit(ctx, conn, req)
	}
	conn = jsonrpc2.NewConn(ctx, st, s, jsonrpc2.SetLogger(slogPrintf{log}))
	close(ready)
	s.notified = make(chan struct{})
	go func() { defer close(s.notified); s.notes.run(ctx, s) }()

	code := 0
	select {
	case code = <-s.exit:
		log.Debug("exit", "status", code)
	case <-conn.DisconnectNotify():
		log.Debug("input closed")
	case <-ctx.Done():
	}
	cancel()
	conn.Close()
	<-s.notified // the notifier ends with Serve, not after it
	s.mu.Lock()
	s.closing = true // no new handlers while waiting for the running ones
	s.mu.Unlock()
	s.waitHandlers(endGrace)
	if err := st.Err(); err != nil {
		// Input that ended inside a frame (or failed): the peer went away
		// mid-message or speaks another framing. Say so, and fail.
		log.Error("the input cannot be read on; the session ends", "error", err)
		if code == 0 {
			code = 1
		}
	}
	s.mu.Lock()
	core := s.core
	s.core = nil
	s.mu.Unlock()
	if core != nil {
		if err := core.Close(); err != nil {
			log.Warn("close session", "error", err)
		}
	}
	return code, nil
}

// endGrace bounds how long the end of input waits for requests already
// read: their answers are still written (a client may close stdin right
// after its last request), but a stuck handler does not keep a dead parent's
// server alive.
const endGrace = 2 * time.Second

func (s *Server) waitHandlers(d time.Duration) {
	waited := make(chan struct{})
	go func() { s.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(d):
		s.log.Warn("requests still running at the end of input", "waited", d)
	}
}

// Handle implements jsonrpc2.Handler: the request runs on its own goroutine,
// so the caller's read loop keeps reading (responses to readSource
// included) while it works. Serve's stream admits requests itself.
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if run := s.admit(ctx, conn, req); run != nil {
		go run()
	}
}

// admit orders a request as it is read (see scheduler) and returns the work
// that waits for its turn, runs and answers it; nil when nothing is left to
// do (a cancellation, an unknown method answered at once, a closing server).
func (s *Server) admit(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) func() {
	s.mu.Lock()
	if s.conn == nil {
		s.conn = conn
	}
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return nil
	}
	if req.Method == protocol.MethodCancelRequest {
		s.cancelRequest(req.Params)
		return nil
	}
	m, ok := methods[req.Method]
	if !ok {
		if req.Notif {
			s.log.Debug("ignoring unknown notification", "method", req.Method)
			return nil
		}
		s.reply(ctx, conn, req, nil, newError(protocol.CodeMethodNotFound, fmt.Sprintf("method not found: %q", req.Method), nil))
		return nil
	}
	lane, isBarrier := "", m.order == barrier
	in := &params{raw: req.Params}
	if !isBarrier {
		// Decoded here, once: the agent orders the request, and the
		// handler takes the value (an error is its answer, in order).
		in.v, in.err = m.decode(req.Params)
		lane = agentOf(in.v)
		if lane == "" && req.Method == protocol.MethodRelease {
			isBarrier = true
		}
	}
	wait, done := s.sched.enter(lane, isBarrier)

	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if !req.Notif {
		s.cancels[req.ID] = cancel
	}
	s.handlers.Add(1) // under mu: never concurrent with the final Wait (see closing)
	s.mu.Unlock()
	admitted := time.Now()
	return func() {
		defer s.handlers.Done()
		defer done()
		defer func() {
			cancel()
			if !req.Notif {
				s.mu.Lock()
				delete(s.cancels, req.ID)
				s.mu.Unlock()
			}
		}()
		// Waiting is not cancellable: ending early would let later requests
		// overtake earlier ones. Earlier requests end on their own.
		wait()
		if err := rctx.Err(); err != nil {
			s.reply(ctx, conn, req, nil, err)
			return
		}
		res, err := s.call(rctx, req, m, in)
		if err != nil && rctx.Err() != nil && ctx.Err() == nil {
			err = context.Canceled // $/cancelRequest: whatever failed, it was asked to stop
		}
		handled := time.Since(admitted)
		n := s.reply(ctx, conn, req, res, err)
		if n > 0 && req.Method == protocol.MethodSync {
			s.syncs.add(handled, time.Since(admitted), n)
		}
	}
}

// call checks the lifecycle and runs the method, turning a panic into an
// internal error: one bad request never takes the session down.
func (s *Server) call(ctx context.Context, req *jsonrpc2.Request, m method, in *params) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			buf := make([]byte, 8<<10)
			buf = buf[:goruntime.Stack(buf, false)]
			s.log.Error("panic in handler", "method", req.Method, "panic", fmt.Sprint(r), "stack", string(buf))
			res, err = nil, newError(protocol.CodeInternalError, fmt.Sprintf("%s: internal error: %v", req.Method, r), nil)
		}
	}()
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	switch {
	case req.Method == protocol.MethodExit:
	case st == stateNew && req.Method != protocol.MethodInitialize:
		return nil, newError(protocol.CodeNotInitialized, fmt.Sprintf("%s: server not initialized: send initialize first", req.Method), nil)
	case st == stateRunning && req.Method == protocol.MethodInitialize:
		return nil, newError(protocol.CodeInvalidRequest, "initialize: already initialized", nil)
	case st == stateShutdown:
		return nil, newError(protocol.CodeInvalidRequest, fmt.Sprintf("%s: server is shut down: only exit is accepted", req.Method), nil)
	}
	return m.run(s, ctx, in)
}

// reply answers req with res or err; n is the bytes of a result written
// (0 for an error, a notification, or a reply that failed).
func (s *Server) reply(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request, res any, err error) (n int) {
	if req.Notif {
		if err != nil {
			s.log.Warn("notification failed", "method", req.Method, "error", err)
		}
		return 0
	}
	if err != nil {
		e := toError(req.Method, err)
		if e.Code == protocol.CodeInternalError {
			s.log.Error("request failed", "method", req.Method, "error", err)
		} else {
			s.log.Debug("request refused", "method", req.Method, "code", e.Code, "error", e.Message)
		}
		err = conn.ReplyWithError(ctx, req.ID, wire(e))
	} else {
		n, err = s.writeResult(conn, req.ID, res)
	}
	if err != nil {
		if !errors.Is(err, jsonrpc2.ErrClosed) {
			s.log.Warn("reply failed", "method", req.Method, "error", err)
		}
		return 0
	}
	return n
}

// writeResult answers with a result through the stream, encoded once
// (frame.Stream.WriteResult); like jsonrpc2's Reply, not once the
// connection is closed. n is the reply's bytes, 0 when the stream is
// jsonrpc2's own (Handle).
func (s *Server) writeResult(conn *jsonrpc2.Conn, id jsonrpc2.ID, res any) (n int, err error) {
	if s.stream == nil {
		return 0, conn.Reply(context.Background(), id, res)
	}
	select {
	case <-conn.DisconnectNotify():
		return 0, jsonrpc2.ErrClosed
	default:
	}
	return s.stream.WriteResult(id, res)
}

// session returns the core, or an error when there is none (shut down).
func (s *Server) session() (Core, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.core == nil {
		return nil, runtime.ErrClosed
	}
	return s.core, nil
}

// cancelRequest implements $/cancelRequest {"id": …}: the request's context
// is cancelled; it answers -32800 unless it had already finished.
func (s *Server) cancelRequest(raw *json.RawMessage) {
	var p struct {
		ID jsonrpc2.ID `json:"id"`
	}
	if raw == nil || json.Unmarshal(*raw, &p) != nil {
		return
	}
	s.mu.Lock()
	cancel := s.cancels[p.ID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// readSource asks the client for a keyed source's content.
func (s *Server) readSource(ctx context.Context, uri string) (runtime.Content, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadSourceTimeout)
	defer cancel()
	stop := context.AfterFunc(s.input, cancel)
	defer stop()
	if s.input.Err() != nil {
		return runtime.Content{}, errors.New("readSource: the client closed its end")
	}
	var raw json.RawMessage
	// Ids start at 1: some clients treat a 0 id as absent.
	id := jsonrpc2.ID{Num: s.nextID.Add(1)}
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if err := conn.Call(ctx, protocol.MethodReadSource, protocol.ReadSourceParams{URI: uri}, &raw, jsonrpc2.PickID(id)); err != nil {
		var we *jsonrpc2.Error
		switch {
		case errors.As(err, &we):
			return runtime.Content{}, fmt.Errorf("the client answered readSource with an error: %s", we.Message)
		case s.input.Err() != nil:
			return runtime.Content{}, errors.New("readSource: the client closed its end")
		case errors.Is(err, context.DeadlineExceeded):
			// Plain words: this text reaches the model in the block's notice.
			return runtime.Content{}, fmt.Errorf("the client did not answer readSource within %s", s.cfg.ReadSourceTimeout)
		}
		return runtime.Content{}, fmt.Errorf("readSource: %w", err)
	}
	res, err := decodeReadSourceResult(raw)
	if err != nil {
		// The binding is broken, not the source: say so where its author looks.
		s.log.Warn("malformed readSource result", "uri", uri, "id", id.Num, "error", err)
		return runtime.Content{}, fmt.Errorf("the client's readSource answer was malformed (%w)", err)
	}
	return runtime.Content{Text: res.Text, Version: res.Version}, nil
}

// decodeReadSourceResult checks a readSource result: an object with a string
// "text" (required: a missing text is not empty content) and an optional
// string "version". Its errors name the field in plain words; they end up
// in the notice the model reads.
func decodeReadSourceResult(raw json.RawMessage) (protocol.ReadSourceResult, error) {
	var res protocol.ReadSourceResult
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return res, fmt.Errorf("result must be an object with text, not %s", clip(string(raw), 40))
	}
	text, ok := fields["text"]
	if !ok || string(text) == "null" {
		return res, errors.New("result.text is required")
	}
	if json.Unmarshal(text, &res.Text) != nil {
		return res, fmt.Errorf("result.text must be a string, not %s", clip(string(text), 40))
	}
	if v, ok := fields["version"]; ok && string(v) != "null" && json.Unmarshal(v, &res.Version) != nil {
		return res, fmt.Errorf("result.version must be a string, not %s", clip(string(v), 40))
	}
	return res, nil
}

// DefaultMaxMessage is the default cap on one message's size.
const DefaultMaxMessage = frame.DefaultMaxMessage

var clip = frame.Clip

// slogPrintf adapts jsonrpc2's logger to slog.
type slogPrintf struct{ log *slog.Logger }

func (l slogPrintf) Printf(format string, args ...any) {
	l.log.Warn(fmt.Sprintf(format, args...))
}
