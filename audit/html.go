package audit

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// HTMLCharts bounds the per-session charts on the page (the sessions with
// the most stale tokens first); the totals cover every session.
const HTMLCharts = 200

// WriteHTML writes the report as one self-contained page: the totals, the
// worst files, and per session a timeline of its model calls (inline SVG:
// the stale tokens each call carried, and Concord's errata at its tail).
// No script, no external asset.
func (r *Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	esc := escape
	t := r.Totals
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Concord audit</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.stale{fill:#d33}.errata{fill:#36c}.axis{stroke:#999}svg text{font-size:10px;fill:#555}svg .axis-label{font-style:italic}
.legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}
</style></head><body>
<h1>How much stale context the agents worked from</h1>
`)
	fmt.Fprintf(&b, "<p>Tokens are estimated as characters/%d. Each session was replayed through the recognition and reconciliation of <code>concord serve</code>.</p>\n", TokenBytes)
	b.WriteString(`<table id="totals"><tbody>` + "\n")
	row := func(k, v string) { fmt.Fprintf(&b, "<tr><th>%s</th><td class=\"n\">%s</td></tr>\n", esc(k), esc(v)) }
	row("Sessions", fmt.Sprintf("%d (%d with stale context)", t.Sessions, t.SessionsStale))
	row("Model calls", fmt.Sprint(t.Calls))
	row("Calls that carried a stale view", fmt.Sprintf("%d (%s)", t.StaleCalls, pct(t.StaleCalls, t.Calls)))
	row("Stale views", fmt.Sprintf("%d of %d tracked (%s)", t.StaleViews, t.Views, kinds(t.ByKind)))
	row("Stale views by tool", kinds(t.ByFormat))
	row("Stale for (model calls)", fmt.Sprintf("%.1f on average, %d at most", t.Duration.Mean, t.Duration.Max))
	row("Stale tokens sent", fmt.Sprintf("~%d of %d prompt tokens (%s)", t.StaleTokens, t.PromptTokens, pct(t.StaleTokens, t.PromptTokens)))
	row("Concord instead", fmt.Sprintf("%d repairs in place, %d errata at the tail (~%d tokens)%s",
		t.Concord.InPlace, t.Concord.Errata, t.Concord.ErrataTokens, cost(t.Concord.CacheCost, r.Price)))
	if t.Summaries > 0 {
		row("Compaction summaries", fmt.Sprintf("%d tracked, %d stale (a line they restate changed while in the prompt; %d calls carried one)",
			t.Summaries, t.StaleSummaries, t.StaleSummaryCalls))
	}
	b.WriteString("</tbody></table>\n")
	if len(t.Files) > 0 {
		b.WriteString("<h2>Worst files</h2>\n<table id=\"files\"><thead><tr><th>File</th><th>Session</th><th>Stale views</th><th>Stale tokens sent</th></tr></thead><tbody>\n")
		for _, f := range t.Files {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%d</td></tr>\n", esc(f.File), esc(f.Session), f.StaleViews, f.StaleTokens)
		}
		b.WriteString("</tbody></table>\n")
	}
	if len(r.Errors) > 0 {
		b.WriteString("<h2>Inputs not audited</h2>\n<ul id=\"errors\">\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "<li><code>%s</code>: %s</li>\n", esc(e.File), esc(e.Error))
		}
		b.WriteString("</ul>\n")
	}
	ss := append([]*SessionReport(nil), r.Sessions...)
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].StaleTokens > ss[j].StaleTokens })
	if len(ss) > HTMLCharts {
		fmt.Fprintf(&b, "<p>The %d sessions with the most stale tokens of %d:</p>\n", HTMLCharts, len(ss))
		ss = ss[:HTMLCharts]
	}
	b.WriteString(`<h2>Per model call</h2>
<p class="legend"><span class="stale" style="background:#d33"></span>stale tokens the call carried<span style="background:#36c"></span>Concord's errata at its tail</p>
`)
	for _, s := range ss {
		sums := ""
		if s.Summaries > 0 {
			sums = fmt.Sprintf("; %d of %d compaction summaries went stale", s.StaleSummaries, s.Summaries)
		}
		fmt.Fprintf(&b, "<h3>%s</h3>\n<p>%s, %s: %d model calls, %d carried a stale view; %d of %d views went stale; ~%d stale tokens sent%s.</p>\n",
			esc(s.Session), esc(s.Format), esc(s.File), s.Calls, s.StaleCalls, s.StaleViews, s.Views, s.StaleTokens, esc(sums))
		timeline(&b, s)
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// timeline draws one session's calls: per call, a red bar for the stale
// tokens it carried and a blue one for the errata Concord had at its tail.
func timeline(b *strings.Builder, s *SessionReport) {
	const h, top, bottom, left = 132, 10, 32, 52
	pts := s.Timeline
	if len(pts) == 0 {
		b.WriteString("<p>(no model calls)</p>\n")
		return
	}
	step := max(4, min(40, 1000/len(pts)))
	width := left + step*len(pts) + 10
	peak := 1
	for _, p := range pts {
		peak = max(peak, p.StaleTokens, p.ErrataTokens)
	}
	scale := float64(h-top-bottom) / float64(peak)
	base := h - bottom
	fmt.Fprintf(b, `<svg class="timeline" role="img" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", width, h, width, h)
	fmt.Fprintf(b, `<title>%s: stale tokens per model call</title>`+"\n", escape(s.Session))
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/><text x="16" y="%d">%d</text><text x="16" y="%d">0</text>`+"\n",
		left, base, width-5, base, top+8, peak, base)
	// Axis labels: what the bars measure (up) and what they are counted by (across).
	fmt.Fprintf(b, `<text class="axis-label" transform="translate(10 %d) rotate(-90)" text-anchor="middle">tokens</text>`+"\n", top+(base-top)/2)
	fmt.Fprintf(b, `<text class="axis-label" x="%d" y="%d" text-anchor="middle">model call</text>`+"\n", left+(width-left)/2, h-2)
	bar := float64(step) / 2 * 0.9
	for i, p := range pts {
		x := float64(left + i*step)
		if hs := float64(p.StaleTokens) * scale; p.StaleTokens > 0 {
			fmt.Fprintf(b, `<rect class="stale" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>call %d: %s, ~%d stale tokens</title></rect>`+"\n",
				x, float64(base)-hs, bar, hs, p.Call, plural(p.StaleViews, "stale view", "stale views"), p.StaleTokens)
		}
		if he := float64(p.ErrataTokens) * scale; p.ErrataTokens > 0 {
			fmt.Fprintf(b, `<rect class="errata" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>call %d: ~%d tokens of errata</title></rect>`+"\n",
				x+bar, float64(base)-he, bar, he, p.Call, p.ErrataTokens)
		}
		if len(pts) <= 40 || (i+1)%10 == 0 {
			fmt.Fprintf(b, `<text x="%.1f" y="%d">%d</text>`+"\n", x, base+12, p.Call)
		}
	}
	b.WriteString("</svg>\n")
}

// plural is "1 stale view", "2 stale views".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// escaper is html.EscapeString's replacements; the html package itself
// links its entity tables into the binary (about 100 KB) for nothing here.
var escaper = strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", "\"", "&#34;")

func escape(s string) string { return escaper.Replace(s) }
