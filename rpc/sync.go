package rpc

import (
	"context"
	"encoding/json"

	"github.com/concord-ctx/concord/runtime"
)

func (s *Server) sync(ctx context.Context, raw *json.RawMessage) (any, error) {
	var p SyncParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := core.Sync(ctx, runtime.SyncRequest{Agent: p.Agent, Turn: p.Turn, Full: p.Full})
	if err != nil {
		return nil, err
	}
	out := SyncResult{Generation: res.Generation, Full: res.Full, Blocks: make([]BlockView, 0, len(res.Blocks))}
	for _, b := range res.Blocks {
		v := BlockView{Block: b.Block, Anchor: b.Anchor, Agent: b.Agent, Turn: b.Turn, Status: string(b.Status),
			Notice: b.Notice, SupersededBy: b.SupersededBy, Reason: b.Reason}
		for _, src := range b.Sources {
			v.Sources = append(v.Sources, Source{URI: src.URI, Range: wireRange(src.Range), Text: src.Text, Version: src.Version})
		}
		out.Blocks = append(out.Blocks, v)
	}
	return out, nil
}

func (p *SyncParams) validate() error {
	if p.Agent == "" {
		return invalidField("agent", "required")
	}
	if p.Turn < 0 {
		return invalidField("turn", "must be >= 0")
	}
	return nil
}

func wireRange(r *runtime.Range) *Range {
	if r == nil {
		return nil
	}
	return &Range{Start: r.Start, End: r.End}
}
