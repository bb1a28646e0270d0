package rpc

import (
	"context"
	"encoding/json"
)

// shutdown stops watching and refuses further work; the process stays until
// exit (or the end of input).
func (s *Server) shutdown(ctx context.Context, raw *json.RawMessage) (any, error) {
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
func (s *Server) exitNotification(ctx context.Context, raw *json.RawMessage) (any, error) {
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
