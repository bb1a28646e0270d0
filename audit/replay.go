package audit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/concord-ctx/concord/intake"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/recognize"
	"github.com/concord-ctx/concord/runtime"
)

// Options tune a replay.
type Options struct {
	// Price prices the prompt cache (nil: no cost figures); PriceName
	// names it in reports.
	Price     *protocol.CachePrice
	PriceName string
	// Timeline keeps the per-call figures in the report (for --html).
	Timeline bool
}

// TokenBytes is the estimate of characters per token used for every token
// figure: a rough mean for English text and code under the major
// providers' tokenizers, never a tokenizer's count.
const TokenBytes = 4

func tokens(chars int) int { return (chars + TokenBytes - 1) / TokenBytes }

const agent = "main"

// Kinds of stale views.
const (
	StaleChanged = "changed" // the text shown no longer reads so
	StaleMoved   = "moved"   // the text is the same, at other lines
	StaleGone    = "gone"    // the file was deleted or changed by a command: not shown again
	StaleOther   = "other"   // any other status the manager gave (aged)
)

type blockRec struct {
	anchor, format string
	files          []string
	parts          []recognize.Part // what it showed, to check a superseded block against
	chars          int
	at             int // prompt chars before it (its offset)
	call           int // model calls made before it was observed
	stale          bool
	forgotten      bool // condensed out of the prompt
	// summary: a compaction summary (a derived block), stale once a sync
	// says derived-stale: a line it restates changed.
	summary      bool
	kind         string
	since, calls int
}

// replayer holds one session's replay.
type replayer struct {
	ctx    context.Context
	opt    Options
	v      *vfs
	m      *runtime.Manager
	now    time.Time
	blocks map[string]*blockRec
	order  []*blockRec
	sums   []*blockRec // compaction summaries tracked as derived blocks
	rep    *SessionReport
	in     *intake.Intake    // the one way in, as the server's
	step   *Step             // the step being taken in
	res    *recognize.Result // what the intake recognized of it (seen)
	chars  int               // prompt chars so far
	calls  int
	errata int // erratum chars now at the tail
	// rebuilt: the runtime condensed its history since the last call.
	rebuilt bool
	// record, when set (tests), sees each request the replay made of the
	// core and its answer, to hold a replay against a server's.
	record func(method string, params, result any, err error)
}

// Replay replays one session.
func Replay(ctx context.Context, s *Session, opt Options) (*SessionReport, error) {
	r := newReplayer(ctx, s, opt)
	defer r.m.Close()
	for i := range s.Steps {
		if err := r.take(&s.Steps[i]); err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", s.File, i+1, err)
		}
	}
	r.finish()
	return r.rep, nil
}

func newReplayer(ctx context.Context, s *Session, opt Options) *replayer {
	r := &replayer{ctx: ctx, opt: opt, v: newVFS(), blocks: map[string]*blockRec{},
		rep: newSessionReport(s)}
	if opt.Price != nil {
		r.rep.Concord.CacheCost = new(float64)
	}
	r.m = runtime.New(runtime.Config{
		Options: protocol.InitializeParams{Placement: protocol.PlacementAuto,
			Cache: &protocol.CacheParams{Price: opt.Price}},
		Now:    func() time.Time { return r.now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	r.m.AddAdapter(adapter{r.v})
	r.in = intake.New(r.m, r.v, r.seen)
	r.now = time.Unix(0, 0).UTC()
	return r
}

// take replays one step: a model call, a tool result or a condensation.
func (r *replayer) take(st *Step) error {
	if !st.Time.IsZero() {
		if st.Time.After(r.now) {
			r.now = st.Time
		}
	} else {
		// No times in the log: a call a second, the cache always warm.
		r.now = r.now.Add(time.Second)
	}
	var err error
	switch {
	case st.Model:
		err = r.call()
	case st.Tool != nil:
		err = r.tool(st)
	case st.Forget != nil:
		err = r.forget(st)
	}
	r.chars += st.Chars
	return err
}

// tool takes one tool result in through the intake, as a server would,
// with seen rebuilding the virtual workspace from it first.
func (r *replayer) tool(st *Step) error {
	r.rep.ToolResults++
	r.step, r.res = st, nil
	ccSeed(r.v, *st.Tool)
	params := protocol.RecognizeParams{Agent: agent, Turn: r.calls + 1, Anchor: st.Anchor, Call: wireCall(*st.Tool)}
	out, err := r.in.Recognize(r.ctx, params)
	if r.record != nil {
		r.record(protocol.MethodRecognize, params, out, err)
	}
	res := r.res
	switch {
	case res == nil:
		r.rep.Unrecognized++ // malformed arguments: the call showed nothing tracked
		return nil
	case res.Kind == recognize.KindListing || res.Kind == recognize.KindQuery:
		// The virtual workspace refuses listing and query sources (it never
		// knows a whole directory, nor can it run a command): counted, not
		// replayed (docs/audit.md).
		r.rep.Listings++
		return nil
	case err != nil:
		return err
	case res.Kind != recognize.KindRead || out.Block == "":
		return nil
	}
	rec := &blockRec{anchor: st.Anchor, format: res.Format, at: r.chars, call: r.calls}
	for _, p := range res.Parts {
		p.Path = path.Clean(p.Path)
		rec.files = append(rec.files, p.Path)
		rec.chars += len(p.Text)
		rec.parts = append(rec.parts, p)
	}
	r.rep.Views++
	r.blocks[out.Block] = rec
	r.order = append(r.order, rec)
	return nil
}

// seen rebuilds the virtual workspace from a recognized call before the
// intake reports its writes and registers what it showed: a write brings
// the file to what the tool left, a read puts the lines it showed in, and a
// read that shows a file otherwise than the session last knew it reports
// the change (made behind the agent's back, or by a command).
func (r *replayer) seen(ctx context.Context, _ recognize.Call, res recognize.Result) error {
	r.res = &res
	st := r.step
	for _, w := range res.Writes {
		w = path.Clean(w)
		r.rep.Writes++
		if !r.applyWrite(st, res, w) {
			r.rep.UnknownWrites++
			r.v.touch(w)
		}
	}
	if res.Kind != recognize.KindRead {
		return nil
	}
	for _, p := range res.Parts {
		if p.URI != "" {
			continue
		}
		fp := path.Clean(p.Path)
		var changed bool
		if p.Whole() {
			changed = r.v.setWhole(fp, p.Text) && r.v.files[fp].gen > 1
		} else {
			changed = r.v.merge(fp, p.Start, strings.Split(p.Text, "\n"))
		}
		if changed && !writes(res, fp) {
			r.rep.OutsideChanges++
			if _, err := r.m.SourceChanged(ctx, protocol.SourceChangedParams{URI: fileURI(fp)}); err != nil {
				return fmt.Errorf("change of %s: %w", fp, err)
			}
		}
	}
	return nil
}

// wireCall is a recorded call as the wire carries it to recognize.
func wireCall(c recognize.Call) protocol.ToolCall {
	return protocol.ToolCall{Runtime: c.Runtime, Tool: c.Tool, Arguments: c.Args, Output: c.Output, ExitCode: c.ExitCode,
		Cwd: c.Cwd, Truncated: c.Truncated, Error: c.Error, Metadata: c.Metadata}
}

func writes(res recognize.Result, p string) bool {
	for _, w := range res.Writes {
		if path.Clean(w) == p {
			return true
		}
	}
	return false
}

// forget is a condensation: the forgotten tool results leave the prompt
// (released, as the binding does), and the next call's prompt is rebuilt.
func (r *replayer) forget(st *Step) error {
	r.rebuilt = true
	r.rep.Condensations++
	r.chars = max(r.chars-st.ForgetChars, 0)
	gone := map[string]bool{}
	for _, a := range st.Forget {
		gone[a] = true
	}
	for _, rec := range r.order {
		if gone[rec.anchor] {
			rec.forgotten = true
		}
	}
	for _, rec := range r.sums {
		if gone[rec.anchor] {
			rec.forgotten = true
		}
	}
	if len(st.Forget) == 0 {
		return nil
	}
	if st.Summary != "" {
		return r.compacted(st)
	}
	rel := protocol.ReleaseParams{Agent: agent, Anchors: st.Forget}
	res, err := r.m.Release(r.ctx, rel)
	if r.record != nil {
		r.record(protocol.MethodRelease, rel, res, err)
	}
	if err != nil {
		return fmt.Errorf("release of condensed results: %w", err)
	}
	return nil
}

// compacted is a condensation with its summary: the summary takes the
// forgotten results' place, reported to the core as compacted (as a binding
// does), which keeps it as a derived block built from what they showed and
// releases them. A summary whose replaced results showed nothing tracked
// has no derived block, and is not counted.
func (r *replayer) compacted(st *Step) error {
	cp := protocol.CompactedParams{Agent: agent, Anchor: st.SummaryAnchor, Text: st.Summary, Replaced: st.Forget}
	res, err := r.m.Compacted(r.ctx, cp)
	if r.record != nil {
		r.record(protocol.MethodCompacted, cp, res, err)
	}
	if err != nil {
		return fmt.Errorf("compacted summary %s: %w", st.SummaryAnchor, err)
	}
	if res.Derived == "" {
		return nil
	}
	r.rep.Summaries++
	rec := &blockRec{anchor: st.SummaryAnchor, format: "summary", summary: true, chars: len(st.Summary),
		at: r.chars, call: r.calls}
	r.blocks[res.Derived] = rec
	r.sums = append(r.sums, rec)
	return nil
}

// call is one model call: what Concord would have sent (sync), and what
// of the raw prompt was stale.
func (r *replayer) call() error {
	r.calls++
	r.rep.Calls++
	r.rep.PromptTokens += tokens(r.chars)
	sp := protocol.SyncParams{Agent: agent, Turn: r.calls, PromptChars: r.chars, PrefixRebuilt: r.rebuilt}
	sr, err := r.m.Sync(r.ctx, sp)
	if r.record != nil {
		r.record(protocol.MethodSync, sp, sr, err)
	}
	r.rebuilt = false
	if err != nil {
		return fmt.Errorf("sync before call %d: %w", r.calls, err)
	}
	c := &r.rep.Concord
	price := r.opt.Price
	if sr.Flushed {
		r.errata = 0
	}
	if price != nil {
		*c.CacheCost += price.Read * float64(tokens(r.errata)) // errata already at the tail, read again
	}
	newErrata := 0
	for _, bv := range sr.Blocks {
		rec := r.blocks[bv.Block]
		if rec == nil {
			continue
		}
		if !rec.stale {
			if kind := r.staleKind(bv, rec); kind != "" {
				rec.stale, rec.kind, rec.since = true, kind, r.calls
			}
		}
		switch {
		case bv.Placement == protocol.PlacementTail && bv.Erratum != "":
			c.Errata++
			newErrata += len(bv.Erratum)
		case bv.Placement == "" && bv.Status != protocol.Valid && bv.Status != protocol.Released:
			c.InPlace++
			if rec.call < r.calls-1 && price != nil {
				// Seen by an earlier call: the rewrite turns the cached
				// prompt from this message on into a cache write.
				*c.CacheCost += (price.Write - price.Read) * float64(tokens(r.chars-rec.at))
			}
		}
	}
	c.ErrataChars += newErrata
	r.errata += newErrata
	if price != nil {
		*c.CacheCost += price.Write * float64(tokens(newErrata))
	}
	var pt CallPoint
	for _, rec := range r.order {
		if !rec.stale || rec.forgotten {
			continue
		}
		rec.calls++
		pt.StaleViews++
		pt.StaleTokens += tokens(rec.chars)
	}
	// A summary, once a line it restates changed, stays wrong in the
	// runtime's prompt until the runtime compacts it away, as a stale view
	// does (without Concord nothing corrects it).
	staleSummary := false
	for _, rec := range r.sums {
		if rec.stale && !rec.forgotten {
			rec.calls++
			staleSummary = true
		}
	}
	if staleSummary {
		r.rep.StaleSummaryCalls++
	}
	pt.Call, pt.PromptTokens, pt.ErrataTokens = r.calls, tokens(r.chars), tokens(r.errata)
	r.rep.StaleTokens += pt.StaleTokens
	if pt.StaleViews > 0 {
		r.rep.StaleCalls++
	}
	if r.opt.Timeline {
		r.rep.Timeline = append(r.rep.Timeline, pt)
	}
	return nil
}

// staleKind is why a block the sync reports no longer shows what its
// message says ("": it still does).
func (r *replayer) staleKind(bv protocol.BlockView, rec *blockRec) string {
	switch bv.Status {
	case protocol.Valid, protocol.Released:
		return ""
	case protocol.Superseded:
		// A newer read of the same span replaced it. The change and the
		// new read may have come between two model calls, so no sync said
		// it changed: its message still shows what it showed.
		return r.shownKind(rec)
	case protocol.Invalid:
		return StaleGone
	case protocol.DerivedStale:
		// A compaction summary: a line it restates changed (under the
		// derived policy, mentioned by default).
		return StaleChanged
	case protocol.Patched:
		if len(bv.Sources) != len(rec.parts) {
			return StaleChanged
		}
		for i, s := range bv.Sources {
			if s.Text != rec.parts[i].Text {
				return StaleChanged
			}
		}
		return StaleMoved // the same text, at other lines
	}
	return StaleOther
}

func (r *replayer) finish() {
	rep := r.rep
	files := map[string]*FileStat{}
	for _, rec := range r.order {
		if !rec.stale {
			continue
		}
		rep.StaleViews++
		rep.ByKind[rec.kind]++
		rep.ByFormat[rec.format]++
		rep.Duration.add(rec.calls)
		for _, f := range rec.files {
			fs := files[f]
			if fs == nil {
				fs = &FileStat{File: f}
				files[f] = fs
			}
			fs.StaleViews++
			fs.StaleCalls += rec.calls
			fs.StaleTokens += tokens(rec.chars) * rec.calls
		}
	}
	for _, f := range files {
		rep.Files = append(rep.Files, *f)
	}
	for _, rec := range r.sums {
		if rec.stale {
			rep.StaleSummaries++
		}
	}
	sortFiles(rep.Files)
	rep.Concord.ErrataTokens = tokens(rep.Concord.ErrataChars)
}

// shownKind compares what a block showed with the file now: "" when its
// text still reads so at its lines, moved when it reads so elsewhere.
func (r *replayer) shownKind(rec *blockRec) string {
	kind := ""
	for _, p := range rec.parts {
		cur, ok := r.v.content(p.Path)
		if !ok {
			return StaleGone
		}
		lines := splitLines(cur)
		if p.Whole() {
			if strings.Join(lines, "\n") != p.Text {
				return StaleChanged
			}
			continue
		}
		if p.Start >= 1 && p.End >= p.Start-1 && p.End <= len(lines) && strings.Join(lines[p.Start-1:p.End], "\n") == p.Text {
			continue
		}
		if !strings.Contains("\n"+strings.Join(lines, "\n")+"\n", "\n"+p.Text+"\n") {
			return StaleChanged
		}
		kind = StaleMoved
	}
	return kind
}
