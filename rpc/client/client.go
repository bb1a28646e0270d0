// Package client drives a `concord serve` subprocess over its stdin and
// stdout: the Go client of docs/protocol.md, for tests, benchmarks and Go
// hosts. Server errors come back as *protocol.Error.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/internal/frame"

	"github.com/sourcegraph/jsonrpc2"
)

// Client drives one `concord serve` subprocess over its stdin and stdout.
// It is safe for concurrent use. Calls fail with jsonrpc2.ErrClosed once the
// process has exited; server errors come back as *protocol.Error (use errors.As).
type Client struct {
	cmd    *exec.Cmd
	conn   *jsonrpc2.Conn
	stream *frame.Stream // keeps results for Call (Await)
	stdin  *os.File      // the write end of the child's stdin
	out    *os.File      // the read end of the child's stdout
	tail   *tailWriter
	grace  time.Duration

	mu       sync.Mutex
	onBlocks func(protocol.BlocksChangedParams)
	onRead   func(context.Context, protocol.ReadSourceParams) (protocol.ReadSourceResult, error)

	exited  chan struct{}
	waitErr error
	nextID  atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// Options configure Start. The zero value is ready to use.
type Options struct {
	// Stderr receives the child's stderr (its logs) as it arrives. The pipe
	// is always drained, so a chatty child never blocks; nil discards it
	// (the last 64 KiB stay available through Client.Stderr).
	Stderr io.Writer
	// Framing is protocol.FramingContentLength or protocol.FramingNewline; "" infers it from
	// a --framing argument in args (default content-length).
	Framing string
	// MaxMessage caps one incoming message (default 16 MiB).
	MaxMessage int64
	// Grace is how long Close waits for a clean exit before killing the
	// process (default 5s).
	Grace time.Duration
	// Env and Dir are the child's environment and working directory
	// (default: this process's).
	Env []string
	Dir string
}

// Start launches bin with args (typically "serve" and flags) using default
// options. ctx bounds the launch only; end the process with Close.
func Start(ctx context.Context, bin string, args ...string) (*Client, error) {
	return Options{}.Start(ctx, bin, args...)
}

// Start launches bin with args using these options.
func (o Options) Start(ctx context.Context, bin string, args ...string) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	framing := o.Framing
	if framing == "" {
		framing = framingFromArgs(args)
	}
	grace := o.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	c := &Client{stdin: inW, out: outR, grace: grace, exited: make(chan struct{}), tail: &tailWriter{max: 64 << 10, fwd: o.Stderr}}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.tail
	cmd.Env, cmd.Dir = o.Env, o.Dir
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	// The child holds its own copies; closing ours lets EOF travel both ways.
	inR.Close()
	outW.Close()
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()

	// Only stdin is closed with the connection: the child's stdout stays
	// readable until it exits, so its last replies are not lost and it never
	// writes into a closed pipe.
	s := frame.New(outR, inW, inW, framing, o.MaxMessage)
	c.stream = s
	c.conn = jsonrpc2.NewConn(context.Background(), s, clientHandler{c}, jsonrpc2.SetLogger(discardLogger{}))
	return c, nil
}

func framingFromArgs(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--framing="); ok {
			return v
		}
		if a == "--framing" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return protocol.FramingContentLength
}

// HandleBlocksChanged sets the function called for each blocksChanged
// notification. It runs on the connection's read loop: it must not block
// (hand the hint to a channel or set a flag).
func (c *Client) HandleBlocksChanged(f func(protocol.BlocksChangedParams)) {
	c.mu.Lock()
	c.onBlocks = f
	c.mu.Unlock()
}

// HandleReadSource sets the function that answers the server's readSource
// requests (keyed sources). Without one the client answers with an error and
// the server invalidates the blocks with a notice. Each request runs in its
// own goroutine.
func (c *Client) HandleReadSource(f func(ctx context.Context, p protocol.ReadSourceParams) (protocol.ReadSourceResult, error)) {
	c.mu.Lock()
	c.onRead = f
	c.mu.Unlock()
}

// handle serves the server's calls to the client.
func (c *Client) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c.mu.Lock()
	onBlocks, onRead := c.onBlocks, c.onRead
	c.mu.Unlock()
	switch {
	case req.Method == protocol.MethodBlocksChanged:
		var p protocol.BlocksChangedParams
		if onBlocks != nil && decode(req.Params, &p) == nil {
			onBlocks(p)
		}
	case req.Method == protocol.MethodReadSource && !req.Notif:
		// Answer off the read loop: the handler may take its time.
		go func() {
			resp := &jsonrpc2.Response{ID: req.ID}
			var p protocol.ReadSourceParams
			var res protocol.ReadSourceResult
			err := decode(req.Params, &p)
			switch {
			case err != nil:
			case onRead == nil:
				err = errors.New("readSource: this client cannot read keyed sources")
			default:
				res, err = onRead(ctx, p)
			}
			if err == nil {
				err = resp.SetResult(res)
			}
			if err != nil {
				resp.Error = &jsonrpc2.Error{Code: protocol.CodeInternalError, Message: err.Error()}
			}
			_ = conn.SendResponse(ctx, resp)
		}()
	case !req.Notif:
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: protocol.CodeMethodNotFound, Message: "client does not handle " + req.Method})
	}
}

// Call sends a request and decodes its result into result (which may be nil).
// If ctx ends first, Call tells the server ($/cancelRequest) and returns
// ctx's error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		// Ended before it began: nothing is sent. (Sent, its answer could
		// race the ended context in jsonrpc2's wait and win.)
		return err
	}
	id := jsonrpc2.ID{Num: c.nextID.Add(1)}
	// The result is decoded here, once, from the bytes the stream kept
	// (frame.Stream.Await), not by jsonrpc2; raw is the placeholder, or the
	// result itself when the response came the other way.
	kept := c.stream.Await(id)
	defer kept.Done()
	var raw json.RawMessage
	err := c.conn.Call(ctx, method, params, &raw, jsonrpc2.PickID(id))
	if err == nil && result != nil {
		if full, ok := kept.Take(); ok {
			raw = full
		}
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		_ = c.conn.Notify(context.Background(), protocol.MethodCancelRequest, protocol.CancelParams{ID: id.Num})
		return err
	}
	var we *jsonrpc2.Error
	if errors.As(err, &we) {
		return fromWire(we)
	}
	// A dead child shows up as a closed connection or, when the write lost
	// the race with the exit, a broken pipe: either way, say that it exited.
	if note := c.exitNote(); err != nil && (note != "" || errors.Is(err, jsonrpc2.ErrClosed)) {
		return fmt.Errorf("%s: %w%s", method, err, note)
	}
	return err
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Pid is the child's process id (for /proc/<pid>/status and the like); 0
// for a client of a connection (Connect).
func (c *Client) Pid() int {
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Exited is closed when the child process has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// ExitCode is the child's exit status, or -1 while it runs or if it was
// killed by a signal.
func (c *Client) ExitCode() int {
	if c.cmd == nil {
		return -1
	}
	select {
	case <-c.exited:
		return c.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Stderr returns the last 64 KiB the child wrote to stderr.
func (c *Client) Stderr() string { return c.tail.String() }

func (c *Client) exitNote() string {
	if c.cmd == nil {
		return "" // a connection: no process of ours to speak of
	}
	select {
	case <-c.exited:
		return fmt.Sprintf(" (concord exited: %v; stderr: %s)", c.waitErr, frame.Clip(strings.TrimSpace(lastLines(c.tail.String(), 5)), 2000))
	default:
		return ""
	}
}

// Close ends the session politely (shutdown, exit, close stdin), waits up to
// the grace period, then kills the process. It returns nil when the process
// exited with status 0. Close is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		if c.cmd == nil {
			c.closeErr = c.conn.Close() // a connection (Connect): the server lives on
			return
		}
		select {
		case <-c.exited:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), c.grace)
			if err := c.conn.Call(ctx, protocol.MethodShutdown, nil, nil, jsonrpc2.PickID(jsonrpc2.ID{Num: c.nextID.Add(1)})); err == nil {
				_ = c.conn.Notify(ctx, protocol.MethodExit, nil)
			}
			cancel()
		}
		_ = c.conn.Close() // closes the child's stdin: EOF ends it too
		timer := time.NewTimer(c.grace)
		select {
		case <-c.exited:
			timer.Stop()
		case <-timer.C:
			_ = c.cmd.Process.Kill()
			<-c.exited
			c.closeErr = fmt.Errorf("concord did not exit within %v: killed", c.grace)
		}
		c.out.Close()
		if c.closeErr == nil && c.waitErr != nil {
			c.closeErr = fmt.Errorf("concord: %w; stderr: %s", c.waitErr, frame.Clip(strings.TrimSpace(lastLines(c.tail.String(), 5)), 2000))
		}
	})
	return c.closeErr
}

// tailWriter keeps the last max bytes written and forwards everything.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
	fwd io.Writer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	if t.fwd != nil {
		_, _ = t.fwd.Write(p) // a failing log sink must not block the child
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// clientHandler keeps Handle off Client's exported method set.
type clientHandler struct{ c *Client }

func (h clientHandler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	h.c.handle(ctx, conn, req)
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// decode reads a server request's params (absent params decode as {}).
func decode(raw *json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(*raw, v)
}

func fromWire(e *jsonrpc2.Error) *protocol.Error {
	out := &protocol.Error{Code: e.Code, Message: e.Message}
	if e.Data != nil {
		out.Data = append(json.RawMessage(nil), *e.Data...)
	}
	return out
}
