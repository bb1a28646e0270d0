package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteTable prints one Markdown table per workload, one row per mode.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	for i, wl := range r.Workloads {
		if i > 0 {
			b.WriteString("\n")
		}
		wl.writeTable(&b)
	}
	fmt.Fprintf(&b, "\nagent %s, tokens %s, input cost priced by %s (units: plain input tokens)\n", r.Agent, r.Encoding, r.Price.describe())
	b.WriteString("\n" + legend)
	b.WriteString("\nVerdict: who recovered what oracle (no race) recovers, at what input cost against oracle's:\n")
	for _, wl := range r.Workloads {
		b.WriteString("- " + wl.verdict() + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// legend says what each column of the tables is (docs/bench.md has the rules).
const legend = `Columns (per mode, over the workload's tasks; docs/bench.md has every rule):
- recovered: tasks answered right by the reader that takes the latest copy of each evidence line;
  first-copy reader: by the reader that takes the first copy it saw, unless that copy was repaired
  or marked stale (scripted agent only; a mode that appends the truth below a stale copy fails it).
- raced: tasks where a file the agent had read changed before it answered.
- avg steps: model calls per task; reads/task: file reads per task, re-reads included.
- prompt tok/task, completion tok/task: tokens sent and received per task; total tokens: both, over
  all tasks.
- prefix reuse tok/task, prefix reuse %: prompt tokens each call shares with the previous call's
  prompt (what a prompt cache can keep); rewrite calls %: calls whose prompt rewrote an earlier
  message.
- cache hit %: prompt tokens read from the provider's cache under --price (0 under its minimum
  prompt); input cost/task: every prompt priced with that cache, in plain input tokens.
- vs naive, vs oracle: input cost against naive's (nothing done) and oracle's (no race at all).
`

// verdict is one line on a workload, computed from its rows: which modes
// recovered every task oracle recovered, under both readers or the
// latest-copy one only, which some and which none, each with its input cost
// against oracle's (naive's when oracle did not run).
func (wl WorkloadReport) verdict() string {
	var ref *Summary
	base, baseName := func(s Summary) float64 { return s.CostVsOracle }, "oracle"
	for i := range wl.Modes {
		if wl.Modes[i].Mode == ModeOracle {
			ref = &wl.Modes[i].Summary
		}
	}
	want, wantFirst := wl.Tasks, wl.Tasks
	if ref != nil {
		want, wantFirst = ref.Recovered, ref.RecoveredFirst
	} else {
		base, baseName = func(s Summary) float64 { return s.CostVsNaive }, "naive"
	}
	cost := func(s Summary) string {
		if base(s) == 0 {
			return ""
		}
		return fmt.Sprintf(" %.3fx", base(s))
	}
	// Each group lists its modes cheapest first.
	type entry struct {
		text string
		cost float64
	}
	var both, latest, some, none []entry
	for _, m := range wl.Modes {
		s := m.Summary
		first := ""
		if s.FirstCopy {
			first = fmt.Sprintf(", first-copy %d/%d", s.RecoveredFirst, s.Tasks)
		}
		switch {
		case m.Mode == ModeOracle:
		case s.Tasks == 0:
		case s.Recovered == 0 && (!s.FirstCopy || s.RecoveredFirst == 0):
			none = append(none, entry{m.Mode, base(s)})
		case s.Recovered >= want && (!s.FirstCopy || s.RecoveredFirst >= wantFirst):
			both = append(both, entry{m.Mode + cost(s), base(s)})
		case s.Recovered >= want:
			latest = append(latest, entry{fmt.Sprintf("%s%s (first-copy %d/%d)", m.Mode, cost(s), s.RecoveredFirst, s.Tasks), base(s)})
		default:
			some = append(some, entry{fmt.Sprintf("%s%s (%d/%d%s)", m.Mode, cost(s), s.Recovered, s.Tasks, first), base(s)})
		}
	}
	texts := func(es []entry) []string {
		slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.cost, b.cost) })
		var out []string
		for _, e := range es {
			out = append(out, e.text)
		}
		return out
	}
	line := fmt.Sprintf("%s: ", wl.Name)
	if ref != nil {
		line += fmt.Sprintf("oracle %d/%d", ref.Recovered, ref.Tasks)
	} else {
		line += fmt.Sprintf("no oracle row: costs against %s, of %d tasks", baseName, wl.Tasks)
	}
	var parts []string
	readers := "all of it"
	if len(wl.Modes) > 0 && wl.Modes[0].Summary.FirstCopy {
		readers = "all of it under both readers"
	}
	for _, g := range []struct {
		what  string
		modes []entry
	}{{readers, both}, {"all under the latest-copy reader only", latest}, {"some", some}, {"none", none}} {
		if len(g.modes) > 0 {
			parts = append(parts, g.what+": "+strings.Join(texts(g.modes), ", "))
		}
	}
	if len(parts) == 0 {
		return line + "."
	}
	return line + fmt.Sprintf("; recovered (input cost vs %s) ", baseName) + strings.Join(parts, "; ") + "."
}

func (p Price) describe() string {
	if !p.Cached {
		return p.Name + " (no prompt cache)"
	}
	return fmt.Sprintf("%s (cache write %gx, read %gx, from %d tokens)", p.Name, p.Write, p.Read, p.MinPrompt)
}

func (wl WorkloadReport) writeTable(b *strings.Builder) {
	fmt.Fprintf(b, "%s (%d tasks)\n\n", wl.Name, wl.Tasks)
	b.WriteString("| mode | recovered | first-copy reader | raced | avg steps | reads/task | prompt tok/task | completion tok/task | total tokens | prefix reuse tok/task | prefix reuse % | rewrite calls % | cache hit % | input cost/task | vs naive | vs oracle |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	ratio := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	errs := 0
	for _, m := range wl.Modes {
		s := m.Summary
		n := float64(max(s.Tasks, 1))
		first := "-"
		if s.FirstCopy {
			first = fmt.Sprintf("%d/%d", s.RecoveredFirst, s.Tasks)
		}
		fmt.Fprintf(b, "| %s | %d/%d | %s | %d | %.2f | %.2f | %.0f | %.1f | %d | %.0f | %.1f | %.1f | %.1f | %.0f | %s | %s |\n",
			m.Mode, s.Recovered, s.Tasks, first, s.Raced, s.AvgSteps, s.ReadsPerTask,
			float64(s.PromptTokens)/n, float64(s.CompletionTokens)/n, s.TotalTokens,
			float64(s.ReusedTokens)/n, s.ReusePercent, s.RewritePercent, s.CacheHitPercent, s.CostPerTask,
			ratio(s.CostVsNaive), ratio(s.CostVsOracle))
		errs += s.Errors
	}
	var notes []string
	if len(wl.Skipped) > 0 {
		notes = append(notes, fmt.Sprintf("%d examples of the file skipped (no mutation could be built; reasons in --out)", len(wl.Skipped)))
	}
	if errs > 0 {
		notes = append(notes, fmt.Sprintf("%d task runs failed (see --out)", errs))
	}
	for _, m := range wl.Modes {
		if s := m.Summary; wl.Name == "compaction" && m.Mode == ModeConcord {
			notes = append(notes, fmt.Sprintf("%s: %d lines corrected in summaries, %d of them true but unneeded (a line the summary never restated), %d restated lines changed with no correction in force at a model call, %d corrected lines false",
				m.Mode, s.DerivedCorrections, s.DerivedUnneeded, s.DerivedMissed, s.DerivedFalse))
		}
		if c := m.Summary.ProviderCached; c > 0 {
			notes = append(notes, fmt.Sprintf("%s: the provider reported %d cached prompt tokens (%.1f%% of its prompt tokens)",
				m.Mode, c, 100*float64(c)/float64(max(m.Summary.PromptTokens, 1))))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "; ") + "\n")
	}
}

// WriteJSON writes the whole report, every task's trace included.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(r)
}

// WriteSVG draws one chart per workload, stacked: tasks recovered against
// the cache-priced input cost per task, one point per mode, with a legend
// (points of modes with similar costs overlap).
func (r *Report) WriteSVG(w io.Writer) error {
	const W, H = 860.0, 420.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		W, H*float64(len(r.Workloads)), W, H*float64(len(r.Workloads)))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, wl := range r.Workloads {
		fmt.Fprintf(&b, `<g transform="translate(0 %.0f)">`+"\n", H*float64(i))
		wl.chart(&b, W, H, r.Agent, r.Price.Name)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (wl WorkloadReport) chart(b *strings.Builder, W, H float64, agentName, price string) {
	const left, right, top, bottom = 70.0, 300.0, 50.0, 60.0
	maxX, maxY := 1.0, float64(max(wl.Tasks, 1))
	for _, m := range wl.Modes {
		maxX = max(maxX, m.Summary.CostPerTask)
	}
	step := niceStep(maxX * 1.1 / 5)
	maxX = step * math.Ceil(maxX*1.1/step)
	px := func(x float64) float64 { return left + x/maxX*(W-left-right) }
	py := func(y float64) float64 { return H - bottom - y/maxY*(H-top-bottom) }
	fmt.Fprintf(b, `<text x="%.0f" y="26" font-size="15" text-anchor="middle">%s: tasks recovered vs input cost per task (%d tasks, %s agent)</text>`+"\n",
		W/2, html.EscapeString(wl.Name), wl.Tasks, html.EscapeString(agentName))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(0), py(0), px(maxX), py(0))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(0), py(0), px(0), py(maxY))
	for x := 0.0; x <= maxX+step/2; x += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", px(x), py(0)+18, x)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(x), py(0), px(x), py(0)+4)
	}
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text>`+"\n", px(0)-6, py(y)+4, y)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px(0), py(y), px(maxX), py(y))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">input cost per task (plain input tokens, %s cache prices)</text>`+"\n", (px(0)+px(maxX))/2, H-18, html.EscapeString(price))
	fmt.Fprintf(b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">tasks recovered</text>`+"\n", (py(0)+py(maxY))/2, (py(0)+py(maxY))/2)
	colors := map[string]string{ModeNaive: "#d62728", ModeResend: "#8c564b", ModeMask: "#e377c2", ModeReminder: "#bcbd22",
		ModeAlert: "#ff7f0e", ModeDiff: "#9467bd", ModeConcord: "#2ca02c", ModeOracle: "#1f77b4"}
	lx, ly := px(maxX)+24, top+10
	for i, m := range wl.Modes {
		c := colors[m.Mode]
		if c == "" {
			c = "black"
		}
		// Later modes are drawn smaller so overlapping points stay visible.
		rad := 9 - float64(i)
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.0f" fill="%s" fill-opacity="0.85"><title>%s</title></circle>`+"\n",
			px(m.Summary.CostPerTask), py(float64(m.Summary.Recovered)), max(rad, 3), c, html.EscapeString(m.Mode))
		y := ly + float64(i)*22
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>`+"\n", lx, y-4, c)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s: %d/%d, cost %.0f, %.0f tok/task</text>`+"\n", lx+12, y, html.EscapeString(m.Mode),
			m.Summary.Recovered, m.Summary.Tasks, m.Summary.CostPerTask, m.Summary.TokensPerTask)
	}
}

// niceStep rounds a raw axis step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
