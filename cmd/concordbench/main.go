// Command concordbench is ConcordBench, the race benchmark of Concord: it
// runs the workloads with the scripted reader (or a real model) in every
// mode and prints one Markdown table per workload. It is its own command so
// the plugin binary every agent session launches (`concord serve`) does not
// carry the bench, its tokenizer tables or its HTTP client.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run maps runBench's error to the exit status: 0 ok (or --help), 1
// failure, 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := runBench(ctx, args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "concordbench: %v\nRun 'concordbench --help' for usage.\n", ue.err)
		return 2
	}
	fmt.Fprintf(stderr, "concordbench: %v\n", err)
	return 1
}

// usageError is a command-line mistake: status 2, with a hint.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

const benchUsage = `Usage: concordbench [flags]

ConcordBench, the race benchmark: files change under an agent after it has
read them, and every mode runs on the same tasks: naive, resend (Aider),
mask (OpenHands), reminder (Claude Code), alert, diff, concord and oracle.
Prints one Markdown table per workload (one row per mode) on stdout, then
a legend of the columns and a one-line verdict per workload (who recovered
what oracle recovers, at what input cost against oracle's); the rules and
sources are in docs/bench.md.

Workloads: hotpot, repeated, edits, concurrent and inflight are HotpotQA-
format questions with different race schedules (by default synthetic tasks
from --seed, no download; --tasks reads HotpotQA JSON or JSONL, --n picks
the first N after a stable sort by SHA-256 of id and question, 0 = all);
long is --sessions coding sessions of 30-60 calls.

The concord mode runs the Concord server in this process by default,
wired exactly as 'concord serve' wires it; --concord-bin drives a real
'concord serve' subprocess instead. Input cost is priced with a prompt
cache (--price).

Examples:
  # the embedded default, deterministic, no network (from a fresh clone):
  go run ./cmd/concordbench
  # HotpotQA's dev set (JSON or JSONL), every example, one workload:
  concordbench --workload hotpot --tasks hotpot_dev_distractor_v1.json --n 0
  # the long coding sessions at OpenAI's cache prices:
  concordbench --workload long --sessions 20 --price openai
  # every task's trace as JSON, and a chart:
  concordbench --out bench.json --svg bench.svg
  # drive a built concord binary as a subprocess, as a binding does:
  go build -o bin/concord ./cmd/concord && concordbench --concord-bin bin/concord
  # a real model on any OpenAI-compatible endpoint:
  # (the question workloads: long follows the scripted plan)
  OPENAI_API_KEY=... concordbench --agent openai --model gpt-4o-mini --n 10

Flags:
`

// benchOptions are the flags of concordbench.
type benchOptions struct {
	agent, baseURL, model, keyEnv      string
	temperature                        float64
	taskFile                           string
	n                                  int
	seed                               uint64
	modes                              string
	maxSteps, parallel                 int
	out, svg, concordBin, concordLocal string
	serverLog                          string
	quiet                              bool
	workloads, price, placement        string
	concordPrice                       bool
	concordDerived                     string
	sessions                           int
}

// benchFlags defines the flags.
func benchFlags() (*pflag.FlagSet, *benchOptions) {
	o := &benchOptions{}
	fs := pflag.NewFlagSet("concordbench", pflag.ContinueOnError)
	fs.StringVar(&o.agent, "agent", "scripted", "agent: scripted (deterministic, no model) or openai (any OpenAI-compatible endpoint)")
	fs.StringVar(&o.baseURL, "base-url", "https://api.openai.com/v1", "openai agent: chat-completions base URL")
	fs.StringVar(&o.model, "model", "gpt-4o-mini", "openai agent: model name")
	fs.StringVar(&o.keyEnv, "api-key-env", "OPENAI_API_KEY", "openai agent: environment variable holding the API key")
	fs.Float64Var(&o.temperature, "temperature", 0, "openai agent: sampling temperature")
	fs.StringVar(&o.taskFile, "tasks", "", "HotpotQA JSON or JSONL file (default: embedded synthetic tasks)")
	fs.IntVar(&o.n, "n", 40, "number of tasks (first N after a stable sort by hash of id and question; 0 = all)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the synthetic tasks")
	fs.StringVar(&o.modes, "modes", strings.Join(bench.AllModes, ","), "comma-separated modes to run")
	fs.StringVar(&o.workloads, "workload", strings.Join(tasks.DefaultWorkloads, ","), "comma-separated workloads: "+strings.Join(tasks.Workloads, ", ")+" (all = every one)")
	fs.IntVar(&o.sessions, "sessions", 10, "long workload: number of coding sessions")
	fs.StringVar(&o.price, "price", "anthropic", "prompt-cache price model of the input cost: "+bench.PriceNames())
	fs.StringVar(&o.placement, "placement", "", "concord mode: repair placement sent in initialize (inplace, tail, auto; default: the server's)")
	fs.BoolVar(&o.concordPrice, "concord-price", false, "concord mode: send the --price model in initialize (cache.price), so auto also rewrites a sent message in place where that costs less than its erratum")
	fs.IntVar(&o.maxSteps, "max-steps", 20, "model calls per task before giving up")
	fs.IntVar(&o.parallel, "parallel", 2, "tasks run at once")
	fs.StringVar(&o.out, "out", "", "write every task's trace and metrics as JSON to this file")
	fs.StringVar(&o.svg, "svg", "", "write one chart per workload (SVG: tasks recovered against input cost) to this file")
	fs.StringVar(&o.concordBin, "concord-bin", "", "drive this concord binary (concord serve) as a subprocess in the concord mode (default: the same server in this process)")
	fs.StringVar(&o.concordLocal, "concord-local", "", "concord mode: policy for local edits (patch, refresh, annotate, suppress; default: the server's)")
	fs.StringVar(&o.concordDerived, "concord-derived", "", "concord mode: which changes correct a compaction summary, sent as policy derived (range, mentioned; default: the server's)")
	fs.StringVar(&o.serverLog, "server-log", "", "append the concord server's log (the subprocess's stderr) to this file")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	return fs, o
}

// runBench is the whole command.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o, err := parseBenchArgs(args, stderr)
	if err != nil {
		return err
	}
	cfg, wlNames, err := benchConfig(fs, o, stderr)
	if err != nil {
		return err
	}
	ts, skipped, err := loadTasks(o)
	if err != nil {
		return err
	}
	wls, err := buildWorkloads(wlNames, ts, skipped, o)
	if err != nil {
		return err
	}

	cfg.ConcordBin = o.concordBin
	if o.serverLog != "" {
		f, err := os.OpenFile(o.serverLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("server log: %w", err)
		}
		defer f.Close()
		cfg.ServerLog = f
	}
	if !o.quiet {
		cfg.Progress = bench.NewProgress(stderr, writerIsTerminal(stderr)).Update
	}

	if cfg.MaxSteps == 20 && slices.Contains(wlNames, "long") {
		cfg.MaxSteps = 100 // a session plans up to 60 calls, plus re-reads
	}
	rep, err := bench.Run(ctx, cfg, wls)
	if err != nil {
		return err
	}
	return writeReport(rep, o, stdout, stderr)
}

// parseBenchArgs parses the command line; --help is pflag.ErrHelp, any
// other mistake a usageError.
func parseBenchArgs(args []string, stderr io.Writer) (*pflag.FlagSet, *benchOptions, error) {
	fs, o := benchFlags()
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, nil, usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	return fs, o, nil
}

// benchConfig checks the options and turns them into the bench's
// configuration and the workloads to run, in --workload order.
func benchConfig(fs *pflag.FlagSet, o *benchOptions, stderr io.Writer) (bench.Config, []string, error) {
	cfg := bench.Config{MaxSteps: o.maxSteps, Parallel: o.parallel, ConcordLocal: o.concordLocal, ConcordDerived: o.concordDerived, ConcordPlacement: o.placement,
		ConcordPrice: o.concordPrice}
	price, err := bench.LookupPrice(o.price)
	if err != nil {
		return cfg, nil, usageError{fmt.Errorf("--price: %w", err)}
	}
	cfg.Price = price
	wlNames, err := workloadNames(o.workloads, o.agent, fs.Changed("workload"))
	if err != nil {
		return cfg, nil, err
	}
	for _, m := range strings.Split(o.modes, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.Modes = append(cfg.Modes, m)
		}
	}
	if len(cfg.Modes) == 0 {
		return cfg, nil, usageError{errors.New("--modes is empty")}
	}
	cfg.Agent, err = newAgent(o, stderr)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, wlNames, nil
}

// workloadNames reads --workload ("all" is every workload). Long needs the
// scripted agent: without it, long leaves the default list and is an
// error when asked for.
func workloadNames(list, agentName string, asked bool) ([]string, error) {
	var names []string
	for _, w := range strings.Split(list, ",") {
		switch w = strings.TrimSpace(w); w {
		case "":
		case "all":
			names = append(names, tasks.Workloads...)
		default:
			if !slices.Contains(tasks.Workloads, w) {
				return nil, usageError{fmt.Errorf("--workload %q: want one of %s", w, strings.Join(tasks.Workloads, ", "))}
			}
			names = append(names, w)
		}
	}
	if len(names) == 0 {
		return nil, usageError{errors.New("--workload is empty")}
	}
	if agentName != "scripted" && slices.Contains(names, "long") {
		// A session's outside writes follow the scripted plan's steps.
		if asked {
			return nil, usageError{errors.New("--workload long needs --agent scripted (its outside writes follow the scripted plan)")}
		}
		names = slices.DeleteFunc(names, func(w string) bool { return w == "long" })
	}
	return names, nil
}

// newAgent is the --agent.
func newAgent(o *benchOptions, stderr io.Writer) (agent.Agent, error) {
	switch o.agent {
	case "scripted":
		return agent.Scripted{}, nil
	case "openai":
		key := os.Getenv(o.keyEnv)
		if key == "" {
			fmt.Fprintf(stderr, "concordbench: %s is not set; calling %s without an API key\n", o.keyEnv, o.baseURL)
		}
		return &agent.OpenAI{BaseURL: o.baseURL, Model: o.model, APIKey: key, Temperature: o.temperature, Retries: 4}, nil
	}
	return nil, usageError{fmt.Errorf("--agent %q: want scripted or openai", o.agent)}
}

// loadTasks reads --tasks (the examples it skipped too), or generates the
// synthetic tasks from --seed; either way the first --n of them.
func loadTasks(o *benchOptions) ([]tasks.Task, []tasks.Skip, error) {
	if o.taskFile == "" {
		count := o.n
		if count <= 0 {
			count = 40
		}
		return tasks.Subset(tasks.Synthetic(o.seed, count), o.n), nil, nil
	}
	ts, skipped, err := tasks.LoadHotpot(o.taskFile)
	if err != nil {
		return nil, nil, err
	}
	if len(ts) == 0 {
		return nil, nil, fmt.Errorf("%s: no usable tasks (%d skipped)", o.taskFile, len(skipped))
	}
	return tasks.Subset(ts, o.n), skipped, nil
}

// buildWorkloads makes each named workload's tasks; the skipped examples
// belong to the question workloads, not to long.
func buildWorkloads(names []string, ts []tasks.Task, skipped []tasks.Skip, o *benchOptions) ([]bench.Workload, error) {
	var wls []bench.Workload
	for _, name := range names {
		wt, err := tasks.ForWorkload(name, ts, o.seed, o.sessions)
		if err != nil {
			return nil, err
		}
		wl := bench.Workload{Name: name, Tasks: wt}
		if name != "long" {
			wl.Skipped = skipped
		}
		wls = append(wls, wl)
	}
	return wls, nil
}

// writeReport prints the tables and writes --out and --svg. Failed runs
// must not pass for a result: the first cause goes to stderr, and a run
// where nothing worked fails the command.
func writeReport(rep *bench.Report, o *benchOptions, stdout, stderr io.Writer) error {
	if err := rep.WriteTable(stdout); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if o.out != "" {
		if err := writeFile(o.out, rep.WriteJSON); err != nil {
			return err
		}
	}
	if o.svg != "" {
		if err := writeFile(o.svg, rep.WriteSVG); err != nil {
			return err
		}
	}
	if failed, runs, first := rep.Errors(); failed > 0 {
		if failed == runs {
			return fmt.Errorf("every task run failed (%d); the first: %s", runs, first)
		}
		fmt.Fprintf(stderr, "concordbench: %d of %d task runs failed; the first: %s\n", failed, runs, first)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writerIsTerminal: a character device (a tty), not a pipe or a file.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
