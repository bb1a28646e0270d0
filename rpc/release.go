package rpc

import (
	"context"
	"encoding/json"

	"github.com/concord-ctx/concord/runtime"
)

func (s *Server) release(ctx context.Context, raw *json.RawMessage) (any, error) {
	var p ReleaseParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := core.Release(ctx, runtime.ReleaseRequest{Blocks: p.Blocks, Agent: p.Agent, Anchors: p.Anchors})
	if err != nil {
		return nil, err
	}
	return ReleaseResult{Released: nonNil(res.Released)}, nil
}

func (p *ReleaseParams) validate() error {
	if len(p.Blocks) == 0 && len(p.Anchors) == 0 {
		return invalidField("blocks", "required: blocks or anchors (with agent)")
	}
	if len(p.Anchors) > 0 && p.Agent == "" {
		return invalidField("agent", "required with anchors")
	}
	return nil
}
