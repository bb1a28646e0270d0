package rpc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

// SessionConfig is what initialize hands NewSession: the client's options,
// validated (protocol.InitializeParams.Validate), with the operator's policy
// laid under initialize's and the watch mode defaulted, passed on as they
// are to the session and its core (runtime.Config.Options); and the
// session's ties back to this connection.
type SessionConfig struct {
	Options protocol.InitializeParams
	// Notify tells the client that the blocks of these agents changed
	// (blocksChanged). It never blocks: hints are coalesced.
	Notify func(agents []string)
	// Fetch asks the client for a keyed source's content (readSource).
	Fetch  func(ctx context.Context, uri string) (runtime.Content, error)
	Logger *slog.Logger
}

// NewSessionFunc builds a session's core for initialize and reports the
// effective watch mode. A *protocol.FieldError (protocol.FieldErrorf, e.g.
// a root that does not exist) becomes invalid params naming the field.
type NewSessionFunc func(ctx context.Context, cfg SessionConfig) (core Core, watch string, err error)

func (s *Server) initialize(ctx context.Context, in *params) (any, error) {
	raw := in.raw
	// The version comes first: a client of another version may send fields
	// this one does not understand, and should learn what to upgrade.
	var v struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	if raw != nil && json.Unmarshal(*raw, &v) == nil && len(v.ProtocolVersion) > 0 && string(v.ProtocolVersion) != "null" {
		var n int
		if json.Unmarshal(v.ProtocolVersion, &n) == nil && n != protocol.Version {
			return nil, newError(protocol.CodeUnsupportedProto,
				fmt.Sprintf("unsupported protocol version %d: this server (%s %s) speaks version %d; use a client and server of the same protocol version",
					n, s.cfg.Name, s.cfg.Version, protocol.Version),
				map[string]any{"supported": []int{protocol.Version}})
		}
	}
	var p protocol.InitializeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	p, err := SessionOptions(p, s.cfg.Policy)
	if err != nil {
		return nil, err
	}
	core, watch, err := s.cfg.NewSession(ctx, SessionConfig{Options: p, Notify: s.notes.add, Fetch: s.readSource, Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.core, s.state = core, stateRunning
	s.mu.Unlock()
	s.notes.wake() // hints held while the session was built
	var client protocol.Info
	if p.ClientInfo != nil {
		client = *p.ClientInfo
	}
	schemes := core.Schemes()
	s.log.Info("session started", "client", client.Name, "clientVersion", client.Version, "roots", p.Roots, "watch", watch)
	return protocol.InitializeResult{
		ProtocolVersion: protocol.Version,
		ServerInfo:      protocol.Info{Name: s.cfg.Name, Version: s.cfg.Version},
		Capabilities: protocol.Capabilities{
			Watch:         watch,
			Schemes:       schemes,
			Framing:       s.cfg.Framing,
			Notifications: []string{protocol.MethodBlocksChanged},
			Requests:      []string{protocol.MethodReadSource},
			MaxMessage:    s.cfg.MaxMessage,
			Placement:     cmp.Or(p.Placement, runtime.DefaultPlacement),
		},
	}, nil
}

// SessionOptions are initialize's params as a session takes them
// (SessionConfig.Options): validated, the operator's policy laid under
// theirs, the watch mode defaulted.
func SessionOptions(p protocol.InitializeParams, operator protocol.PolicyConfig) (protocol.InitializeParams, error) {
	if err := p.Validate(); err != nil {
		return p, err
	}
	policy := runtime.MergePolicy(operator, p.Policy)
	p.Policy = &policy
	if p.Watch == "" {
		p.Watch = protocol.WatchAuto
	}
	return p, nil
}

// ParsePolicy reads a policy file (the JSON of initialize's "policy") and
// validates it, naming the offending field on error.
func ParsePolicy(data []byte) (protocol.PolicyConfig, error) {
	var p protocol.PolicyConfig
	raw := json.RawMessage(data)
	if err := decodeParams(&raw, &p); err != nil {
		// Name fields as validate does ("policy.global.local"); "params"
		// means the file as a whole.
		var fe *fieldError
		if errors.As(err, &fe) {
			field := "policy"
			if fe.Field != "params" {
				field += "." + fe.Field
			}
			return protocol.PolicyConfig{}, invalidField(field, "%s", fe.Reason)
		}
		return protocol.PolicyConfig{}, err
	}
	if err := p.Validate("policy"); err != nil {
		return protocol.PolicyConfig{}, err
	}
	return runtime.MergePolicy(protocol.PolicyConfig{}, &p), nil
}
