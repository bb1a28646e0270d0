package runtime

import (
	"sort"
	"sync"
)

// hintQueue holds the sources waiting for the background verify worker.
// Adding never blocks (adapters call it from their event loops); repeated
// hints for one source coalesce, and a forced read wins over a stamp check.
type hintQueue struct {
	mu      sync.Mutex
	pending map[string]bool // source id -> force a read
	kick    chan struct{}   // one pending wake-up at most
}

func newHintQueue() *hintQueue {
	return &hintQueue{pending: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// add queues ids; force reads even when the stamp did not move (a hint: the
// hash decides).
func (q *hintQueue) add(ids []string, force bool) {
	if len(ids) == 0 {
		return
	}
	q.mu.Lock()
	for _, id := range ids {
		q.pending[id] = q.pending[id] || force
	}
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// hint is one queued source.
type hint struct {
	id    string
	force bool
}

// take empties the queue, in id order (a deterministic verify order).
func (q *hintQueue) take() []hint {
	q.mu.Lock()
	out := make([]hint, 0, len(q.pending))
	for id, force := range q.pending {
		out = append(out, hint{id, force})
	}
	clear(q.pending)
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
