// Package bench is ConcordBench: the race benchmark. Each task's files
// become a workspace; files change out of band after the agent has seen
// them (the race controller's schedules, a session's outside writes); each
// mode handles the stale observation its own way (naive; resend, mask and
// reminder after Aider, OpenHands and Claude Code; alert; diff; concord
// through the Concord server; oracle without a race), and the run reports,
// per workload, recovery under two readers, steps, reads, tokens, prefix
// reuse, rewritten calls and the cache-priced input cost.
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
	ModeNaive    = "naive"
	ModeResend   = "resend"   // Aider: the files in the chat re-sent each call
	ModeMask     = "mask"     // OpenHands: old observations masked
	ModeReminder = "reminder" // Claude Code: a reminder with the changed lines
	ModeAlert    = "alert"
	ModeDiff     = "diff"
	ModeConcord  = "concord"
	ModeOracle   = "oracle"
)

// AllModes lists every mode in table order.
var AllModes = []string{ModeNaive, ModeResend, ModeMask, ModeReminder, ModeAlert, ModeDiff, ModeConcord, ModeOracle}

// MaskWindow is OpenHands' default attention window of the
// ObservationMaskingCondenser: observations among the last 100 events stay.
const MaskWindow = 100

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
	// ConcordDerived is the policy's derived rule sent in initialize
	// (range, mentioned; "" keeps the server's default).
	ConcordDerived string
	// ConcordPlacement is the repair placement (inplace, tail, auto) sent
	// in initialize when set.
	ConcordPlacement string
	// ConcordPrice sends Price to the server as initialize's cache.price:
	// auto then also rewrites a sent message in place where that is
	// cheaper than its erratum (syncs report promptChars).
	ConcordPrice bool
	// ConcordWatch is initialize's watch mode ("" = auto, as the bindings
	// use). hooks leaves change detection to the syncs' checks, without
	// fsnotify hints: deterministic, for tests.
	ConcordWatch string
	// Price is the prompt-cache price model (zero: none).
	Price     Price
	MaxSteps  int
	Parallel  int
	Counter   *tokens.Counter
	TempDir   string    // parent of the workspaces ("" = os.TempDir)
	ServerLog io.Writer // concord serve's stderr (nil: discarded)
	// Progress, when set, is called after each finished task run: runs done
	// of total, and the share of the work done (taskWork), which moves
	// evenly in time where the count does not (a long session costs as much
	// as about sixty questions).
	Progress func(done, total int, work float64)
}

// Workload is one workload's tasks.
type Workload struct {
	Name    string
	Tasks   []tasks.Task
	Skipped []tasks.Skip
}

// Report is the whole run.
type Report struct {
	Agent     string           `json:"agent"`
	Encoding  string           `json:"encoding"`
	Price     Price            `json:"price"`
	Workloads []WorkloadReport `json:"workloads"`
}

// WorkloadReport is one workload, every mode.
type WorkloadReport struct {
	Name    string       `json:"name"`
	Tasks   int          `json:"tasks"`
	Skipped []tasks.Skip `json:"skipped,omitempty"`
	Modes   []ModeResult `json:"modes"`
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
	RecoveredFirst   int     `json:"recovered_first_copy"`
	Raced            int     `json:"raced"` // tasks where the agent saw a write it had to catch
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
	RewriteCalls     int     `json:"rewrite_calls"`
	RewritePercent   float64 `json:"rewrite_calls_percent"` // of the calls after a task's first
	CacheRead        int     `json:"cache_read_tokens"`
	CacheWrite       int     `json:"cache_write_tokens"`
	CacheHitPercent  float64 `json:"cache_hit_percent"`
	InputCost        float64 `json:"input_cost"` // plain-input-token units, cache priced
	CostPerTask      float64 `json:"input_cost_per_task"`
	CostVsNaive      float64 `json:"cost_vs_naive,omitempty"`
	CostVsOracle     float64 `json:"cost_vs_oracle,omitempty"`
	FirstCopy        bool    `json:"first_copy_reader"` // RecoveredFirst is measured (scripted agent)
	ProviderCached   int     `json:"provider_cached_tokens,omitempty"`
	FirstError       string  `json:"first_error,omitempty"`
	// Corrections about compaction summaries (the compaction workload):
	// delivered, true but unneeded, missed, false (TaskResult's).
	DerivedCorrections int `json:"derived_corrections,omitempty"`
	DerivedUnneeded    int `json:"derived_unneeded,omitempty"`
	DerivedMissed      int `json:"derived_missed,omitempty"`
	DerivedFalse       int `json:"derived_false,omitempty"`
}

// withDefaults checks cfg and fills in what it leaves out.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Agent == nil {
		return cfg, fmt.Errorf("bench: no agent")
	}
	if cfg.Counter == nil {
		c, err := tokens.New()
		if err != nil {
			return cfg, err
		}
		cfg.Counter = c
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 20
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.Price.Name == "" {
		cfg.Price = Prices["none"]
	}
	for _, m := range cfg.Modes {
		if !validMode(m) {
			return cfg, fmt.Errorf("bench: unknown mode %q (want one of %v)", m, AllModes)
		}
	}
	return cfg, nil
}

// Run plays every mode on every task of every workload.
func Run(ctx context.Context, cfg Config, wls []Workload) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
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

	rep := &Report{Agent: cfg.Agent.Name(), Encoding: tokens.Encoding, Price: cfg.Price}
	results := make([][][]TaskResult, len(wls))
	total := 0
	totalWork := 0.0
	for wi, wl := range wls {
		results[wi] = make([][]TaskResult, len(cfg.Modes))
		for mi := range cfg.Modes {
			results[wi][mi] = make([]TaskResult, len(wl.Tasks))
			total += len(wl.Tasks)
			for _, t := range wl.Tasks {
				totalWork += taskWork(t)
			}
		}
	}
	type job struct{ wi, mi, ti int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, work := 0, 0.0
	for w := 0; w < cfg.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				dir := filepath.Join(root, cfg.Modes[j.mi], fmt.Sprintf("%s-%06d", wls[j.wi].Name, j.ti))
				r := runEpisode(ctx, cfg, dir, cfg.Modes[j.mi], wls[j.wi].Tasks[j.ti])
				mu.Lock()
				results[j.wi][j.mi][j.ti] = r
				done++
				work += taskWork(wls[j.wi].Tasks[j.ti])
				if cfg.Progress != nil {
					cfg.Progress(done, total, work/totalWork)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for wi, wl := range wls {
		for mi := range cfg.Modes {
			for ti := range wl.Tasks {
				select {
				case jobs <- job{wi, mi, ti}:
				case <-ctx.Done():
					break feed
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	_, scripted := cfg.Agent.(agent.Scripted)
	for wi, wl := range wls {
		wr := WorkloadReport{Name: wl.Name, Tasks: len(wl.Tasks), Skipped: wl.Skipped}
		for mi, m := range cfg.Modes {
			s := summarize(results[wi][mi])
			s.FirstCopy = scripted
			wr.Modes = append(wr.Modes, ModeResult{Mode: m, Summary: s, Tasks: results[wi][mi]})
		}
		relativeCosts(wr.Modes)
		rep.Workloads = append(rep.Workloads, wr)
	}
	return rep, nil
}

// questionCalls is about how many model calls a question task takes (the
// tables' avg steps: 6 to 8).
const questionCalls = 6

// taskWork is a task run's share of the bench's time, for progress: the
// tokens counted and priced grow with the prompt, which grows with each
// call, so about calls squared (a long session of 45 calls sends about 60
// times a question's prompt tokens, and 45²/6² is 56).
func taskWork(t tasks.Task) float64 {
	calls := float64(questionCalls)
	if len(t.Plan) > 0 {
		calls = float64(len(t.Plan))
	}
	return calls * calls
}

// relativeCosts fills each mode's cost against naive's and oracle's.
func relativeCosts(ms []ModeResult) {
	var naive, oracle float64
	for _, m := range ms {
		switch m.Mode {
		case ModeNaive:
			naive = m.Summary.InputCost
		case ModeOracle:
			oracle = m.Summary.InputCost
		}
	}
	for i := range ms {
		if naive > 0 {
			ms[i].Summary.CostVsNaive = ms[i].Summary.InputCost / naive
		}
		if oracle > 0 {
			ms[i].Summary.CostVsOracle = ms[i].Summary.InputCost / oracle
		}
	}
}

// Errors counts the failed task runs of a report and returns the first.
func (r *Report) Errors() (failed, runs int, first string) {
	for _, w := range r.Workloads {
		for _, m := range w.Modes {
			for _, t := range m.Tasks {
				runs++
				if t.Error != "" {
					failed++
					if first == "" {
						first = fmt.Sprintf("%s/%s %s: %s", w.Name, m.Mode, t.ID, t.Error)
					}
				}
			}
		}
	}
	return failed, runs, first
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
	steps, reads, later := 0, 0, 0
	for _, r := range rs {
		if r.Recovered {
			s.Recovered++
		}
		if r.RecoveredFirst {
			s.RecoveredFirst++
		}
		if r.Error != "" {
			s.Errors++
			if s.FirstError == "" {
				s.FirstError = r.ID + ": " + r.Error
			}
		}
		s.RewriteCalls += r.RewriteCalls
		s.DerivedCorrections += r.DerivedCorrections
		s.DerivedUnneeded += r.DerivedUnneeded
		s.DerivedMissed += r.DerivedMissed
		s.DerivedFalse += r.DerivedFalse
		later += max(r.Steps-1, 0)
		s.CacheRead += r.CacheRead
		s.CacheWrite += r.CacheWrite
		s.InputCost += r.InputCost
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
		s.CacheHitPercent = 100 * float64(s.CacheRead) / float64(s.CountedPrompt)
	}
	if later > 0 {
		s.RewritePercent = 100 * float64(s.RewriteCalls) / float64(later)
	}
	if n := float64(len(rs)); n > 0 {
		s.CostPerTask = s.InputCost / n
	}
	return s
}

// Restores are recorded per task; re-exported for the JSON trace.
type Restore = race.Restore
