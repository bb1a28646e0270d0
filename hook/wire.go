//go:build unix

package hook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/concord-ctx/concord/protocol"
)

// wire is the hook's side of one connection: JSON-RPC 2.0, one message a
// line (the server runs --framing newline). A hook sends its few requests
// at once and reads their answers: the server keeps their order
// (initialize first, then one agent's requests in arrival order), so a
// tool call costs one round trip, and a process that lives for one event
// needs no connection machinery beyond this.
type wire struct {
	conn net.Conn
	r    *bufio.Reader
	next int64
}

func newWire(conn net.Conn) *wire { return &wire{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)} }

// call is one request and where its result goes.
type call struct {
	method string
	params any
	result any // nil: the result is not read
	notify bool
	err    error // the server's error (*protocol.Error), set by send
}

// send writes every call, then reads the answers of the requests among
// them. A transport failure is returned; a server's error is the call's.
func (w *wire) send(calls ...*call) error {
	var buf bytes.Buffer
	ids := map[int64]*call{}
	for _, c := range calls {
		msg := map[string]any{"jsonrpc": "2.0", "method": c.method}
		if c.params != nil {
			msg["params"] = c.params
		}
		if !c.notify {
			w.next++
			msg["id"] = w.next
			ids[w.next] = c
		}
		line, err := json.Marshal(msg)
		if err != nil {
			return fmt.Errorf("%s: %w", c.method, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if _, err := w.conn.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	for len(ids) > 0 {
		line, err := w.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("%w: %w", errGone, err)
		}
		var resp struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *protocol.Error `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
		if resp.Method != "" || resp.ID == nil {
			continue // the server's own notification or request: not for a hook
		}
		c, ok := ids[*resp.ID]
		if !ok {
			continue
		}
		delete(ids, *resp.ID)
		switch {
		case resp.Error != nil:
			c.err = resp.Error
		case c.result != nil:
			if err := json.Unmarshal(resp.Result, c.result); err != nil {
				return fmt.Errorf("%s: decode result: %w", c.method, err)
			}
		}
	}
	return nil
}

// errGone is a server that took the connection but did not answer it.
var errGone = errors.New("the server closed the connection")
