//go:build unix

package hook

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/concord-ctx/concord/protocol"
)

// conn is the hook's side of one connection to the session's server: a
// blocking unix socket, its time bounded by the socket's own timeouts. A
// process that lives for one event needs no more: no poller, no
// goroutines (each costs the agent time on every tool call).
type conn struct{ fd int }

// dialUnix connects to the socket at path. A missing socket is
// fs.ErrNotExist; one nobody listens on, syscall.ECONNREFUSED.
func dialUnix(path string) (*conn, error) {
	// Close-on-exec under ForkLock, as package net does where a socket
	// cannot be made so at once (macOS): a server this hook starts must
	// not inherit it.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", path, err)
	}
	return &conn{fd: fd}, nil
}

func (c *conn) Close() error { return syscall.Close(c.fd) }

// setDeadline bounds every later read and write to what is left until dl.
func (c *conn) setDeadline(dl time.Time) error {
	left := max(time.Until(dl), time.Millisecond)
	tv := syscall.NsecToTimeval(left.Nanoseconds())
	for _, opt := range []int{syscall.SO_RCVTIMEO, syscall.SO_SNDTIMEO} {
		if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			return fmt.Errorf("socket timeout: %w", err)
		}
	}
	return nil
}

// roundTrip sends one request, a hook request alone on its connection,
// and reads its answer: one JSON-RPC message a line each way.
func (c *conn) roundTrip(req hookRequest) (string, error) {
	if err := c.write(req.encode()); err != nil {
		return "", err
	}
	line, err := c.readLine()
	if err != nil {
		return "", err
	}
	return decodeAnswer(line)
}

// decodeAnswer reads a hook request's answer: result.output, or the
// error's code and message (scan.go: no encoding/json in the hook process).
func decodeAnswer(line []byte) (string, error) {
	var result, errObj []byte
	err := objectMembers(line, func(key string, raw []byte) bool {
		switch key {
		case "result":
			result = raw
		case "error":
			errObj = raw
		}
		return true
	})
	if err != nil {
		return "", fmt.Errorf("answer: %w", err)
	}
	if len(errObj) > 0 && string(errObj) != "null" {
		e := &protocol.Error{}
		err := objectMembers(errObj, func(key string, raw []byte) bool {
			switch key {
			case "code":
				e.Code, _ = strconv.ParseInt(string(raw), 10, 64)
			case "message":
				e.Message, _ = unquote(raw)
			}
			return true
		})
		if err != nil {
			return "", fmt.Errorf("answer: error: %w", err)
		}
		return "", e
	}
	if len(result) == 0 || string(result) == "null" {
		return "", errors.New("answer: neither result nor error")
	}
	var out string
	var bad error
	err = objectMembers(result, func(key string, raw []byte) bool {
		if key == "output" {
			out, bad = unquote(raw)
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return "", fmt.Errorf("answer: result: %w", err)
	}
	return out, nil
}

// hookRequest is what a hook sends (protocol.HookParams).
type hookRequest struct {
	runtime, client, version string
	roots                    []string
	event                    []byte // the hook's input, JSON
}

// encode writes the request as encoding/json would encode it from
// protocol.HookParams, by hand: encoding/json builds an encoder for each
// type it meets, and InitializeParams' tree of types costs a fresh process
// about 0.3 ms, more than the rest of the hook's own work. The event is
// the runtime's JSON as it came: its line breaks, white space between
// tokens (a JSON string holds none raw), become spaces so that the
// request is one line; the server checks the rest.
func (r hookRequest) encode() []byte {
	b := make([]byte, 0, len(r.event)+256)
	b = append(b, `{"jsonrpc":"2.0","id":1,"method":"`+protocol.MethodHook+`","params":{"runtime":`...)
	b = appendQuoted(b, r.runtime)
	b = append(b, `,"initialize":{"protocolVersion":`+strconv.Itoa(protocol.Version)+`,"clientInfo":{"name":`...)
	b = appendQuoted(b, r.client)
	b = append(b, `,"version":`...)
	b = appendQuoted(b, r.version)
	b = append(b, `},"roots":[`...)
	for i, root := range r.roots {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, root)
	}
	b = append(b, `],"placement":"`+protocol.PlacementTail+`"},"event":`...)
	for _, c := range r.event {
		if c == '\n' || c == '\r' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, "}}\n"...)
}

func (c *conn) write(b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(c.fd, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("send: %w", timeout(err))
		}
		b = b[n:]
	}
	return nil
}

// readLine reads up to the first newline. The server answers once, then
// closes: an end of input before a newline is errGone.
func (c *conn) readLine() ([]byte, error) {
	var buf []byte
	chunk := make([]byte, 16<<10)
	for {
		n, err := syscall.Read(c.fd, chunk)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errGone, timeout(err))
		}
		if n == 0 {
			return nil, fmt.Errorf("%w before answering", errGone)
		}
		buf = append(buf, chunk[:n]...)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i], nil
		}
		if len(buf) > maxInput {
			return nil, fmt.Errorf("answer: over %d bytes", maxInput)
		}
	}
}

// timeout names the socket timeout's error.
func timeout(err error) error {
	if errors.Is(err, syscall.EAGAIN) {
		return errors.New("the session's server did not answer in time")
	}
	return err
}

// errGone is a server that took the connection but did not answer it.
var errGone = errors.New("the server closed the connection")
