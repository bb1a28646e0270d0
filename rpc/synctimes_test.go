package rpc

import (
	"math"
	"testing"
	"time"
)

// TestBucketsHoldTheirValues: every duration falls in the bucket whose
// range holds it, buckets follow one another without gap or overlap, and a
// bucket is never wider than an eighth of its lower bound past 16 µs (the
// quantiles' precision).
func TestBucketsHoldTheirValues(t *testing.T) {
	next := uint64(0)
	for i := 0; i < subBuckets*52; i++ {
		lo, w := bucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d µs, want %d (the previous one's end)", i, lo, next)
		}
		if lo >= 2*subBuckets && w*subBuckets > lo {
			t.Errorf("bucket %d: %d µs wide at %d µs, more than an eighth", i, w, lo)
		}
		for _, us := range []uint64{lo, lo + w/2, lo + w - 1} {
			if got := bucketOf(us); got != i {
				t.Fatalf("%d µs: bucket %d, want %d [%d, %d)", us, got, i, lo, lo+w)
			}
		}
		next = lo + w
	}
}

func TestHistogramQuantiles(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name     string
		add      []time.Duration
		p50, p99 float64 // ms, each to within a bucket (1/8)
	}{
		{"none", nil, 0, 0},
		{"one", []time.Duration{ms(3)}, 3, 3},
		{"exact below 16 µs", []time.Duration{5 * time.Microsecond, 7 * time.Microsecond, 9 * time.Microsecond}, 0.007, 0.009},
		{"1..100 ms", func() (d []time.Duration) {
			for i := 1; i <= 100; i++ {
				d = append(d, ms(i))
			}
			return d
		}(), 50, 99},
		{"a slow tail", func() (d []time.Duration) {
			for i := range 1000 {
				d = append(d, ms(2))
				if i%50 == 0 {
					d = append(d, time.Second) // 2% of the calls
				}
			}
			return d
		}(), 2, 1000},
		{"negative clock steps count as 0", []time.Duration{-time.Millisecond}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h histogram
			for _, d := range tc.add {
				h.add(d)
			}
			for _, q := range []struct {
				q    float64
				want float64
			}{{0.5, tc.p50}, {0.99, tc.p99}} {
				got := h.quantileMs(q.q)
				if math.Abs(got-q.want) > q.want/subBuckets {
					t.Errorf("q%.2f = %v ms, want %v ms within 1/%d", q.q, got, q.want, subBuckets)
				}
			}
		})
	}
}

func TestSyncTimesSnapshot(t *testing.T) {
	var st syncTimes
	if s := st.snapshot(); s != nil {
		t.Fatalf("before any sync: %+v, want nil (absent on the wire)", s)
	}
	st.add(time.Millisecond, 4*time.Millisecond, 100)
	st.add(2*time.Millisecond, 8*time.Millisecond, 50)
	s := st.snapshot()
	if s.Count != 2 || s.Bytes != 150 {
		t.Errorf("count %d bytes %d, want 2 and 150", s.Count, s.Bytes)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"handled p50", s.HandledP50Ms, 1}, {"handled p99", s.HandledP99Ms, 2}, {"answered p50", s.AnsweredP50Ms, 4}, {"answered p99", s.AnsweredP99Ms, 8}} {
		if math.Abs(f.got-f.want) > f.want/subBuckets {
			t.Errorf("%s = %v ms, want %v ms within 1/%d", f.name, f.got, f.want, subBuckets)
		}
	}
}
