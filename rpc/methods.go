package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/metrics"

	"github.com/concord-ctx/concord/protocol"
)

// handler runs one wire method: params in, result out.
type handler func(s *Server, ctx context.Context, p *params) (any, error)

// method is one wire method: its handler, how it is ordered, and for a
// method ordered by agent how its params decode (Handle decodes them once
// to find the agent; the handler takes the decoded value).
type method struct {
	run    handler
	order  order
	decode func(*json.RawMessage) (any, error)
}

// params is one request's params as sent, and decoded once when Handle
// needed them for ordering.
type params struct {
	raw *json.RawMessage
	v   any   // a pointer to the method's params type, once decoded
	err error // that decode's error
}

// decodeAs is a method's decode: params into a new P.
func decodeAs[P any](raw *json.RawMessage) (any, error) {
	v := new(P)
	err := decodeParams(raw, v)
	return v, err
}

// paramsOf returns the request's params as P: the value Handle decoded, or
// a decode of the raw params.
func paramsOf[P any](p *params) (P, error) {
	if v, ok := p.v.(*P); ok {
		return *v, p.err
	}
	var v P
	err := decodeParams(p.raw, &v)
	return v, err
}

// agentOf is the agent a decoded request is ordered by ("" when none).
func agentOf(v any) string {
	switch p := v.(type) {
	case *observeWire:
		return p.Agent
	case *protocol.SyncParams:
		return p.Agent
	case *protocol.RecognizeParams:
		return p.Agent
	case *protocol.ReleaseParams:
		return p.Agent
	case *protocol.CompactedParams:
		return p.Agent
	}
	return ""
}

// order says what a request waits for; see docs/protocol.md, "Ordering".
type order int

const (
	// byAgent: after earlier requests of the same agent and the latest
	// barrier; concurrent with other agents.
	byAgent order = iota
	// barrier: after every earlier request, before every later one.
	barrier
)

// methods is the dispatch table. The core methods share one shape (decode,
// find the session, call the core), so each is a line here; the core
// validates and names the offending wire field.
var methods = map[string]method{
	protocol.MethodInitialize:    {(*Server).initialize, barrier, nil},
	protocol.MethodObserve:       {onCore(Core.Observe, (*observeWire).params), byAgent, decodeAs[observeWire]},
	protocol.MethodSourceChanged: {onCore(Core.SourceChanged, same[protocol.SourceChangedParams]), barrier, nil},
	protocol.MethodSync:          {onCore(syncNonNil, same[protocol.SyncParams]), byAgent, decodeAs[protocol.SyncParams]},
	protocol.MethodRecognize:     {onCore(Core.Recognize, same[protocol.RecognizeParams]), byAgent, decodeAs[protocol.RecognizeParams]},
	protocol.MethodRelease:       {onCore(Core.Release, same[protocol.ReleaseParams]), byAgent, decodeAs[protocol.ReleaseParams]}, // barrier when it names no agent
	protocol.MethodCompacted:     {onCore(Core.Compacted, same[protocol.CompactedParams]), byAgent, decodeAs[protocol.CompactedParams]},
	protocol.MethodStats:         {(*Server).stats, barrier, nil},
	protocol.MethodShutdown:      {(*Server).shutdown, barrier, nil},
	protocol.MethodExit:          {(*Server).exitNotification, barrier, nil},
}

// onCore makes the handler of a core method: its params decoded as W (a
// wrong JSON type is invalid params naming the field), turned into the
// core's P by conv (which may refuse what decoding cannot see, such as an
// absent key), then the session's core called.
func onCore[W, P, R any](call func(Core, context.Context, P) (R, error), conv func(*W) (P, error)) handler {
	return func(s *Server, ctx context.Context, raw *params) (any, error) {
		w, err := paramsOf[W](raw)
		if err != nil {
			return nil, err
		}
		p, err := conv(&w)
		if err != nil {
			return nil, err
		}
		core, err := s.session()
		if err != nil {
			return nil, err
		}
		return call(core, ctx, p)
	}
}

// same is conv for params the core takes as they decode.
func same[P any](p *P) (P, error) { return *p, nil }

// syncNonNil keeps "blocks" an array on the wire whatever the core returns.
func syncNonNil(c Core, ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error) {
	res, err := c.Sync(ctx, p)
	if err == nil && res.Blocks == nil {
		res.Blocks = []protocol.BlockView{}
	}
	return res, err
}

// stats is the core's counters and the server's own timings of syncs.
func (s *Server) stats(_ context.Context, raw *params) (any, error) {
	if _, err := paramsOf[struct{}](raw); err != nil {
		return nil, err
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	res := core.Stats()
	res.Syncs = s.syncs.snapshot()
	res.HeapLiveBytes = heapLive()
	return res, nil
}

// heapLive is the live heap as the last GC marked it (runtime/metrics: no
// collection is forced, so stats stays cheap).
func heapLive() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}

// observeWire is observe's params with each source's text as sent (the
// outer fields shadow the embedded ones for encoding/json), so one decode
// tells an absent text from "".
type observeWire struct {
	protocol.ObserveParams
	Sources []sourceWire `json:"sources"`
}

type sourceWire struct {
	protocol.Source
	Text *string `json:"text"` // nil: absent or null
}

// params refuses a snapshot source without "text" (absent or null): the
// server checks what the tool showed against the source, so a missing
// text would make every such block invalid without a word. "" is a valid
// text (an empty file or range). Events need no text.
func (w *observeWire) params() (protocol.ObserveParams, error) {
	p := w.ObserveParams
	if w.Sources == nil {
		return p, nil
	}
	p.Sources = make([]protocol.Source, len(w.Sources))
	for i, src := range w.Sources {
		p.Sources[i] = src.Source
		switch {
		case src.Text != nil:
			p.Sources[i].Text = *src.Text
		case p.Kind != protocol.Event:
			return p, invalidField(fmt.Sprintf("sources[%d].text", i), "required: the lines as the tool showed them, joined by \"\\n\" (\"\" for empty content)")
		}
	}
	return p, nil
}

// shutdown stops watching and refuses further work; the process stays until
// exit (or the end of input).
func (s *Server) shutdown(context.Context, *params) (any, error) {
	s.mu.Lock()
	core := s.core
	s.core, s.state = nil, stateShutdown
	s.mu.Unlock()
	if core != nil {
		if err := core.Close(); err != nil {
			s.log.Warn("close session", "error", err)
		}
	}
	if s.cfg.OnShutdown != nil {
		s.cfg.OnShutdown()
	}
	return nil, nil
}

// exitNotification ends the process: status 0 after shutdown, else 1.
func (s *Server) exitNotification(context.Context, *params) (any, error) {
	s.mu.Lock()
	code := 1
	if s.state == stateShutdown {
		code = 0
	}
	s.mu.Unlock()
	select {
	case s.exit <- code:
	default:
	}
	return nil, nil
}
