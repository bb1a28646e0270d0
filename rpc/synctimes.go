package rpc

import (
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/concord-ctx/concord/protocol"
)

// syncTimes times the syncs a server answered, for stats: from a request's
// admission to its result (handled) and to its reply written (answered),
// and the replies' bytes. Under load the two times differ by the wait for
// the one output pipe, which a client that reads slowly lengthens: the
// figure a client measures is not all the server's work.
type syncTimes struct {
	mu       sync.Mutex
	count    int64
	bytes    int64
	handled  histogram
	answered histogram
}

func (t *syncTimes) add(handled, answered time.Duration, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count++
	t.bytes += int64(n)
	t.handled.add(handled)
	t.answered.add(answered)
}

// snapshot is stats' view; nil before the first sync.
func (t *syncTimes) snapshot() *protocol.SyncTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 {
		return nil
	}
	return &protocol.SyncTimes{Count: t.count, Bytes: t.bytes,
		HandledP50Ms: t.handled.quantileMs(0.5), HandledP99Ms: t.handled.quantileMs(0.99),
		AnsweredP50Ms: t.answered.quantileMs(0.5), AnsweredP99Ms: t.answered.quantileMs(0.99)}
}

// histogram counts durations in buckets of an eighth of an octave of
// microseconds (exact below 16 µs, then each at most 1/8 of its lower
// bound wide): percentiles to within about 6%, in fixed memory however long
// the session runs.
type histogram struct {
	n       int64
	buckets [subBuckets * 64]int64
}

const subBuckets = 8

func (h *histogram) add(d time.Duration) {
	h.n++
	h.buckets[bucketOf(uint64(max(d.Microseconds(), 0)))]++
}

// bucketOf: below 2*subBuckets µs one bucket per µs; above, the octave and
// the 3 bits after the leading one.
func bucketOf(us uint64) int {
	if us < 2*subBuckets {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us is in [2^e, 2^(e+1))
	m := int(us>>(e-3)) & (subBuckets - 1)
	return subBuckets*(e-2) + m
}

// bucketRange is bucket i's lower bound and width, in µs.
func bucketRange(i int) (lo, width uint64) {
	if i < 2*subBuckets {
		return uint64(i), 1
	}
	e, m := i/subBuckets+2, uint64(i%subBuckets)
	return (subBuckets + m) << (e - 3), 1 << (e - 3)
}

// quantileMs is the q-quantile in milliseconds: the middle of the bucket
// that holds it, to the µs.
func (h *histogram) quantileMs(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(h.n))), 1)
	var seen int64
	for i, c := range h.buckets {
		if seen += c; seen >= rank {
			lo, w := bucketRange(i)
			return math.Round(float64(lo)+float64(w-1)/2) / 1000
		}
	}
	return 0 // not reached: the buckets hold n
}
