package rpc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/concord-ctx/concord/protocol"
)

// handler runs one wire method: params in, result out.
type handler func(s *Server, ctx context.Context, params *json.RawMessage) (any, error)

// method is one wire method: its handler and how it is ordered.
type method struct {
	run   handler
	order order
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
	protocol.MethodInitialize:    {(*Server).initialize, barrier},
	protocol.MethodObserve:       {onCore(Core.Observe, requireText), byAgent},
	protocol.MethodSourceChanged: {onCore(Core.SourceChanged, nil), barrier},
	protocol.MethodSync:          {(*Server).syncViews, byAgent},
	protocol.MethodRecognize:     {(*Server).recognize, byAgent},
	protocol.MethodRelease:       {onCore(Core.Release, nil), byAgent}, // barrier when it names no agent
	protocol.MethodStats:         {onCore(stats, nil), barrier},
	protocol.MethodShutdown:      {(*Server).shutdown, barrier},
	protocol.MethodExit:          {(*Server).exitNotification, barrier},
}

// onCore makes the handler of a core method: decode the params into P (a
// wrong JSON type is invalid params naming the field), run check on the raw
// params when given (what decoding cannot see, such as an absent key), then
// call the session's core.
func onCore[P, R any](call func(Core, context.Context, P) (R, error), check func(*json.RawMessage) error) handler {
	return func(s *Server, ctx context.Context, raw *json.RawMessage) (any, error) {
		var p P
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(raw); err != nil {
				return nil, err
			}
		}
		core, err := s.session()
		if err != nil {
			return nil, err
		}
		return call(core, ctx, p)
	}
}

// syncNonNil keeps "blocks" an array on the wire whatever the core returns.
func syncNonNil(c Core, ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error) {
	res, err := c.Sync(ctx, p)
	if err == nil && res.Blocks == nil {
		res.Blocks = []protocol.BlockView{}
	}
	return res, err
}

func stats(c Core, _ context.Context, _ struct{}) (protocol.StatsResult, error) {
	return c.Stats(), nil
}

// requireText refuses a snapshot source without "text" (absent or null):
// the server checks what the tool showed against the source, so a missing
// text would make every such block invalid without a word. "" is a valid
// text (an empty file or range). Events need no text. A decoded string
// cannot tell absent from "", so this looks at the raw params.
func requireText(raw *json.RawMessage) error {
	if raw == nil {
		return nil
	}
	var p struct {
		Kind    protocol.Kind                `json:"kind"`
		Sources []map[string]json.RawMessage `json:"sources"`
	}
	if json.Unmarshal(*raw, &p) != nil || p.Kind == protocol.Event {
		return nil // decodeParams already accepted it; nothing more to learn
	}
	for i, src := range p.Sources {
		if t, ok := src["text"]; !ok || string(t) == "null" {
			return invalidField(fmt.Sprintf("sources[%d].text", i), "required: the lines as the tool showed them, joined by \"\\n\" (\"\" for empty content)")
		}
	}
	return nil
}

// shutdown stops watching and refuses further work; the process stays until
// exit (or the end of input).
func (s *Server) shutdown(context.Context, *json.RawMessage) (any, error) {
	s.mu.Lock()
	core := s.core
	s.core, s.state = nil, stateShutdown
	s.mu.Unlock()
	if core != nil {
		if err := core.Close(); err != nil {
			s.log.Warn("close session", "error", err)
		}
	}
	return nil, nil
}

// exitNotification ends the process: status 0 after shutdown, else 1.
func (s *Server) exitNotification(context.Context, *json.RawMessage) (any, error) {
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
