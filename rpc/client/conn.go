package client

import (
	"context"
	"io"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/internal/frame"

	"github.com/sourcegraph/jsonrpc2"
)

// Connect speaks the protocol over conn, an established connection to a
// server that outlives it (a unix socket of `concord serve --socket`), with
// these options' Framing (default content-length) and MaxMessage; the
// process options do not apply. Close closes the connection only: it sends
// neither shutdown nor exit, so the server's session goes on for its other
// clients. Exited is closed when the connection ends.
func (o Options) Connect(conn io.ReadWriteCloser) *Client {
	framing := o.Framing
	if framing == "" {
		framing = protocol.FramingContentLength
	}
	c := &Client{exited: make(chan struct{}), tail: &tailWriter{max: 0}, grace: time.Second}
	s := frame.New(conn, conn, conn, framing, o.MaxMessage)
	c.stream = s
	c.conn = jsonrpc2.NewConn(context.Background(), s, clientHandler{c}, jsonrpc2.SetLogger(discardLogger{}))
	go func() {
		<-c.conn.DisconnectNotify()
		close(c.exited)
	}()
	return c
}
