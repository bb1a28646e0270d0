package rpc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

func (s *Server) initialize(ctx context.Context, raw *json.RawMessage) (any, error) {
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
	if err := validateInitialize(&p); err != nil {
		return nil, err
	}
	cfg := SessionConfig{
		Roots:   p.Roots,
		Watch:   p.Watch,
		Policy:  runtime.MergePolicy(s.cfg.Policy, p.Policy),
		Locator: p.Locator,
		Notify:  s.notes.add,
		Fetch:   s.readSource,
		Logger:  s.log,

		Placement: p.Placement,
		CacheTTL:  runtime.CacheTTL(p.Cache),
		Feed:      p.Feed,
	}
	if p.Cache != nil {
		cfg.Price = p.Cache.Price
	}
	if cfg.Watch == "" {
		cfg.Watch = protocol.WatchAuto
	}
	if p.ClientInfo != nil {
		cfg.Client = *p.ClientInfo
	}
	core, watch, err := s.cfg.NewSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.core, s.state = core, stateRunning
	s.mu.Unlock()
	s.log.Info("session started", "client", cfg.Client.Name, "clientVersion", cfg.Client.Version, "roots", cfg.Roots, "watch", watch)
	return protocol.InitializeResult{
		ProtocolVersion: protocol.Version,
		ServerInfo:      protocol.Info{Name: s.cfg.Name, Version: s.cfg.Version},
		Capabilities: protocol.Capabilities{
			Watch:         watch,
			Schemes:       []string{"file", "*"},
			Framing:       s.cfg.Framing,
			Notifications: []string{protocol.MethodBlocksChanged},
			Requests:      []string{protocol.MethodReadSource},
			MaxMessage:    s.cfg.MaxMessage,
			Placement:     cmp.Or(p.Placement, runtime.DefaultPlacement),
		},
	}, nil
}

// validateInitialize checks what the server itself uses (version, roots,
// watch); the policy and the locator thresholds are the core's to check.
func validateInitialize(p *protocol.InitializeParams) error {
	if p.ProtocolVersion == 0 {
		return invalidField("protocolVersion", "required (this server speaks %d)", protocol.Version)
	}
	if p.Roots == nil {
		return invalidField("roots", "required: the workspace roots, absolute paths ([] for keyed sources only)")
	}
	for i, r := range p.Roots {
		if !filepath.IsAbs(r) {
			return invalidField(fmt.Sprintf("roots[%d]", i), "must be an absolute path, not %q", r)
		}
	}
	switch p.Watch {
	case "", protocol.WatchAuto, protocol.WatchFsnotify, protocol.WatchPoll, protocol.WatchHooks:
	default:
		return invalidField("watch", "must be auto, fsnotify, poll or hooks, not %q", p.Watch)
	}
	if err := runtime.ValidatePlacement(p.Placement, p.Cache); err != nil {
		return err
	}
	if err := runtime.ValidatePolicyConfig("policy", p.Policy); err != nil {
		return err
	}
	return runtime.ValidateLocator("locator", p.Locator)
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
	if err := runtime.ValidatePolicyConfig("policy", &p); err != nil {
		return protocol.PolicyConfig{}, err
	}
	return runtime.MergePolicy(protocol.PolicyConfig{}, &p), nil
}
