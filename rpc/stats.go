package rpc

import (
	"context"
	"encoding/json"
)

func (s *Server) stats(ctx context.Context, raw *json.RawMessage) (any, error) {
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	st := core.Stats()
	out := StatsResult{Blocks: map[string]int{}, Reconciliations: map[string]int{},
		VerifyPasses: st.VerifyPasses, Sources: st.Sources, Agents: st.Agents, BytesHeld: st.BytesHeld}
	for k, n := range st.Blocks {
		out.Blocks[string(k)] = n
	}
	for k, n := range st.Reconciliations {
		out.Reconciliations[k] = n
	}
	return out, nil
}
