package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/tokens"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// concordBin is the real concord binary: $CONCORD_BIN, or built once from
// ./cmd/concord for this test process.
func concordBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CONCORD_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "concord-bench-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "concord")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/concord-ctx/concord/cmd/concord")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = errors.New("go build ./cmd/concord: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	counterOnce sync.Once
	counter     *tokens.Counter
)

func sharedCounter(t *testing.T) *tokens.Counter {
	counterOnce.Do(func() {
		var err error
		counter, err = tokens.New()
		if err != nil {
			t.Fatal(err)
		}
	})
	return counter
}

func run(t *testing.T, ts []tasks.Task, modes ...string) map[string]ModeResult {
	t.Helper()
	cfg := Config{Modes: modes, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t)}
	for _, m := range modes {
		if m == ModeConcord {
			cfg.ConcordBin = concordBin(t)
		}
	}
	return runModes(t, cfg, hot(ts))
}

// runModes runs one workload and returns its results by mode; a task that
// failed fails the test.
func runModes(t *testing.T, cfg Config, wls []Workload) map[string]ModeResult {
	t.Helper()
	rep, err := Run(context.Background(), cfg, wls)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ModeResult{}
	for _, m := range rep.Workloads[0].Modes {
		for _, r := range m.Tasks {
			if r.Error != "" {
				t.Fatalf("%s %s: %s", m.Mode, r.ID, r.Error)
			}
		}
		out[m.Mode] = m
	}
	return out
}

func hot(ts []tasks.Task) []Workload { return []Workload{{Name: "hotpot", Tasks: ts}} }

func anyOutput(r TaskResult, tool, substr string) bool {
	for _, s := range r.Trace {
		for _, c := range s.Calls {
			if (tool == "" || c.Tool == tool) && strings.Contains(c.Output, substr) {
				return true
			}
		}
	}
	return false
}

func seenRestore(r TaskResult) bool {
	for _, x := range r.Restores {
		if x.Seen {
			return true
		}
	}
	return false
}

// The mechanics each mode guarantees with the scripted reader.
func TestModesMechanics(t *testing.T) {
	ts := tasks.Synthetic(3, 12)
	res := run(t, ts, AllModes...)
	naive, alert, diff, conc, oracle := res[ModeNaive], res[ModeAlert], res[ModeDiff], res[ModeConcord], res[ModeOracle]

	for i := range ts {
		n, a, d, c, o := naive.Tasks[i], alert.Tasks[i], diff.Tasks[i], conc.Tasks[i], oracle.Tasks[i]
		// Oracle: no race, the evidence is true, the reader recovers.
		if len(o.Restores) != 0 || !o.Recovered {
			t.Errorf("%s oracle: restores %v, recovered %v", o.ID, o.Restores, o.Recovered)
		}
		// Naive: the agent saw the mutation, nothing told it otherwise, it
		// answers from the stale evidence.
		if !seenRestore(n) || n.Recovered || n.Answer == agent.Unknown {
			t.Errorf("%s naive: seen restore %v, recovered %v, answer %q", n.ID, seenRestore(n), n.Recovered, n.Answer)
		}
		// Alert: an alert reached the agent, it re-read and recovered.
		if !anyOutput(a, "", "[alert]") || a.Reads <= n.Reads || !a.Recovered {
			t.Errorf("%s alert: alert seen %v, reads %d vs naive %d, recovered %v", a.ID, anyOutput(a, "", "[alert]"), a.Reads, n.Reads, a.Recovered)
		}
		// Diff: the answer was blocked, a diff showed the original, recovered
		// with extra model calls.
		if !anyOutput(d, "answer", "[blocked]") || !anyOutput(d, "diff", "\n+") || d.Steps <= n.Steps || !d.Recovered {
			t.Errorf("%s diff: steps %d vs naive %d, recovered %v", d.ID, d.Steps, n.Steps, d.Recovered)
		}
		// Concord: the stale tool message was repaired in place before the
		// next model call: no extra calls or reads, recovered.
		patched := false
		for _, s := range c.Trace {
			for _, v := range s.Views {
				patched = patched || v.Status == "patched" || v.Status == "invalid"
			}
		}
		if !patched || c.Steps != n.Steps || c.Reads > a.Reads || !c.Recovered {
			t.Errorf("%s concord: repaired %v, steps %d vs naive %d, recovered %v", c.ID, patched, c.Steps, n.Steps, c.Recovered)
		}
		// Append-only histories keep each prompt a prefix of the next up to
		// the assistant primer; Concord's rewrite of an old message breaks it.
		for _, r := range []TaskResult{n, a, d, o} {
			for k := 1; k < len(r.Trace); k++ {
				if r.Trace[k].ReusedTokens < r.Trace[k-1].PromptTokens-4 {
					t.Errorf("%s: step %d reuses %d of the previous %d tokens in an append-only history", r.ID, k+1, r.Trace[k].ReusedTokens, r.Trace[k-1].PromptTokens)
				}
			}
		}
	}
	sum := func(m ModeResult) Summary { return m.Summary }
	if sum(oracle).Recovered != len(ts) || sum(naive).Recovered != 0 || sum(alert).Recovered != len(ts) || sum(diff).Recovered != len(ts) || sum(conc).Recovered != len(ts) {
		t.Errorf("recovered: naive %d alert %d diff %d concord %d oracle %d of %d",
			sum(naive).Recovered, sum(alert).Recovered, sum(diff).Recovered, sum(conc).Recovered, sum(oracle).Recovered, len(ts))
	}
	if sum(conc).TotalTokens >= sum(diff).TotalTokens || sum(conc).TotalTokens >= sum(alert).TotalTokens {
		t.Errorf("concord tokens %d, diff %d, alert %d: the in-place repair must cost less than extra calls",
			sum(conc).TotalTokens, sum(diff).TotalTokens, sum(alert).TotalTokens)
	}
	if sum(conc).ReusePercent >= sum(naive).ReusePercent {
		t.Errorf("concord prefix reuse %.1f%% >= naive %.1f%%: a rewrite must show as lost cache", sum(conc).ReusePercent, sum(naive).ReusePercent)
	}
}

// Runs are deterministic, whatever the parallelism.
func TestDeterministic(t *testing.T) {
	ts := tasks.Synthetic(5, 6)
	c := sharedCounter(t)
	var sums []Summary
	for _, par := range []int{1, 3} {
		rep, err := Run(context.Background(), Config{Modes: []string{ModeNaive, ModeDiff}, Agent: agent.Scripted{}, Parallel: par, Counter: c}, hot(ts))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rep.Workloads[0].Modes {
			sums = append(sums, m.Summary)
		}
	}
	if sums[0] != sums[2] || sums[1] != sums[3] {
		t.Fatalf("summaries differ between runs: %+v vs %+v", sums[:2], sums[2:])
	}
}

func TestRunRejects(t *testing.T) {
	ts := tasks.Synthetic(1, 1)
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Modes: []string{"naive"}}, "no agent"},
		{Config{Modes: []string{"fast"}, Agent: agent.Scripted{}}, "unknown mode"},
	}
	for _, tc := range cases {
		_, err := Run(context.Background(), tc.cfg, hot(ts))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
	// A concord binary that is not there fails the task runs, not the process.
	rep, err := Run(context.Background(), Config{Modes: []string{"concord"}, Agent: agent.Scripted{}, ConcordBin: filepath.Join(t.TempDir(), "nope"), Counter: sharedCounter(t)}, hot(ts))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Workloads[0].Modes[0].Summary.Errors != 1 || rep.Workloads[0].Modes[0].Summary.Recovered != 0 {
		t.Fatalf("summary %+v", rep.Workloads[0].Modes[0].Summary)
	}
}

// The in-process server is the subprocess's twin: same views, same numbers.
func TestInProcessMatchesSubprocess(t *testing.T) {
	ts := tasks.Synthetic(6, 4)
	var sums []Summary
	for _, bin := range []string{concordBin(t), ""} {
		rep, err := Run(context.Background(), Config{Modes: []string{ModeConcord}, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t), ConcordBin: bin}, hot(ts))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Workloads[0].Modes[0].Tasks {
			if r.Error != "" {
				t.Fatalf("bin %q: %s: %s", bin, r.ID, r.Error)
			}
		}
		sums = append(sums, rep.Workloads[0].Modes[0].Summary)
	}
	// The same repairs: every task recovered under both readers, the same
	// calls and about the same tokens (a file saved in place can be seen
	// empty by a hint in one run and not in the other, which turns a patch
	// into a re-read notice; hence no exact equality).
	for _, s := range sums {
		if s.Recovered != len(ts) || s.RecoveredFirst != len(ts) {
			t.Fatalf("subprocess %+v\nin-process %+v", sums[0], sums[1])
		}
	}
	if a, b := float64(sums[0].CountedPrompt), float64(sums[1].CountedPrompt); b < 0.95*a || b > 1.05*a {
		t.Fatalf("prompt tokens: subprocess %v, in-process %v", a, b)
	}
}

func TestOutputs(t *testing.T) {
	ts := tasks.Synthetic(2, 4)
	rep, err := Run(context.Background(), Config{Modes: []string{ModeNaive, ModeOracle}, Agent: agent.Scripted{}, Counter: sharedCounter(t)}, hot(ts))
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, l := range strings.Split(table.String(), "\n") {
		if strings.HasPrefix(l, "| naive |") || strings.HasPrefix(l, "| oracle |") {
			rows++
		}
	}
	if rows != 2 || !strings.Contains(table.String(), "| oracle | 4/4 |") {
		t.Fatalf("table:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Workloads[0].Modes) != 2 || len(back.Workloads[0].Modes[0].Tasks) != 4 || len(back.Workloads[0].Modes[0].Tasks[0].Trace) == 0 {
		t.Fatalf("JSON lost the traces: %+v", back.Workloads[0].Modes)
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	circles := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			for _, a := range se.Attr {
				if a.Name.Local == "fill-opacity" { // data points; legend markers have none
					circles++
				}
			}
		}
	}
	if circles != 2 {
		t.Fatalf("%d points in the chart, want one per mode", circles)
	}
}

// TestProgress: plain lines at each tenth of the work (not of the runs),
// and the bar, both by the work's share.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false)
	// 100 quick runs are half the work, then 4 long ones the other half.
	for i := 1; i <= 100; i++ {
		p.Update(i, 104, 0.5*float64(i)/100)
	}
	for i := 1; i <= 4; i++ {
		p.Update(100+i, 104, 0.5+0.125*float64(i))
	}
	want := []string{
		"bench: 20/104 task runs done (10% of the work)", "bench: 40/104 task runs done (20% of the work)",
		"bench: 60/104 task runs done (30% of the work)", "bench: 80/104 task runs done (40% of the work)",
		"bench: 100/104 task runs done (50% of the work)", "bench: 101/104 task runs done (62% of the work)",
		"bench: 102/104 task runs done (75% of the work)",
		"bench: 103/104 task runs done (87% of the work)", "bench: 104/104 task runs done (100% of the work)",
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); !slices.Equal(got, want) {
		t.Fatalf("plain progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	buf.Reset()
	p = NewProgress(&buf, true)
	p.Update(5, 10, 0.5)
	p.Update(10, 10, 1)
	if !strings.Contains(buf.String(), "\r[###############...............]  50% (5/10 task runs)") || !strings.HasSuffix(buf.String(), "100% (10/10 task runs)\n") {
		t.Fatalf("terminal progress: %q", buf.String())
	}
}

// TestTaskWork: a long session weighs what its prompts cost, against a
// question task's (the default's: 30-60 calls against about 6).
func TestTaskWork(t *testing.T) {
	sessions := tasks.Long(1, 10)
	q := taskWork(tasks.Synthetic(1, 1)[0])
	for _, s := range sessions {
		if r := taskWork(s) / q; r < 20 || r > 110 {
			t.Errorf("session %s (%d calls): %.0fx a question's work", s.ID, len(s.Plan), r)
		}
	}
}

func BenchmarkEpisodeScripted(b *testing.B) {
	ts := tasks.Synthetic(1, 1)
	c, err := tokens.New()
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Modes: []string{ModeDiff}, Agent: agent.Scripted{}, Counter: c, MaxSteps: 20, Parallel: 1}
	root := b.TempDir()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if r := runEpisode(context.Background(), cfg, filepath.Join(root, strconv.Itoa(i)), ModeDiff, ts[0]); r.Error != "" {
			b.Fatal(r.Error)
		}
	}
}

// With local edits suppressed, Concord replaces the stale read by a notice;
// the reader re-reads the lines it names and recovers.
func TestConcordNoticePath(t *testing.T) {
	ts := tasks.Synthetic(4, 6)
	cfg := Config{Modes: []string{ModeNaive, ModeConcord}, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t),
		ConcordBin: concordBin(t), ConcordLocal: "suppress"}
	rep, err := Run(context.Background(), cfg, hot(ts))
	if err != nil {
		t.Fatal(err)
	}
	naive, conc := rep.Workloads[0].Modes[0], rep.Workloads[0].Modes[1]
	for i, c := range conc.Tasks {
		if c.Error != "" {
			t.Fatalf("%s: %s", c.ID, c.Error)
		}
		notice := false
		for _, s := range c.Trace {
			for _, v := range s.Views {
				notice = notice || v.Status == "invalid"
			}
		}
		if !notice || !anyOutput(c, "read_file", ": ") || c.Reads <= naive.Tasks[i].Reads || !c.Recovered {
			t.Errorf("%s: notice %v, reads %d vs naive %d, recovered %v", c.ID, notice, c.Reads, naive.Tasks[i].Reads, c.Recovered)
		}
	}
}

// inflight: a write that lands after a sync reaches the model on the very
// next call, through Concord; naive never shows it.
func TestInFlightNextCallShowsIt(t *testing.T) {
	base := tasks.Synthetic(8, 4)
	ts, err := tasks.ForWorkload("inflight", base, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Modes: []string{ModeNaive, ModeConcord}, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t)}
	rep, err := Run(context.Background(), cfg, []Workload{{Name: "inflight", Tasks: ts}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Workloads[0].Modes {
		for _, r := range m.Tasks {
			at := -1
			for i, s := range r.Trace {
				if len(s.InFlight) > 0 {
					at = i
				}
			}
			if at < 0 || at+1 >= len(r.Trace) {
				t.Fatalf("%s %s: no in-flight write with a call after it", m.Mode, r.ID)
			}
			repaired := false
			for _, v := range r.Trace[at+1].Views {
				repaired = repaired || v.Status == "patched" || v.Status == "invalid"
			}
			if m.Mode == ModeConcord && (!repaired || !r.Recovered || !r.RecoveredFirst) {
				t.Errorf("concord %s: next call repaired %v, recovered %v/%v", r.ID, repaired, r.Recovered, r.RecoveredFirst)
			}
			if m.Mode == ModeNaive && r.Recovered {
				t.Errorf("naive %s recovered: the in-flight write was not stale", r.ID)
			}
		}
	}
}

// The long workload's sessions: 30-60 calls, about 31% edit snippets and
// 14% views, outside writes on files the agent has seen, and the edits
// rewrite earlier messages through Concord (the cost the cache issue
// starts from).
func TestLongSessions(t *testing.T) {
	ts := tasks.Long(1, 20)
	edits, views, calls := 0, 0, 0
	for _, x := range ts {
		if n := len(x.Plan); n < 30 || n > 62 {
			t.Errorf("%s: %d planned calls", x.ID, n)
		}
		for _, a := range x.Plan {
			calls++
			switch a.Tool {
			case "edit":
				edits++
			case "read_file":
				views++
			}
		}
	}
	if e, v := float64(edits)/float64(calls), float64(views)/float64(calls); e < 0.27 || e > 0.35 || v < 0.11 || v > 0.18 {
		t.Errorf("edit share %.2f, view share %.2f", e, v)
	}
	run := func(placement string) map[string]Summary {
		cfg := Config{Modes: []string{ModeNaive, ModeConcord, ModeOracle}, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t),
			MaxSteps: 100, Price: Prices["anthropic"], ConcordPlacement: placement}
		ms := map[string]Summary{}
		for mode, m := range runModes(t, cfg, []Workload{{Name: "long", Tasks: ts[:3]}}) {
			ms[mode] = m.Summary
		}
		if ms[ModeNaive].Recovered != 0 || ms[ModeConcord].Recovered != 3 || ms[ModeConcord].RecoveredFirst != 3 || ms[ModeOracle].Recovered != 3 {
			t.Errorf("%s: recovered: naive %d, concord %d/%d, oracle %d of 3", placement, ms[ModeNaive].Recovered, ms[ModeConcord].Recovered, ms[ModeConcord].RecoveredFirst, ms[ModeOracle].Recovered)
		}
		return ms
	}
	in := run("inplace")
	if in[ModeNaive].RewriteCalls != 0 || in[ModeConcord].RewritePercent < 10 || in[ModeConcord].CostVsNaive <= 1.2 {
		t.Errorf("in-place repair: naive rewrites %d, concord %.1f%% of calls, cost %.2fx naive", in[ModeNaive].RewriteCalls, in[ModeConcord].RewritePercent, in[ModeConcord].CostVsNaive)
	}
	// The default: errata at the tail keep the prefix, at about naive's cost.
	auto := run("")
	if auto[ModeConcord].RewriteCalls != 0 || auto[ModeConcord].CostVsNaive >= in[ModeConcord].CostVsNaive || auto[ModeConcord].CostVsNaive > 1.1 {
		t.Errorf("auto: concord rewrites %d calls, cost %.3fx naive (in place %.3fx)", auto[ModeConcord].RewriteCalls, auto[ModeConcord].CostVsNaive, in[ModeConcord].CostVsNaive)
	}
}

// The price models split a call as documented.
func TestCallCost(t *testing.T) {
	cases := []struct {
		price       string
		n, shared   int
		read, write int
		cost        float64
	}{
		{"none", 5000, 4000, 0, 0, 5000},
		{"anthropic", 900, 800, 0, 0, 900},          // below the minimum: plain input
		{"anthropic", 5000, 4000, 4000, 1000, 1650}, // 4000*0.1 + 1000*1.25
		{"anthropic", 5000, 500, 0, 5000, 6250},     // shared prefix too short to read
		{"openai", 5000, 4000, 3968, 1032, 3016},    // 1024 + 23*128 read at 0.5
	}
	for _, tc := range cases {
		r, w, c := Prices[tc.price].CallCost(tc.n, tc.shared)
		if r != tc.read || w != tc.write || c != tc.cost {
			t.Errorf("%s(%d, %d) = %d, %d, %g; want %d, %d, %g", tc.price, tc.n, tc.shared, r, w, c, tc.read, tc.write, tc.cost)
		}
	}
}

// Paths reach the model as /workspace/...: neither the temp directory nor
// the mode's name shows in any prompt, and token counts do not depend on
// where the workspaces live.
func TestNeutralPaths(t *testing.T) {
	ts := tasks.Synthetic(4, 3)
	short := t.TempDir()
	long := filepath.Join(t.TempDir(), "a-much-longer-temporary-directory-name")
	if err := os.Mkdir(long, 0o755); err != nil {
		t.Fatal(err)
	}
	var sums []Summary
	for _, dir := range []string{short, long} {
		cfg := Config{Modes: []string{ModeConcord}, Agent: agent.Scripted{}, Parallel: 2, Counter: sharedCounter(t), TempDir: dir, ConcordLocal: "suppress", ConcordWatch: "hooks"}
		rep, err := Run(context.Background(), cfg, hot(ts))
		if err != nil {
			t.Fatal(err)
		}
		m := rep.Workloads[0].Modes[0]
		notices := 0
		for _, r := range m.Tasks {
			for _, s := range r.Trace {
				for _, v := range s.Views {
					if strings.Contains(v.Shown, dir) || strings.Contains(v.Shown, "/"+ModeConcord+"/") {
						t.Fatalf("%s: a view names the real path: %q", r.ID, v.Shown)
					}
					if strings.Contains(v.Shown, "[concord] /workspace/") {
						notices++
					}
				}
			}
		}
		if notices == 0 {
			t.Fatalf("no notice with a /workspace path under %s", dir)
		}
		sums = append(sums, m.Summary)
	}
	if sums[0].CountedPrompt != sums[1].CountedPrompt {
		t.Fatalf("prompt tokens depend on the temp directory: %d vs %d", sums[0].CountedPrompt, sums[1].CountedPrompt)
	}
}

// TestVerdict: the verdict line is computed from the rows: grouped by what
// each mode recovered against oracle, cheapest first, with its cost against
// oracle's (naive's without an oracle row); a real model has no first-copy
// reader.
func TestVerdict(t *testing.T) {
	row := func(mode string, rec, first int, vsOracle, vsNaive float64, firstCopy bool) ModeResult {
		return ModeResult{Mode: mode, Summary: Summary{Tasks: 4, Recovered: rec, RecoveredFirst: first, CostVsOracle: vsOracle, CostVsNaive: vsNaive, FirstCopy: firstCopy}}
	}
	tests := []struct {
		name  string
		modes []ModeResult
		want  string
	}{
		{"scripted, every group", []ModeResult{
			row("naive", 0, 0, 1, 1, true), row("resend", 3, 3, 1.2, 1.2, true), row("reminder", 4, 0, 1.05, 1.05, true),
			row("concord", 4, 4, 1.02, 1.02, true), row("alert", 4, 0, 1.4, 1.4, true), row("oracle", 4, 4, 1, 1, true)},
			"w: oracle 4/4; recovered (input cost vs oracle) all of it under both readers: concord 1.020x; " +
				"all under the latest-copy reader only: reminder 1.050x (first-copy 0/4), alert 1.400x (first-copy 0/4); " +
				"some: resend 1.200x (3/4, first-copy 3/4); none: naive."},
		{"oracle recovered less than all: the bar is oracle's", []ModeResult{
			row("concord", 3, 3, 1.01, 1.01, true), row("oracle", 3, 3, 1, 1, true)},
			"w: oracle 3/4; recovered (input cost vs oracle) all of it under both readers: concord 1.010x."},
		{"no oracle: against naive and every task", []ModeResult{
			row("naive", 0, 0, 0, 1, true), row("concord", 4, 4, 0, 1.03, true)},
			"w: no oracle row: costs against naive, of 4 tasks; recovered (input cost vs naive) all of it under both readers: concord 1.030x; none: naive."},
		{"a real model: no first-copy reader", []ModeResult{
			row("naive", 0, 0, 0.99, 1, false), row("concord", 4, 0, 1.02, 1.03, false), row("oracle", 4, 0, 1, 1.01, false)},
			"w: oracle 4/4; recovered (input cost vs oracle) all of it: concord 1.020x; none: naive."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (WorkloadReport{Name: "w", Tasks: 4, Modes: tt.modes}).verdict(); got != tt.want {
				t.Errorf("verdict:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
