package rpc

import (
	"context"
	"encoding/json"

	"github.com/concord-ctx/concord/runtime"
)

func (s *Server) sourceChanged(ctx context.Context, raw *json.RawMessage) (any, error) {
	var p SourceChangedParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := core.SourceChanged(ctx, runtime.Change{URI: p.URI, Agent: p.Agent, Text: p.Text, Version: p.Version})
	if err != nil {
		return nil, err
	}
	return SourceChangedResult{Blocks: nonNil(res.Blocks)}, nil
}

func (p *SourceChangedParams) validate() error {
	return validateURI("uri", p.URI)
}
