// Package bench is ConcordBench: the race benchmark. Each task's paragraphs
// become a workspace; the race controller plants mutated evidence and
// restores the originals out of band right after the agent has seen them;
// each mode handles the stale observation its own way (naive, alert, diff,
// concord through the real `concord serve`, oracle without a race), and the
// run reports recover counts, steps, reads, tokens and prompt-cache reuse.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/race"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/tokens"
)

// Modes, in table order.
const (
	ModeNaive   = "naive"
	ModeAlert   = "alert"
	ModeDiff    = "diff"
	ModeConcord = "concord"
	ModeOracle  = "oracle"
)

// AllModes lists every mode in table order.
var AllModes = []string{ModeNaive, ModeAlert, ModeDiff, ModeConcord, ModeOracle}

// Config is one benchmark run.
type Config struct {
	Modes []string
	Agent agent.Agent
	// ConcordBin is the concord binary the concord mode drives as a
	// subprocess; "" runs the same server in this process.
	ConcordBin string
	// ConcordLocal is the policy for local edits sent in initialize
	// (patch, refresh, annotate, suppress; "" keeps the server's default).
	ConcordLocal string
	MaxSteps     int
	Parallel     int
	Counter      *tokens.Counter
	TempDir      string    // parent of the workspaces ("" = os.TempDir)
	ServerLog    io.Writer // concord serve's stderr (nil: discarded)
	// Progress, when set, is called after each finished task.
	Progress func(done, total int)
}

// Report is the whole run.
type Report struct {
	Agent    string       `json:"agent"`
	Encoding string       `json:"encoding"`
	Tasks    int          `json:"tasks"`
	Skipped  []tasks.Skip `json:"skipped,omitempty"`
	Modes    []ModeResult `json:"modes"`
}

// ModeResult is one mode over every task.
type ModeResult struct {
	Mode    string       `json:"mode"`
	Summary Summary      `json:"summary"`
	Tasks   []TaskResult `json:"tasks"`
}

// Summary are the table's numbers for one mode.
type Summary struct {
	Tasks            int     `json:"tasks"`
	Recovered        int     `json:"recovered"`
	Raced            int     `json:"raced"` // tasks where the agent saw a mutation
	Errors           int     `json:"errors"`
	AvgSteps         float64 `json:"avg_steps"`
	ReadsPerTask     float64 `json:"reads_per_task"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TotalTokens      int     `json:"total_tokens"`
	TokensPerTask    float64 `json:"tokens_per_task"`
	CountedPrompt    int     `json:"counted_prompt_tokens"` // our BPE count, the base of reuse
	ReusedTokens     int     `json:"reused_prefix_tokens"`
	ReusePercent     float64 `json:"reused_prefix_percent"`
	ProviderCached   int     `json:"provider_cached_tokens,omitempty"`
}

// Run plays every mode on every task.
func Run(ctx context.Context, cfg Config, ts []tasks.Task) (*Report, error) {
	if cfg.Agent == nil {
		return nil, fmt.Errorf("bench: no agent")
	}
	if cfg.Counter == nil {
		c, err := tokens.New()
		if err != nil {
			return nil, err
		}
		cfg.Counter = c
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 20
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	for _, m := range cfg.Modes {
		if !validMode(m) {
			return nil, fmt.Errorf("bench: unknown mode %q (want one of %v)", m, AllModes)
		}
	}
	root, err := makeRoot(cfg.TempDir)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	for _, m := range cfg.Modes {
		if err := os.Mkdir(filepath.Join(root, m), 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}

	rep := &Report{Agent: cfg.Agent.Name(), Encoding: tokens.Encoding, Tasks: len(ts)}
	results := make([][]TaskResult, len(cfg.Modes))
	for i := range results {
		results[i] = make([]TaskResult, len(ts))
	}
	type job struct{ mi, ti int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, total := 0, len(ts)*len(cfg.Modes)
	for w := 0; w < cfg.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				dir := filepath.Join(root, cfg.Modes[j.mi], fmt.Sprintf("ws-%06d", j.ti))
				r := runEpisode(ctx, cfg, dir, cfg.Modes[j.mi], ts[j.ti])
				mu.Lock()
				results[j.mi][j.ti] = r
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for mi := range cfg.Modes {
		for ti := range ts {
			select {
			case jobs <- job{mi, ti}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	for mi, m := range cfg.Modes {
		rep.Modes = append(rep.Modes, ModeResult{Mode: m, Summary: summarize(results[mi]), Tasks: results[mi]})
	}
	return rep, nil
}

// makeRoot creates the run's directory. Its random part is fixed-width
// decimal: cl100k_base splits digits into groups of three, so paths quoted
// in Concord's notices cost the same tokens on every run.
func makeRoot(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	var err error
	for range 100 {
		p := filepath.Join(parent, fmt.Sprintf("concord-bench-%010d", rand.Uint32()))
		if err = os.Mkdir(p, 0o700); err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", err
}

func validMode(m string) bool {
	for _, x := range AllModes {
		if x == m {
			return true
		}
	}
	return false
}

func summarize(rs []TaskResult) Summary {
	s := Summary{Tasks: len(rs)}
	steps, reads := 0, 0
	for _, r := range rs {
		if r.Recovered {
			s.Recovered++
		}
		if r.Error != "" {
			s.Errors++
		}
		for _, x := range r.Restores {
			if x.Seen {
				s.Raced++
				break
			}
		}
		steps += r.Steps
		reads += r.Reads
		s.PromptTokens += r.PromptTokens
		s.CompletionTokens += r.CompletionTokens
		s.CountedPrompt += r.CountedPrompt
		s.ReusedTokens += r.ReusedTokens
		s.ProviderCached += r.ProviderCached
	}
	s.TotalTokens = s.PromptTokens + s.CompletionTokens
	if n := float64(len(rs)); n > 0 {
		s.AvgSteps = float64(steps) / n
		s.ReadsPerTask = float64(reads) / n
		s.TokensPerTask = float64(s.TotalTokens) / n
	}
	if s.CountedPrompt > 0 {
		s.ReusePercent = 100 * float64(s.ReusedTokens) / float64(s.CountedPrompt)
	}
	return s
}

// Restores are recorded per task; re-exported for the JSON trace.
type Restore = race.Restore
