package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/concord-ctx/concord/locator"
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
		if json.Unmarshal(v.ProtocolVersion, &n) == nil && n != ProtocolVersion {
			return nil, newError(CodeUnsupportedProto,
				fmt.Sprintf("unsupported protocol version %d: this server (%s %s) speaks version %d; use a client and server of the same protocol version",
					n, s.cfg.Name, s.cfg.Version, ProtocolVersion),
				map[string]any{"supported": []int{ProtocolVersion}})
		}
	}
	var p InitializeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	base := locator.DefaultParams()
	if s.cfg.Locator != nil {
		base = *s.cfg.Locator
	}
	cfg := SessionConfig{
		Roots:   p.Roots,
		Watch:   p.Watch,
		Policy:  mergePolicy(s.cfg.Policy, p.Policy),
		Locator: p.Locator.apply(base),
		Notify:  s.notes.add,
		Fetch:   s.readSource,
		Logger:  s.log,
	}
	if cfg.Watch == "" {
		cfg.Watch = WatchAuto
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
	return InitializeResult{
		ProtocolVersion: ProtocolVersion,
		ServerInfo:      Info{Name: s.cfg.Name, Version: s.cfg.Version},
		Capabilities: Capabilities{
			Watch:         watch,
			Schemes:       []string{"file", "*"},
			Framing:       s.cfg.Framing,
			Notifications: []string{MethodBlocksChanged},
			Requests:      []string{MethodReadSource},
			MaxMessage:    s.cfg.MaxMessage,
		},
	}, nil
}

func (p *InitializeParams) validate() error {
	if p.ProtocolVersion == 0 {
		return invalidField("protocolVersion", "required (this server speaks %d)", ProtocolVersion)
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
	case "", WatchAuto, WatchFsnotify, WatchPoll, WatchHooks:
	default:
		return invalidField("watch", "must be auto, fsnotify, poll or hooks, not %q", p.Watch)
	}
	if p.Policy != nil {
		if err := p.Policy.validate("policy"); err != nil {
			return err
		}
	}
	if l := p.Locator; l != nil {
		switch {
		case l.MinSimilarity != nil && (*l.MinSimilarity < 0 || *l.MinSimilarity > 1):
			return invalidField("locator.minSimilarity", "must be between 0 and 1")
		case l.SubstitutionRatio != nil && (*l.SubstitutionRatio < 0 || *l.SubstitutionRatio > 1):
			return invalidField("locator.substitutionRatio", "must be between 0 and 1")
		case l.MinSubstitutions != nil && *l.MinSubstitutions < 0:
			return invalidField("locator.minSubstitutions", "must be >= 0")
		case l.ContextLines != nil && *l.ContextLines < 0:
			return invalidField("locator.contextLines", "must be >= 0")
		}
	}
	return nil
}

func (l *LocatorParams) apply(p locator.Params) locator.Params {
	if l == nil {
		return p
	}
	if l.MinSimilarity != nil {
		p.MinSimilarity = *l.MinSimilarity
	}
	if l.SubstitutionRatio != nil {
		p.SubstitutionRatio = *l.SubstitutionRatio
	}
	if l.MinSubstitutions != nil {
		p.MinSubstitutions = *l.MinSubstitutions
	}
	if l.ContextLines != nil {
		p.ContextLines = *l.ContextLines
	}
	return p
}

func (c *PolicyConfig) validate(field string) error {
	if err := c.Global.validate(field + ".global"); err != nil {
		return err
	}
	for _, layer := range []struct {
		name string
		m    map[string]Policy
	}{{"byType", c.ByType}, {"bySource", c.BySource}} {
		for k, p := range layer.m {
			if err := p.validate(field + "." + layer.name + "." + k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Policy) validate(field string) error {
	for _, f := range []struct{ name, v string }{{"local", p.Local}, {"drift", p.Drift}} {
		switch runtime.Action(f.v) {
		case "", runtime.Patch, runtime.Refresh, runtime.Annotate, runtime.Suppress:
		default:
			return invalidField(field+"."+f.name, "must be patch, refresh, annotate or suppress, not %q", f.v)
		}
	}
	if p.MaxAgeTurns != nil && *p.MaxAgeTurns < 0 {
		return invalidField(field+".maxAgeTurns", "must be >= 0")
	}
	return nil
}

func (p *Policy) core() *runtime.Policy {
	if p == nil {
		return nil
	}
	return &runtime.Policy{Local: runtime.Action(p.Local), Drift: runtime.Action(p.Drift), MaxAgeTurns: p.MaxAgeTurns}
}

// mergePolicy lays the client's policy over the operator's, field by field
// within each layer and key.
func mergePolicy(base runtime.PolicyConfig, over *PolicyConfig) runtime.PolicyConfig {
	out := runtime.PolicyConfig{Global: base.Global, ByType: cloneLayer(base.ByType), BySource: cloneLayer(base.BySource)}
	if over == nil {
		return out
	}
	out.Global = mergeOne(out.Global, over.Global)
	for k, p := range over.ByType {
		if out.ByType == nil {
			out.ByType = map[string]runtime.Policy{}
		}
		out.ByType[k] = mergeOne(out.ByType[k], p)
	}
	for k, p := range over.BySource {
		if out.BySource == nil {
			out.BySource = map[string]runtime.Policy{}
		}
		out.BySource[k] = mergeOne(out.BySource[k], p)
	}
	return out
}

func mergeOne(base runtime.Policy, over Policy) runtime.Policy {
	if over.Local != "" {
		base.Local = runtime.Action(over.Local)
	}
	if over.Drift != "" {
		base.Drift = runtime.Action(over.Drift)
	}
	if over.MaxAgeTurns != nil {
		n := *over.MaxAgeTurns
		base.MaxAgeTurns = &n
	}
	return base
}

func cloneLayer(m map[string]runtime.Policy) map[string]runtime.Policy {
	if m == nil {
		return nil
	}
	out := make(map[string]runtime.Policy, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ParsePolicy reads a policy file (the JSON of initialize's "policy") and
// validates it, naming the offending field on error.
func ParsePolicy(data []byte) (runtime.PolicyConfig, error) {
	var p PolicyConfig
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
			return runtime.PolicyConfig{}, invalidField(field, "%s", fe.Reason)
		}
		return runtime.PolicyConfig{}, err
	}
	if err := p.validate("policy"); err != nil {
		return runtime.PolicyConfig{}, err
	}
	return mergePolicy(runtime.PolicyConfig{}, &p), nil
}
