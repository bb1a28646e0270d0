package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteTable prints one Markdown row per mode.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| mode | recovered | raced | avg steps | reads/task | prompt tok/task | completion tok/task | total tokens | prefix reuse tok/task | prefix reuse %% |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range r.Modes {
		s := m.Summary
		n := float64(max(s.Tasks, 1))
		fmt.Fprintf(&b, "| %s | %d/%d | %d | %.2f | %.2f | %.0f | %.1f | %d | %.0f | %.1f |\n",
			m.Mode, s.Recovered, s.Tasks, s.Raced, s.AvgSteps, s.ReadsPerTask,
			float64(s.PromptTokens)/n, float64(s.CompletionTokens)/n, s.TotalTokens,
			float64(s.ReusedTokens)/n, s.ReusePercent)
	}
	errs := 0
	for _, m := range r.Modes {
		errs += m.Summary.Errors
	}
	fmt.Fprintf(&b, "\n%d tasks, agent %s, tokens %s", r.Tasks, r.Agent, r.Encoding)
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, ", %d examples of the file skipped (no mutation could be built; reasons in --out)", len(r.Skipped))
	}
	if errs > 0 {
		fmt.Fprintf(&b, ", %d task runs failed (see --out)", errs)
	}
	b.WriteString("\n")
	for _, m := range r.Modes {
		if c := m.Summary.ProviderCached; c > 0 {
			fmt.Fprintf(&b, "%s: the provider reported %d cached prompt tokens (%.1f%% of its prompt tokens)\n",
				m.Mode, c, 100*float64(c)/float64(max(m.Summary.PromptTokens, 1)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the whole report, every task's trace included.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(r)
}

// WriteSVG draws recover count against tokens per task, one point per mode,
// with a legend (points of modes with similar costs overlap).
func (r *Report) WriteSVG(w io.Writer) error {
	const W, H, left, right, top, bottom = 800.0, 420.0, 70.0, 260.0, 50.0, 60.0
	maxX, maxY := 1.0, float64(max(r.Tasks, 1))
	for _, m := range r.Modes {
		maxX = max(maxX, m.Summary.TokensPerTask)
	}
	step := niceStep(maxX * 1.1 / 5)
	maxX = step * math.Ceil(maxX*1.1/step)
	px := func(x float64) float64 { return left + x/maxX*(W-left-right) }
	py := func(y float64) float64 { return H - bottom - y/maxY*(H-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="26" font-size="15" text-anchor="middle">ConcordBench: tasks recovered vs tokens per task (%d tasks, %s agent)</text>`+"\n", W/2, r.Tasks, html.EscapeString(r.Agent))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(0), py(0), px(maxX), py(0))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(0), py(0), px(0), py(maxY))
	for x := 0.0; x <= maxX+step/2; x += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", px(x), py(0)+18, x)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", px(x), py(0), px(x), py(0)+4)
	}
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text>`+"\n", px(0)-6, py(y)+4, y)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px(0), py(y), px(maxX), py(y))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">tokens per task (prompt + completion)</text>`+"\n", (px(0)+px(maxX))/2, H-18)
	fmt.Fprintf(&b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">tasks recovered</text>`+"\n", (py(0)+py(maxY))/2, (py(0)+py(maxY))/2)
	colors := map[string]string{ModeNaive: "#d62728", ModeAlert: "#ff7f0e", ModeDiff: "#9467bd", ModeConcord: "#2ca02c", ModeOracle: "#1f77b4"}
	lx, ly := px(maxX)+24, top+10
	for i, m := range r.Modes {
		c := colors[m.Mode]
		if c == "" {
			c = "black"
		}
		// Later modes are drawn smaller so overlapping points stay visible.
		rad := 8 - float64(i)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.0f" fill="%s" fill-opacity="0.85"><title>%s</title></circle>`+"\n",
			px(m.Summary.TokensPerTask), py(float64(m.Summary.Recovered)), max(rad, 3), c, html.EscapeString(m.Mode))
		y := ly + float64(i)*22
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>`+"\n", lx, y-4, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s: %d/%d, %.0f tok/task</text>`+"\n", lx+12, y, html.EscapeString(m.Mode), m.Summary.Recovered, m.Summary.Tasks, m.Summary.TokensPerTask)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
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
