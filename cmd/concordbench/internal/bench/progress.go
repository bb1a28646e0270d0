package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress reports finished task runs on a writer: a redrawn bar on a
// terminal, otherwise a plain line at each tenth of the work and at most
// every few seconds between (and at the end). Both go by the share of the
// work done, not the count of runs: the long sessions, a few runs at the
// end, take about half the time.
type Progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	mu       sync.Mutex
	last     time.Time
	tenth    int // the last tenth of the work reported
}

// NewProgress returns a reporter; terminal selects the redrawn bar.
func NewProgress(w io.Writer, terminal bool) *Progress {
	return &Progress{w: w, terminal: terminal, every: 5 * time.Second, last: time.Now()}
}

// Update is a Config.Progress callback.
func (p *Progress) Update(done, total int, work float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if total <= 0 {
		return
	}
	work = min(max(work, 0), 1)
	if done == total {
		work = 1
	}
	pct := int(work * 100)
	if p.terminal {
		const width = 30
		n := int(work * width)
		fmt.Fprintf(p.w, "\r[%s%s] %3d%% (%d/%d task runs)", strings.Repeat("#", n), strings.Repeat(".", width-n), pct, done, total)
		if done == total {
			fmt.Fprintln(p.w)
		}
		return
	}
	now := time.Now()
	if tenth := int(work * 10); done == total || tenth > p.tenth || now.Sub(p.last) >= p.every {
		p.last, p.tenth = now, tenth
		fmt.Fprintf(p.w, "bench: %d/%d task runs done (%d%% of the work)\n", done, total, pct)
	}
}
