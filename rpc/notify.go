package rpc

import (
	"context"
	"sort"
	"sync"

	"github.com/concord-ctx/concord/protocol"
)

// notifier turns the core's change callbacks into blocksChanged
// notifications. The callback may come from a watcher goroutine holding
// core locks, so it only records the agents; one goroutine writes, and
// agents that change again before the client read the previous hint are
// coalesced into one notification.
type notifier struct {
	mu      sync.Mutex
	pending map[string]bool
	gen     uint64
	kick    chan struct{}
}

func (n *notifier) init() {
	n.pending = map[string]bool{}
	n.kick = make(chan struct{}, 1)
}

// add records agents whose blocks changed. It never blocks.
func (n *notifier) add(agents []string) {
	n.hold(agents)
	n.wake()
}

// hold records agents without waking the writer.
func (n *notifier) hold(agents []string) {
	n.mu.Lock()
	for _, a := range agents {
		n.pending[a] = true
	}
	n.mu.Unlock()
}

// wake makes the writer look at the pending agents.
func (n *notifier) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *notifier) run(ctx context.Context, s *Server) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		n.mu.Lock()
		agents := make([]string, 0, len(n.pending))
		for a := range n.pending {
			agents = append(agents, a)
		}
		clear(n.pending)
		n.gen++
		gen := n.gen
		n.mu.Unlock()
		if len(agents) == 0 {
			continue
		}
		sort.Strings(agents)
		s.mu.Lock()
		st, core, conn := s.state, s.core, s.conn
		s.mu.Unlock()
		if st == stateNew {
			// The session is being built (a watcher may report while
			// NewSession runs): keep the hint for when it runs, as
			// initialize wakes the writer then.
			n.hold(agents)
			continue
		}
		if st != stateRunning {
			continue
		}
		// The core's projection generation, when it has one, is the same
		// counter sync returns.
		if g, ok := core.(interface{ Generation() uint64 }); ok {
			gen = g.Generation()
		}
		if err := conn.Notify(ctx, protocol.MethodBlocksChanged, protocol.BlocksChangedParams{Agents: agents, Generation: gen}); err != nil {
			s.log.Debug("blocksChanged not sent", "error", err)
		}
	}
}
