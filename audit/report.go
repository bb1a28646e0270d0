package audit

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// SessionReport is one session's audit.
type SessionReport struct {
	Session string `json:"session"`
	File    string `json:"file"`
	Format  string `json:"format"`
	Calls   int    `json:"modelCalls"`
	// StaleCalls: model calls whose prompt carried at least one stale view.
	StaleCalls  int `json:"callsWithStaleView"`
	ToolResults int `json:"toolResults"`
	Views       int `json:"trackedViews"` // tool results that showed file text Concord tracks
	StaleViews  int `json:"staleViews"`
	// ByKind: stale views by what happened to them (changed, moved, gone);
	// ByFormat: by the tool format that showed them.
	ByKind   map[string]int `json:"staleByKind"`
	ByFormat map[string]int `json:"staleByFormat"`
	Files    []FileStat     `json:"worstFiles"`
	// Duration: how many model calls each stale view was carried stale.
	Duration Duration `json:"staleForCalls"`
	// StaleTokens: the stale views' text sent, summed over the calls that
	// carried it; PromptTokens: every prompt's size, summed (both
	// characters/4, see TokenBytes).
	StaleTokens  int `json:"staleTokensSent"`
	PromptTokens int `json:"promptTokens"`
	Writes       int `json:"writes"`
	// UnknownWrites: edits the replay could not apply (their old text lies
	// in lines the session never showed): the file's views are reported gone.
	UnknownWrites  int `json:"unknownWrites"`
	OutsideChanges int `json:"outsideChanges"` // reads that showed a file changed behind the agent's back (or by a command)
	Listings       int `json:"listings"`       // directory listings (not replayed)
	Unrecognized   int `json:"unrecognized"`   // tool calls with arguments that are not JSON
	Condensations  int `json:"condensations"`  // the runtime condensed its history (forgotten results leave the prompt)
	// Summaries: compaction summaries tracked as derived blocks (the
	// results they replaced showed file text Concord tracks);
	// StaleSummaries: those a sync found derived-stale while they were in
	// the prompt (a line they restate changed); StaleSummaryCalls: model
	// calls that carried a stale summary.
	Summaries         int         `json:"summaries"`
	StaleSummaries    int         `json:"staleSummaries"`
	StaleSummaryCalls int         `json:"callsWithStaleSummary"`
	Concord           Concord     `json:"concord"`
	Timeline          []CallPoint `json:"timeline,omitempty"`
}

// Concord is what `concord serve` (placement auto) would have sent instead.
type Concord struct {
	InPlace      int `json:"inPlace"` // repairs rewritten in place (free where never sent or the cache expired)
	Errata       int `json:"errata"`  // errata appended at the tail
	ErrataChars  int `json:"errataChars"`
	ErrataTokens int `json:"errataTokens"`
	// CacheCost: the repairs' prompt-cache cost, in input-token units, under
	// the --price model (nil without one): each erratum written once and
	// read on every later call until a flush; each in-place rewrite of a
	// message already sent turns the prompt after it from cache reads into
	// writes once.
	CacheCost *float64 `json:"cacheCost,omitempty"`
}

// FileStat is one file's stale views.
type FileStat struct {
	Session     string `json:"session,omitempty"`
	File        string `json:"file"`
	StaleViews  int    `json:"staleViews"`
	StaleCalls  int    `json:"staleViewCalls"` // summed over its stale views
	StaleTokens int    `json:"staleTokensSent"`
}

// Duration summarizes how many calls stale views were carried.
type Duration struct {
	Views int     `json:"views"`
	Total int     `json:"totalCalls"`
	Max   int     `json:"max"`
	Mean  float64 `json:"mean"`
}

func (d *Duration) add(calls int) {
	d.Views++
	d.Total += calls
	d.Max = max(d.Max, calls)
	d.Mean = float64(d.Total) / float64(d.Views)
}

func (d *Duration) merge(o Duration) {
	d.Views += o.Views
	d.Total += o.Total
	d.Max = max(d.Max, o.Max)
	if d.Views > 0 {
		d.Mean = float64(d.Total) / float64(d.Views)
	}
}

// CallPoint is one model call of the timeline.
type CallPoint struct {
	Call         int `json:"call"`
	PromptTokens int `json:"promptTokens"`
	StaleViews   int `json:"staleViews"`
	StaleTokens  int `json:"staleTokens"`
	ErrataTokens int `json:"errataTokens"` // Concord's errata at the tail of this call
}

func newSessionReport(s *Session) *SessionReport {
	return &SessionReport{Session: s.ID, File: s.File, Format: s.Format,
		ByKind: map[string]int{}, ByFormat: map[string]int{}, Files: []FileStat{}}
}

// sortFiles puts the worst files first: most stale tokens sent, then most
// stale views, then by name.
func sortFiles(fs []FileStat) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.StaleTokens != b.StaleTokens {
			return a.StaleTokens > b.StaleTokens
		}
		if a.StaleViews != b.StaleViews {
			return a.StaleViews > b.StaleViews
		}
		if a.Session != b.Session {
			return a.Session < b.Session
		}
		return a.File < b.File
	})
}

// Report is the audit of every session read.
type Report struct {
	TokenEstimate string           `json:"tokenEstimate"`
	Price         string           `json:"price,omitempty"`
	Totals        Totals           `json:"totals"`
	Sessions      []*SessionReport `json:"sessions"`
	Errors        []InputError     `json:"errors"`
}

// InputError is a file that could not be audited.
type InputError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// Totals add up the sessions.
type Totals struct {
	Sessions       int            `json:"sessions"`
	Calls          int            `json:"modelCalls"`
	StaleCalls     int            `json:"callsWithStaleView"`
	SessionsStale  int            `json:"sessionsWithStaleView"`
	Views          int            `json:"trackedViews"`
	StaleViews     int            `json:"staleViews"`
	ByKind         map[string]int `json:"staleByKind"`
	ByFormat       map[string]int `json:"staleByFormat"`
	Files          []FileStat     `json:"worstFiles"` // the 10 worst, across sessions
	Duration       Duration       `json:"staleForCalls"`
	StaleTokens    int            `json:"staleTokensSent"`
	PromptTokens   int            `json:"promptTokens"`
	UnknownWrites  int            `json:"unknownWrites"`
	OutsideChanges int            `json:"outsideChanges"`
	// Summaries, StaleSummaries, StaleSummaryCalls: as SessionReport's.
	Summaries         int     `json:"summaries"`
	StaleSummaries    int     `json:"staleSummaries"`
	StaleSummaryCalls int     `json:"callsWithStaleSummary"`
	Concord           Concord `json:"concord"`
}

// WorstFiles is how many files the totals list.
const WorstFiles = 10

// NewReport starts an empty report.
func NewReport(opt Options) *Report {
	r := &Report{TokenEstimate: fmt.Sprintf("characters/%d", TokenBytes), Price: opt.PriceName,
		Sessions: []*SessionReport{}, Errors: []InputError{}}
	r.Totals.ByKind, r.Totals.ByFormat, r.Totals.Files = map[string]int{}, map[string]int{}, []FileStat{}
	if opt.Price != nil {
		r.Totals.Concord.CacheCost = new(float64)
	}
	return r
}

// Add counts one session in. keep: keep the session itself in the report
// (its totals are counted either way).
func (r *Report) Add(s *SessionReport, keep bool) {
	t := &r.Totals
	t.Sessions++
	t.Calls += s.Calls
	t.StaleCalls += s.StaleCalls
	if s.StaleViews > 0 {
		t.SessionsStale++
	}
	t.Views += s.Views
	t.StaleViews += s.StaleViews
	for k, n := range s.ByKind {
		t.ByKind[k] += n
	}
	for k, n := range s.ByFormat {
		t.ByFormat[k] += n
	}
	t.Duration.merge(s.Duration)
	t.StaleTokens += s.StaleTokens
	t.PromptTokens += s.PromptTokens
	t.UnknownWrites += s.UnknownWrites
	t.OutsideChanges += s.OutsideChanges
	t.Summaries += s.Summaries
	t.StaleSummaries += s.StaleSummaries
	t.StaleSummaryCalls += s.StaleSummaryCalls
	c := &t.Concord
	c.InPlace += s.Concord.InPlace
	c.Errata += s.Concord.Errata
	c.ErrataChars += s.Concord.ErrataChars
	c.ErrataTokens += s.Concord.ErrataTokens
	if c.CacheCost != nil && s.Concord.CacheCost != nil {
		*c.CacheCost += *s.Concord.CacheCost
	}
	for _, f := range s.Files {
		f.Session = s.Session
		t.Files = append(t.Files, f)
	}
	// Keep only the worst few: memory stays flat however many sessions.
	sortFiles(t.Files)
	if len(t.Files) > WorstFiles {
		t.Files = t.Files[:WorstFiles:WorstFiles]
	}
	if keep {
		r.Sessions = append(r.Sessions, s)
	}
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
}

func kinds(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// WriteText writes the terminal summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, s := range r.Sessions {
		fmt.Fprintf(&b, "%s (%s, %s)\n", s.Session, s.Format, s.File)
		fmt.Fprintf(&b, "  %d model calls, %d carried a stale view (%s); %d of %d tracked views went stale (%s)\n",
			s.Calls, s.StaleCalls, pct(s.StaleCalls, s.Calls), s.StaleViews, s.Views, kinds(s.ByKind))
		if s.StaleViews > 0 {
			fmt.Fprintf(&b, "  stale text sent: ~%d tokens of %d prompt tokens (%s); stale for %.1f calls on average, %d at most\n",
				s.StaleTokens, s.PromptTokens, pct(s.StaleTokens, s.PromptTokens), s.Duration.Mean, s.Duration.Max)
			fmt.Fprintf(&b, "  Concord instead: %d repairs in place, %d errata at the tail (~%d tokens)%s\n",
				s.Concord.InPlace, s.Concord.Errata, s.Concord.ErrataTokens, cost(s.Concord.CacheCost, r.Price))
		}
		if s.Summaries > 0 {
			fmt.Fprintf(&b, "  compaction summaries: %d tracked, %d stale (a line they restate changed while in the prompt), carried stale by %d calls\n",
				s.Summaries, s.StaleSummaries, s.StaleSummaryCalls)
		}
	}
	t := r.Totals
	if len(r.Sessions) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Audited %d sessions (%d with stale context), %d model calls.\n", t.Sessions, t.SessionsStale, t.Calls)
	fmt.Fprintf(&b, "  Calls that carried a stale view: %d of %d (%s)\n", t.StaleCalls, t.Calls, pct(t.StaleCalls, t.Calls))
	fmt.Fprintf(&b, "  Stale views: %d of %d tracked views (%s)\n", t.StaleViews, t.Views, kinds(t.ByKind))
	fmt.Fprintf(&b, "    by tool: %s\n", kinds(t.ByFormat))
	fmt.Fprintf(&b, "  Stale for: %.1f model calls on average, %d at most\n", t.Duration.Mean, t.Duration.Max)
	fmt.Fprintf(&b, "  Stale text sent: ~%d tokens of %d prompt tokens (%s; tokens = characters/%d, an estimate)\n",
		t.StaleTokens, t.PromptTokens, pct(t.StaleTokens, t.PromptTokens), TokenBytes)
	fmt.Fprintf(&b, "  Concord would have sent instead: %d repairs in place, %d errata at the tail (%d chars, ~%d tokens)%s\n",
		t.Concord.InPlace, t.Concord.Errata, t.Concord.ErrataChars, t.Concord.ErrataTokens, cost(t.Concord.CacheCost, r.Price))
	if t.Summaries > 0 {
		fmt.Fprintf(&b, "  Compaction summaries: %d tracked, %d stale (a line they restate changed while they were in the prompt; %d calls carried one)\n",
			t.Summaries, t.StaleSummaries, t.StaleSummaryCalls)
	}
	if t.UnknownWrites > 0 || t.OutsideChanges > 0 {
		fmt.Fprintf(&b, "  Changes: %d edits of lines never shown (content unknown), %d reads that showed a file changed behind the agent's back\n",
			t.UnknownWrites, t.OutsideChanges)
	}
	if len(t.Files) > 0 {
		b.WriteString("  Worst files (stale tokens sent, stale views):\n")
		for _, f := range t.Files {
			fmt.Fprintf(&b, "    %7d  %3d  %s  [%s]\n", f.StaleTokens, f.StaleViews, f.File, f.Session)
		}
	}
	if len(r.Errors) > 0 {
		// The errors themselves go to stderr (the command prints them there).
		fmt.Fprintf(&b, "  Not audited: %d inputs (named on stderr)\n", len(r.Errors))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cost(c *float64, name string) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("; cache cost under %s: %.0f input-token units", name, *c)
}
