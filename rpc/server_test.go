package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/internal/frame"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/runtime"
)

// faultyCore injects the faults no real core should produce: a panic and
// an unclassified error. Everything else is tested against the real core
// through the real binary (cmd/concord).
type faultyCore struct{}

func (faultyCore) Observe(ctx context.Context, o protocol.ObserveParams) (protocol.ObserveResult, error) {
	panic("injected fault")
}
func (faultyCore) SourceChanged(ctx context.Context, c protocol.SourceChangedParams) (protocol.SourceChangedResult, error) {
	return protocol.SourceChangedResult{}, errors.New("disk on fire")
}
func (faultyCore) Sync(ctx context.Context, r protocol.SyncParams) (protocol.SyncResult, error) {
	return protocol.SyncResult{Generation: 7}, nil
}
func (faultyCore) Release(ctx context.Context, r protocol.ReleaseParams) (protocol.ReleaseResult, error) {
	return protocol.ReleaseResult{}, nil
}
func (faultyCore) Compacted(ctx context.Context, r protocol.CompactedParams) (protocol.CompactedResult, error) {
	return protocol.CompactedResult{}, nil
}
func (faultyCore) Recognize(ctx context.Context, r protocol.RecognizeParams) (protocol.RecognizeResult, error) {
	return protocol.RecognizeResult{}, errors.New("no intake here")
}
func (faultyCore) Schemes() []string           { return []string{"*"} }
func (faultyCore) Stats() protocol.StatsResult { return protocol.StatsResult{} }
func (faultyCore) Close() error                { return nil }

// TestHandlerFaults: a panicking handler answers -32603 and the session
// keeps serving; an unclassified core error is -32603 too.
func TestHandlerFaults(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code, err := Serve(context.Background(), inR, outW, Config{
			NewSession: func(ctx context.Context, cfg SessionConfig) (Core, string, error) {
				return faultyCore{}, protocol.WatchHooks, nil
			},
		})
		if err != nil {
			t.Error(err)
		}
		outW.Close()
		done <- code
	}()
	conn := jsonrpc2.NewConn(context.Background(), frame.New(outR, inW, inW, protocol.FramingContentLength, 0), jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	ctx := context.Background()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, Roots: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	code := func(err error) int64 {
		var we *jsonrpc2.Error
		if !errors.As(err, &we) {
			t.Fatalf("err = %v, want a JSON-RPC error", err)
		}
		return we.Code
	}
	err := conn.Call(ctx, protocol.MethodObserve, protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: "file:///r/a", Text: "x"}}}, nil)
	if c := code(err); c != protocol.CodeInternalError {
		t.Errorf("panic: code %d, want %d", c, protocol.CodeInternalError)
	}
	err = conn.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: "file:///r/a"}, nil)
	if c := code(err); c != protocol.CodeInternalError {
		t.Errorf("unclassified error: code %d, want %d", c, protocol.CodeInternalError)
	}
	var res protocol.SyncResult
	if err := conn.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "a"}, &res); err != nil || res.Generation != 7 || res.Blocks == nil {
		t.Fatalf("sync after the faults: %+v, %v", res, err)
	}
	inW.Close()
	if c := <-done; c != 0 {
		t.Errorf("status %d at the end of input, want 0", c)
	}
}

func TestToErrorMapping(t *testing.T) {
	tests := []struct {
		err    error
		code   int64
		reason string
	}{
		{runtime.ErrOutsideRoots, protocol.CodeOutsideRoots, ""},
		{runtime.ErrNotFound, protocol.CodeUnavailable, "not_found"},
		{runtime.ErrBinary, protocol.CodeUnavailable, "binary"},
		{runtime.ErrTooLarge, protocol.CodeUnavailable, "too_large"},
		{runtime.ErrUnreadable, protocol.CodeUnavailable, "unreadable"},
		{runtime.ErrUnknownScheme, protocol.CodeInvalidParams, ""},
		{runtime.ErrInvalidParams, protocol.CodeInvalidParams, ""},
		{&protocol.FieldError{Field: "sources[0].range", Reason: "x"}, protocol.CodeInvalidParams, ""},
		{runtime.ErrUnknownBlock, protocol.CodeUnknownBlock, ""},
		{runtime.ErrClosed, protocol.CodeInvalidRequest, ""},
		{context.Canceled, protocol.CodeRequestCancelled, ""},
		{errors.New("boom"), protocol.CodeInternalError, ""},
	}
	for _, tt := range tests {
		e := toError("observe", &runtime.SourceError{Op: "observe", URI: "file:///r/a", Err: tt.err})
		if e.Code != tt.code {
			t.Errorf("%v: code %d, want %d", tt.err, e.Code, tt.code)
		}
		if tt.reason != "" && !strings.Contains(string(e.Data), `"reason":"`+tt.reason+`"`) {
			t.Errorf("%v: data %s, want reason %s", tt.err, e.Data, tt.reason)
		}
	}
}

// fetchCore's SourceChanged asks the client for the source (readSource) and
// fails with whatever the fetch said: what a notice would carry.
type fetchCore struct {
	faultyCore
	fetch func(ctx context.Context, uri string) (runtime.Content, error)
}

func (c fetchCore) SourceChanged(ctx context.Context, ch protocol.SourceChangedParams) (protocol.SourceChangedResult, error) {
	_, err := c.fetch(ctx, ch.URI)
	return protocol.SourceChangedResult{}, err
}

// TestReadSourceTimeoutInPlainWords: a client that never answers readSource
// gets a reason the model can read ("did not answer ... within"), not Go's
// "context deadline exceeded"; the server keeps serving.
func TestReadSourceTimeoutInPlainWords(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		Serve(context.Background(), inR, outW, Config{
			ReadSourceTimeout: 100 * time.Millisecond,
			NewSession: func(ctx context.Context, cfg SessionConfig) (Core, string, error) {
				return fetchCore{fetch: cfg.Fetch}, protocol.WatchHooks, nil
			},
		})
		outW.Close()
	}()
	defer inW.Close()
	// This client receives readSource and never answers it.
	conn := jsonrpc2.NewConn(context.Background(), frame.New(outR, inW, inW, protocol.FramingContentLength, 0), jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, _ *jsonrpc2.Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})))
	ctx := context.Background()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, Roots: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	err := conn.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: "res://k/1", Version: "v2"}, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer readSource within 100ms") || strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v, want the timeout in plain words", err)
	}
	var res protocol.SyncResult
	if err := conn.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "a"}, &res); err != nil {
		t.Fatalf("sync after the timeout: %v", err)
	}
}

// genCore's Generation blocks until released: the notifier is inside it.
type genCore struct {
	faultyCore
	entered chan struct{}
	release chan struct{}
}

func (c genCore) Generation() uint64 {
	close(c.entered)
	<-c.release
	return 1
}

// TestNotifierEndsWithServe: Serve returns only after the notifier
// goroutine has (issue 10 bug 8: it outlived Serve).
func TestNotifierEndsWithServe(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, outR)
	core := genCore{entered: make(chan struct{}), release: make(chan struct{})}
	notifyc := make(chan func([]string), 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Serve(context.Background(), inR, outW, Config{
			NewSession: func(ctx context.Context, cfg SessionConfig) (Core, string, error) {
				notifyc <- cfg.Notify
				return core, protocol.WatchHooks, nil
			},
		})
	}()
	never, _ := io.Pipe() // this client reads nothing
	conn := jsonrpc2.NewConn(context.Background(), frame.New(never, inW, inW, protocol.FramingContentLength, 0), jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	if err := conn.Notify(context.Background(), protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, Roots: []string{}}); err != nil {
		t.Fatal(err)
	}
	(<-notifyc)([]string{"a"})
	select {
	case <-core.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifier never asked the core for its generation")
	}
	inW.Close() // the end of input: Serve winds down
	select {
	case <-returned:
		t.Fatal("Serve returned while its notifier was still running")
	case <-time.After(200 * time.Millisecond):
	}
	close(core.release)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return once the notifier ended")
	}
}

// laneCore's Sync for agent "slow" reads its source from the client
// (readSource) before answering; any other agent's answers at once.
type laneCore struct {
	faultyCore
	fetch func(ctx context.Context, uri string) (runtime.Content, error)
}

func (c laneCore) Sync(ctx context.Context, r protocol.SyncParams) (protocol.SyncResult, error) {
	if r.Agent != "slow" {
		return protocol.SyncResult{Generation: 2}, nil
	}
	got, err := c.fetch(ctx, "res://k/1")
	if err != nil {
		return protocol.SyncResult{}, err
	}
	if got.Text != "fresh" {
		return protocol.SyncResult{}, errors.New("readSource gave " + got.Text)
	}
	return protocol.SyncResult{Generation: 1}, nil
}

// TestInputReadWhileRequestsRun: a request runs on the goroutine that read
// it while another reads on, so a request waiting for the client (its
// readSource) neither stops the input (another agent's sync is read and
// answered meanwhile) nor misses the client's answer.
func TestInputReadWhileRequestsRun(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		Serve(context.Background(), inR, outW, Config{
			NewSession: func(ctx context.Context, cfg SessionConfig) (Core, string, error) {
				return laneCore{fetch: cfg.Fetch}, protocol.WatchHooks, nil
			},
		})
		outW.Close()
	}()
	defer inW.Close()
	asked, fastDone := make(chan struct{}), make(chan struct{})
	conn := jsonrpc2.NewConn(context.Background(), frame.New(outR, inW, inW, protocol.FramingContentLength, 0), jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method != protocol.MethodReadSource {
			return nil, nil
		}
		close(asked)
		<-fastDone // answered only once the other agent's sync was
		return protocol.ReadSourceResult{Text: "fresh", Version: "v2"}, nil
	})))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, Roots: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	var slowRes protocol.SyncResult
	go func() { slow <- conn.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "slow"}, &slowRes) }()
	select {
	case <-asked:
	case err := <-slow:
		t.Fatalf("the slow sync answered without asking readSource: %v", err)
	}
	var fast protocol.SyncResult
	if err := conn.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: "fast"}, &fast); err != nil || fast.Generation != 2 {
		t.Fatalf("the other agent's sync while one waits for readSource: %+v %v", fast, err)
	}
	select {
	case err := <-slow:
		t.Fatalf("the waiting sync answered before its readSource was: %v", err)
	default:
	}
	close(fastDone)
	if err := <-slow; err != nil || slowRes.Generation != 1 {
		t.Fatalf("the waiting sync: %+v %v", slowRes, err)
	}
}

// TestHintWhileSessionBuiltKept: a change reported while NewSession runs
// (a watcher may start before initialize has answered) reaches the client
// once the session runs; before, the notifier dropped it.
func TestHintWhileSessionBuiltKept(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		Serve(context.Background(), inR, outW, Config{
			NewSession: func(ctx context.Context, cfg SessionConfig) (Core, string, error) {
				cfg.Notify([]string{"early"})
				time.Sleep(20 * time.Millisecond) // the notifier looks while the session is being built
				return faultyCore{}, protocol.WatchHooks, nil
			},
		})
		outW.Close()
	}()
	defer inW.Close()
	hints := make(chan protocol.BlocksChangedParams, 1)
	conn := jsonrpc2.NewConn(context.Background(), frame.New(outR, inW, inW, protocol.FramingContentLength, 0), jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		var p protocol.BlocksChangedParams
		if req.Method == protocol.MethodBlocksChanged && req.Params != nil && json.Unmarshal(*req.Params, &p) == nil {
			hints <- p
		}
		return nil, nil
	}))
	if err := conn.Call(context.Background(), protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, Roots: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-hints:
		if len(p.Agents) != 1 || p.Agents[0] != "early" {
			t.Fatalf("blocksChanged %+v, want agent early", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hint reported while the session was built never reached the client")
	}
}
