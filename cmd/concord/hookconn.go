package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/concord-ctx/concord/hook"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/runtime"
)

// hookConns serves the socket's connections: a lone hook request (what
// `concord hook` sends, one round trip per event), or the protocol
// (initialize first) for any other client.
type hookConns struct {
	shared *sharedSession
	log    *slog.Logger
	end    func(reason string) // ends the server (a session's end)
}

// serveConn reads the connection's first message: a hook request is
// answered here, anything else goes to the protocol's server with that
// message first.
func (h hookConns) serveConn(ctx context.Context, in io.Reader, out io.Writer, cfg rpc.Config) {
	r := bufio.NewReaderSize(in, 16<<10)
	first, err := readFirstLine(r, cfg.MaxMessage)
	if err == nil && mayBeHook(first) {
		var req hookRequest
		err := json.Unmarshal(first, &req)
		if err != nil {
			// A hook request whose params do not decode is refused as
			// one, naming what is wrong (the protocol's server would say
			// only that it has no such method).
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(first, &m) == nil {
				req.ID, req.Method = m.ID, m.Method
				err = fmt.Errorf("%w: %v", runtime.ErrInvalidParams, err)
			}
		}
		if req.Method == protocol.MethodHook {
			h.answer(ctx, out, req, err, cfg.Policy)
			return
		}
	}
	if _, err := rpc.Serve(ctx, io.MultiReader(bytes.NewReader(first), r), out, cfg); err != nil {
		h.log.Error("serve a connection", "error", err)
	}
}

// hookRequest is a hook request as read, in one decode of the line.
type hookRequest struct {
	ID     json.RawMessage     `json:"id"`
	Method string              `json:"method"`
	Params protocol.HookParams `json:"params"`
}

// mayBeHook tells at a glance a line that may be a hook request from one
// that is surely not (most of a protocol client's): a hook's event may be
// large, and is decoded once, not once more to learn the method.
func mayBeHook(line []byte) bool {
	return bytes.Contains(line, []byte(`"`+protocol.MethodHook+`"`))
}

// readFirstLine is the input up to its first newline, included; more than
// max bytes, or the input's end, return what was read with an error (the
// protocol's server answers it).
func readFirstLine(r *bufio.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		max = rpc.DefaultMaxMessage
	}
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return line, err
		case int64(len(line)) > max:
			return line, errors.New("first message over the size limit")
		}
	}
}

// answer handles one hook request and writes its answer: the session is
// built by its initialize params when there is none (or attached to),
// package hook does what the event means, and a session's end ends the
// server once the answer is written.
func (h hookConns) answer(ctx context.Context, out io.Writer, req hookRequest, decodeErr error, operator protocol.PolicyConfig) {
	res, end, err := protocol.HookResult{}, false, decodeErr
	if err == nil {
		res, end, err = h.handle(ctx, req.Params, operator)
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if err != nil {
		e := rpc.ErrorFor(protocol.MethodHook, err)
		if e.Code == protocol.CodeInternalError {
			h.log.Error("hook failed", "runtime", req.Params.Runtime, "error", err)
		} else {
			h.log.Warn("hook refused", "runtime", req.Params.Runtime, "error", e.Message)
		}
		msg["error"] = e
	} else {
		msg["result"] = res
	}
	b, mErr := json.Marshal(msg)
	if mErr != nil {
		h.log.Error("hook answer", "error", mErr)
		return
	}
	if _, err := out.Write(append(b, '\n')); err != nil {
		h.log.Warn("hook answer not written", "error", err)
	}
	if end {
		h.end("session end")
	}
}

func (h hookConns) handle(ctx context.Context, p protocol.HookParams, operator protocol.PolicyConfig) (protocol.HookResult, bool, error) {
	if p.Initialize == nil {
		return protocol.HookResult{}, false, fmt.Errorf("%w: initialize: required: the session's initialize params", runtime.ErrInvalidParams)
	}
	if v := p.Initialize.ProtocolVersion; v != protocol.Version {
		return protocol.HookResult{}, false, fmt.Errorf("%w: initialize.protocolVersion: this server speaks %d, not %d",
			runtime.ErrInvalidParams, protocol.Version, v)
	}
	core, err := h.shared.attachWith(ctx, func() (rpc.SessionConfig, error) {
		opts, err := rpc.SessionOptions(*p.Initialize, operator)
		return rpc.SessionConfig{Options: opts, Logger: h.log}, err
	})
	if err != nil {
		return protocol.HookResult{}, false, err
	}
	o, err := hook.Handle(ctx, core, h.log.With("hook", p.Runtime), p.Runtime, p.Event)
	if ie := (*hook.InputError)(nil); errors.As(err, &ie) {
		return protocol.HookResult{}, false, fmt.Errorf("%w: event: %w", runtime.ErrInvalidParams, ie.Err)
	}
	if err != nil {
		return protocol.HookResult{}, false, err
	}
	return protocol.HookResult{Output: string(o.Output)}, o.EndSession, nil
}
