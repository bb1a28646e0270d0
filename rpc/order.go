package rpc

import "sync"

// scheduler orders requests as docs/protocol.md ("Ordering") says: requests
// of one agent run one at a time in arrival order, requests of different
// agents run concurrently (a slow read for one agent does not hold up
// another agent's sync), and a barrier (initialize, sourceChanged, stats,
// shutdown, exit, release by block id) runs after every earlier request and
// before every later one, so a reported write is applied before any sync
// that arrives after it. enter is called on the read loop, in arrival order.
type scheduler struct {
	mu      sync.Mutex
	barrier chan struct{}            // closed when the latest barrier is done
	epoch   *sync.WaitGroup          // requests entered since the latest barrier
	lanes   map[string]chan struct{} // per agent: closed when its latest request is done
}

func (q *scheduler) init() {
	q.barrier = make(chan struct{})
	close(q.barrier)
	q.epoch = new(sync.WaitGroup)
	q.lanes = map[string]chan struct{}{}
}

// enter registers a request and returns wait (block until it may run) and
// done (call once it finished).
func (q *scheduler) enter(lane string, isBarrier bool) (wait, done func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	mine := make(chan struct{})
	prev := q.barrier
	if isBarrier {
		epoch := q.epoch
		q.barrier, q.epoch, q.lanes = mine, new(sync.WaitGroup), map[string]chan struct{}{}
		return func() { <-prev; epoch.Wait() }, func() { close(mine) }
	}
	before := q.lanes[lane]
	q.lanes[lane] = mine
	epoch := q.epoch
	epoch.Add(1)
	wait = func() {
		<-prev
		if before != nil {
			<-before
		}
	}
	return wait, func() { close(mine); epoch.Done() }
}
