package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress reports finished task runs on a writer: a redrawn bar on a
// terminal, otherwise a plain line at most every few seconds (and at the end).
type Progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	mu       sync.Mutex
	last     time.Time
}

// NewProgress returns a reporter; terminal selects the redrawn bar.
func NewProgress(w io.Writer, terminal bool) *Progress {
	return &Progress{w: w, terminal: terminal, every: 5 * time.Second}
}

// Update is a Config.Progress callback.
func (p *Progress) Update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if total <= 0 {
		return
	}
	if p.terminal {
		const width = 30
		n := done * width / total
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d task runs", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
		if done == total {
			fmt.Fprintln(p.w)
		}
		return
	}
	now := time.Now()
	if done == total || now.Sub(p.last) >= p.every {
		p.last = now
		fmt.Fprintf(p.w, "bench: %d/%d task runs done\n", done, total)
	}
}
