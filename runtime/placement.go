package runtime

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// Cache-aware placement of repairs (docs/protocol.md, "Placement").
//
// Providers cache the prompt by prefix, so rewriting tool message k makes
// every token after k a cache miss. The server estimates what is cached
// from what it already knows: the order of an agent's observations and when
// each sync (one model call) happened. A block observed after the agent's
// previous sync was never sent, so rewriting it is free; anything older sits
// in the cached prefix, until the cache expires (CacheTTL since the agent's
// previous sync) or the runtime rebuilds the prompt (sync prefixRebuilt).
// Bindings are not asked where each anchor sits in the prompt: the order of
// observe and sync calls already says which messages a call carried, and
// message indices or token offsets differ per runtime and move whenever a
// runtime masks or condenses. Only priced rewrites (rewritePays) need a
// size, and the binding's promptChars gives it.

// Placements.
const (
	PlacementInplace = protocol.PlacementInplace
	PlacementTail    = protocol.PlacementTail
	PlacementAuto    = protocol.PlacementAuto
)

// DefaultPlacement is the placement when initialize names none: measured
// on ConcordBench's long coding sessions, auto keeps every recovery of
// inplace at about naive's prompt-cache cost (docs/protocol.md).
const DefaultPlacement = PlacementAuto

// CacheParams are initialize's cache hints.
type CacheParams = protocol.CacheParams

// DefaultCacheTTL is the cache lifetime when initialize's cache.ttlSeconds
// is left out: the prompt cache lifetime
// of the major providers (Anthropic's default, OpenAI's typical).
const DefaultCacheTTL = 5 * time.Minute

// CachePrice is initialize's cache.price.
type CachePrice = protocol.CachePrice

// agentPlace is an agent's model-call clock.
type agentPlace struct {
	calls  int       // syncs so far (one per model call)
	last   time.Time // time of the latest sync
	prompt int       // the prompt size the latest sync reported (promptChars; 0: never)
}

// blockPlace is what the model has of a block. It is in every block, so
// it is kept small: 32-bit counts (a prompt of 2G characters is none) and
// a status code.
type blockPlace struct {
	sentAfter int32      // the agent's calls when the block was registered: unsent while calls == sentAfter
	at        int32      // the agent's reported prompt size then: where its message starts, at the earliest
	reset     bool       // a new result for its anchor: the view goes in place whatever the placement
	deferred  bool       // the in-place view lags the current state (a tail erratum or nothing was sent)
	note      note       // what the latest erratum since its last in-place view says (noteNone: none was sent)
	inplace   statusCode // status of the last in-place view (0, "": the tool's original output)
}

// unsent reports whether b was registered after the agent's latest sync:
// never sent, so in no cached prefix.
func (b *block) unsent() bool { return b.agent.pl.calls == int(b.pl.sentAfter) }

// note is what the latest erratum about a block says, which decides when a
// later change needs a new one (decide) and whether a superseded read's
// copy still holds (copyHolds). Placement keeps it as data, one value per
// block, rather than a flag per kind.
type note uint8

const (
	noteNone     note = iota // no erratum since the copy in place
	noteClaim                // claims current lines or text: any later change may falsify it
	noteSameText             // claims only that the text in place is unchanged: true while it is
	noteWarning              // only warns that the copy is outdated: true whatever changes next
	notePointer              // a superseded read's pointer to the newer read: claims no text
)

// noteFor is the note an erratum that holds as h leaves.
func noteFor(h holds) note {
	switch h {
	case holdsSameText:
		return noteSameText
	case holdsAlways:
		return noteWarning
	}
	return noteClaim
}

// linkPlace says who changed a link since the model's in-place copy.
// place is l's placement record, made on first use: most links never see
// a change attributed or an erratum, and an empty record in every link was
// 80 of its bytes.
func (l *link) place() *linkPlace {
	x := l.ext()
	if x.pl == nil {
		x.pl = &linkPlace{}
	}
	return x.pl
}

// placed is l's placement record to read (an empty one when it has none);
// never written through: writes go through place.
func (l *link) placed() *linkPlace {
	if l.x == nil || l.x.pl == nil {
		return &noLinkPlace
	}
	return l.x.pl
}

var noLinkPlace linkPlace

type linkPlace struct {
	edits   []string // anchors of the agent's own edits, oldest first
	outside uint64   // source transition that first made an outside change (0: none)

	// Since the latest erratum for the link (a later one may only add to it).
	lastOutside, prevOutside uint64 // the latest outside change, and the one before it
	notedAt                  uint64 // the source's transitions when that erratum went out
	notedVersion             string // the source version that erratum speaks of: it holds while the source is there
	goneNoted                cause  // that erratum says the source is deleted, emptied or unreadable: true until that changes
	ownSince                 bool   // the agent's own edits changed it since
}

// srcPlace records the source's latest transition, so an edit reported
// after the watcher already applied it is still the agent's own.
type srcPlace struct {
	trans  uint64 // transitions applied so far
	last   []*block
	lastBy bool // the latest transition was attributed to an edit
}

// editBy names the agent's edit (its tool call) that changed a source.
type editBy struct{ agent, anchor string }

func (m *Manager) now() time.Time {
	if m.clock != nil {
		return m.clock()
	}
	return time.Now()
}

// placeRegistered stamps a new block with the agent's call count. Caller
// holds m.mu.
func placeRegistered(b *block, replaced bool) {
	b.pl.sentAfter, b.pl.at = int32(min(b.agent.pl.calls, math.MaxInt32)), int32(min(b.agent.pl.prompt, math.MaxInt32))
	b.pl.reset = replaced
}

// attribute records who made a change to src that touched blocks: the agent
// whose edit (anchor) it was, or nobody (an outside change). An edit
// reported after the watcher applied it (no change left to apply) takes
// over the latest transition if nothing else happened since. Caller holds
// m.mu.
func (m *Manager) attribute(src *source, changed []*block, agent, anchor string) {
	if len(changed) == 0 {
		if anchor == "" || src.pl.lastBy || src.pl.trans == 0 {
			return
		}
		// The watcher beat the edit's report: the latest transition was it.
		src.pl.lastBy = true
		for _, b := range src.pl.last {
			for _, l := range b.links {
				if l.src != src || b.agent.name != agent || l.placed().lastOutside != src.pl.trans {
					continue
				}
				lp := l.place()
				if lp.outside == src.pl.trans {
					lp.outside = 0
				}
				lp.lastOutside = lp.prevOutside
				lp.edits, lp.ownSince = appendEdit(lp.edits, anchor), true
			}
		}
		return
	}
	src.pl.trans++
	src.pl.last, src.pl.lastBy = changed, anchor != ""
	for _, b := range changed {
		own := anchor != "" && b.agent.name == agent
		for _, l := range b.links {
			if l.src != src {
				continue
			}
			lp := l.place()
			if own {
				lp.edits, lp.ownSince = appendEdit(lp.edits, anchor), true
				continue
			}
			if lp.outside == 0 {
				lp.outside = src.pl.trans
			}
			lp.prevOutside, lp.lastOutside = lp.lastOutside, src.pl.trans
		}
	}
}

func appendEdit(edits []string, anchor string) []string {
	if i := slices.Index(edits, anchor); i >= 0 {
		edits = slices.Delete(edits, i, i+1)
	}
	return append(edits, anchor)
}

type where uint8

const (
	inPlace where = iota
	atTail
	nowhere // nothing to say: a newer read of the same lines follows it
)

// flushDue reports whether this sync places every deferred repair in place:
// a full projection, a rebuilt prefix, or (auto) an expired cache.
func (m *Manager) flushDue(ag *agentState, req protocol.SyncParams, now time.Time) bool {
	switch {
	case m.placement == PlacementInplace:
		return false
	case req.Full || req.PrefixRebuilt:
		return true
	}
	return m.placement == PlacementAuto && ag.pl.calls > 0 && now.Sub(ag.pl.last) > m.cacheTTL
}

// decide places one changed block. Caller holds m.mu.
func (m *Manager) decide(b *block, flush bool) where {

	p := m.placement
	switch {
	case p == PlacementInplace || flush || b.pl.reset:
		return inPlace
	case b.anchor == "":
		return inPlace // an erratum could not name it
	case b.stage == stageSuperseded:
		// The newer read follows it in the prompt, and a reader takes the
		// latest copy: rewriting the old one for that alone only costs.
		if p == PlacementAuto && b.unsent() && b.pl.note == noteNone {
			return inPlace // never sent: the pointer is free and shorter
		}
		return nowhere
	case b.pl.note == noteWarning && b.stage != stageOrphaned && !copyCurrent(b) && !goneEnded(b):
		// An erratum already says the copy is outdated; it stays true. Once
		// the copy is current again (a change reverted), or the source it
		// said was gone is back, the next erratum says what holds now.
		return nowhere
	case b.pl.note == noteSameText && b.stage == stageLive && textUnchanged(b):
		return nowhere // an erratum already says its lines moved, text unchanged; still true
	case p == PlacementAuto && b.unsent() && b.pl.note == noteNone:
		return inPlace // never sent: not in any cached prefix
	}
	return atTail
}

// place turns the changed blocks of one sync into views and errata, and
// advances the agent's call clock. Caller holds m.mu.
func (m *Manager) place(ag *agentState, bs []*block, req protocol.SyncParams) ([]protocol.BlockView, bool) {
	now := m.now()
	flush := m.flushDue(ag, req, now)
	if flush {
		seen := make(map[*block]bool, len(bs))
		for _, b := range bs {
			seen[b] = true
		}
		for b := range ag.all() {
			if b.pl.deferred && !seen[b] {
				bs = append(bs, b)
			}
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].seq < bs[j].seq })
		m.ix.count("flushes")
		if len(bs) > 0 {
			m.ix.bump()
		}
	}
	if req.PromptChars > 0 {
		ag.pl.prompt = req.PromptChars
	}
	out := make([]protocol.BlockView, 0, len(bs))
	var tail tailErrata
	cut := -1 // priced rewrites: where the first one starts (all after it is rewritten anyway)
	for _, b := range bs {
		if b.derivation() != nil {
			out = placeDerived(b, m.decide(b, flush), &tail, out)
			continue
		}
		switch m.decide(b, flush) {
		case inPlace:
			out = append(out, placeInPlace(b))
		case atTail:
			b.pl.deferred = true
			cs, h := erratum(b)
			if len(cs) == 0 {
				continue
			}
			v := view(b)
			if m.rewritePays(b, v, cs, cut) {
				if cut < 0 {
					cut = int(b.pl.at)
				}
				m.ix.count("pricedRewrites")
				out = append(out, placeInPlace(b))
				continue
			}
			b.pl.note = noteFor(h)
			for _, l := range b.links {
				if l.src != nil {
					lp := l.place()
					lp.notedAt, lp.ownSince = l.src.pl.trans, false
					lp.notedVersion, lp.goneNoted = "", causeNone
					if h == holdsAlways && linkGone(l) {
						lp.goneNoted = l.cause
					}
					if l.state == linkOK {
						lp.notedVersion = l.version
					}
				}
			}
			out = tail.add(out, v, cs)
		case nowhere:
			b.pl.deferred = true
		}
	}
	if !flush && m.placement != PlacementInplace {
		out = m.pointers(ag, bs, &tail, out)
	}
	if len(tail.views) > 0 {
		m.ix.countN("errata", len(tail.views))
	}
	tail.render(out)
	ag.pl.calls++
	ag.pl.last = now
	return out, flush
}

// placeInPlace returns b's view for its message in place: the model's copy
// becomes the current state, and what was deferred or noted about it is done.
func placeInPlace(b *block) protocol.BlockView {
	v := view(b)
	for _, l := range b.links {
		if len(v.Sources) > 0 {
			l.showCurrent()
		}
		if l.x != nil {
			l.x.pl = nil
			l.trimExt()
		}
	}
	b.pl = blockPlace{sentAfter: b.pl.sentAfter, at: b.pl.at, inplace: codeOf(v.Status)}
	return v
}

// rewritePays reports whether, at the cache prices of initialize (auto
// only), rewriting b's message in place with its view v costs less than
// the erratum cs.
// In units of input price per character, against the tail:
//
//	(write-read)*I + (write + read*H)*(newLen - oldLen - erratumLen) < 0
//
// The rewrite turns I characters, from b's message to the end of the
// prompt, from cache reads into cache writes once (none when an earlier
// rewrite of this sync, starting at cut, already did). Either way the
// prompt changes size: the erratum is written now and read on every later
// call until the next flush, the rewrite's size change likewise. H, the
// calls left before a flush, is taken to be the calls the agent made so far
// (a session's expected remaining life is its age). I needs sync's
// promptChars, and is at least b's old size. A block an erratum was already
// sent for is never priced in place: that erratum would stay in the prompt,
// after the copy, and could contradict it. Caller holds m.mu.
func (m *Manager) rewritePays(b *block, v protocol.BlockView, cs []clause, cut int) bool {
	p, ag := m.price, b.agent
	if p == nil || m.placement != PlacementAuto || ag.pl.prompt == 0 || b.pl.note != noteNone || b.stage != stageLive {
		return false
	}
	oldLen, newLen := 0, len(v.Notice)
	for _, l := range b.links {
		oldLen += len(l.shownText())
	}
	for _, s := range v.Sources {
		newLen += len(s.Text)
	}
	e := len(renderErrata(cs, make([]int, len(cs)), 1)[0])
	inval := max(ag.pl.prompt-int(b.pl.at), oldLen)
	if cut >= 0 && int(b.pl.at) >= cut {
		inval = 0
	}
	h := float64(max(ag.pl.calls, 1))
	return (p.Write-p.Read)*float64(inval)+(p.Write+p.Read*h)*float64(newLen-oldLen-e) < 0
}

// copyCurrent reports whether b's copy in place is, line for line and at the
// same lines, its current state: nothing about it needs correcting.
func copyCurrent(b *block) bool {
	if !textUnchanged(b) {
		return false
	}
	for _, l := range b.links {
		if !l.whole && l.rng != l.shownRange() {
			return false
		}
	}
	return true
}

// linkGone reports whether l is out because its source was deleted,
// emptied or unreadable (not by a policy's verdict on a change).
func linkGone(l *link) bool {
	return l.state != linkOK && l.cause != causeNone && l.cause != causePolicy
}

// goneEnded reports whether a source the latest erratum about b said was
// gone is back, or gone another way (deleted, now emptied): that warning
// no longer holds.
func goneEnded(b *block) bool {
	for _, l := range b.links {
		if lp := l.placed(); lp.goneNoted != causeNone && (!linkGone(l) || l.cause != lp.goneNoted) {
			return true
		}
	}
	return false
}

// stillShown reports whether every text s shows is still, line for line,
// in the current text of by: then s's copy is true (at most its line
// numbers moved, as by's erratum says) and needs no pointer.
func stillShown(s, by *block) bool {
	for _, sl := range s.links {
		found := false
		for _, bl := range by.links {
			if bl.uri() == sl.uri() && bl.state == linkOK && containsLines(bl.text, sl.shownText()) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// containsLines reports whether part's lines appear in text as whole
// consecutive lines.
func containsLines(text, part string) bool {
	t, p := strings.Split(text, "\n"), strings.Split(part, "\n")
	for i := 0; i+len(p) <= len(t); i++ {
		if slices.Equal(t[i:i+len(p)], p) {
			return true
		}
	}
	return false
}

// maxCoverChain bounds a walk from a superseded read to its cover: chains
// are short; the bound only guards against a cycle.
const maxCoverChain = 64

// cover is coverOf's answer for one read: its cover, how many steps away,
// and whether the read or one on the way is in the sync's set.
type cover struct {
	by      *block
	steps   int
	touched bool
}

// coverOf returns the live read that covers superseded s: its superseding
// read, or the one that superseded that, and so on; and whether s or a
// read on that chain is in set. memo holds one sync's answers: an agent
// that read one file a thousand times has a chain a thousand long, and
// every read on it would walk it again (a sync's cost growing with the
// session). A read's answer is its next read's plus one step.
func (m *Manager) coverOf(s *block, set map[*block]bool, memo map[*block]cover) (*block, bool) {
	c := m.coverStep(s, set, memo)
	if c.by == nil || c.steps > maxCoverChain {
		return nil, c.touched
	}
	return c.by, c.touched
}

func (m *Manager) coverStep(s *block, set map[*block]bool, memo map[*block]cover) cover {
	if c, ok := memo[s]; ok {
		return c
	}
	c := cover{touched: set[s]}
	b := s
	for steps := 1; steps <= maxCoverChain; steps++ {
		next := m.ix.block(b.supersededBy())
		if next == nil {
			c.by = nil
			break
		}
		c.touched = c.touched || set[next]
		if next.status() != protocol.Superseded {
			c.by, c.steps = next, steps
			break
		}
		if r, ok := memo[next]; ok {
			c.by, c.steps, c.touched = r.by, steps+r.steps, c.touched || r.touched
			break
		}
		b = next
	}
	memo[s] = c
	return c
}

// tailErrata collects one sync's views placed at the tail and the clauses
// of their errata.
type tailErrata struct {
	views   []int // indices in the sync's views
	clauses []clause
	owner   []int // view index of each clause
}

// add appends v to out, placed at the tail with clauses cs.
func (t *tailErrata) add(out []protocol.BlockView, v protocol.BlockView, cs []clause) []protocol.BlockView {
	v.Placement = PlacementTail
	for _, c := range cs {
		t.clauses = append(t.clauses, c)
		t.owner = append(t.owner, len(t.views))
	}
	t.views = append(t.views, len(out))
	return append(out, v)
}

// render writes the grouped errata into the views of out (renderErrata).
func (t *tailErrata) render(out []protocol.BlockView) {
	texts := renderErrata(t.clauses, t.owner, len(t.views))
	for i, at := range t.views {
		out[at].Erratum = texts[i]
	}
}

// pointers: a read superseded without a rewrite stays in the prompt as the
// model had it, and a reader may take that copy rather than the newer read
// after it. Whenever the copy (or the latest erratum about it) stops being
// true, one clause points from it to the newer read that covers it, which
// carries its own corrections; the pointer claims no text, so it stays true
// and is sent once. A superseded read is looked at when it, its cover or a
// read between them is among bs (superseded or changed in this sync):
// nothing else can falsify its copy. Caller holds m.mu.
func (m *Manager) pointers(ag *agentState, bs []*block, tail *tailErrata, out []protocol.BlockView) []protocol.BlockView {
	if len(bs) == 0 {
		return out // a quiet sync: nothing can have falsified a copy
	}
	inSync := make(map[*block]bool, len(bs))
	for _, b := range bs {
		inSync[b] = true
	}
	// The reads that may need a pointer: superseded, their copy in the
	// prompt, nothing said of them yet, and their chain to their cover
	// passing through bs. Those chains are bs and what its blocks
	// superseded, transitively (covers): only they are looked at, in audit
	// order; the audit trail holds up to a thousand others.
	near := maps.Clone(inSync)
	stack := slices.Clone(bs)
	for len(stack) > 0 {
		b := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range ag.covers[b] {
			if !near[s] {
				near[s] = true
				stack = append(stack, s)
			}
		}
	}
	candidate := func(s *block) bool {
		return s != nil && near[s] && s.stage == stageSuperseded && s.anchor != "" && s.pl.note != notePointer && s.pl.note != noteWarning && s.pl.deferred
	}
	// Newest first, so that each read's cover is its next read's, known.
	memo := make(map[*block]cover, len(near))
	for i := len(ag.audit) - 1; i >= 0; i-- {
		if s := ag.audit[i]; candidate(s) {
			m.coverStep(s, inSync, memo)
		}
	}
	for _, s := range ag.audit {
		if !candidate(s) {
			continue
		}
		switch s.pl.inplace.status() {
		case protocol.Superseded, protocol.Invalid, protocol.Stale:
			if s.pl.note == noteNone {
				continue // in place it shows a notice, or text already marked as possibly outdated
			}
		}
		by, touched := m.coverOf(s, inSync, memo)
		if by == nil || !touched || copyHolds(s, by) {
			continue
		}
		s.pl.note = notePointer
		out = tail.add(out, view(s), erratumSuperseded(s, by))
	}
	return out
}

// copyHolds reports whether what the model has of superseded s is still
// true, judged against by, the live read that covers it.
func copyHolds(s, by *block) bool {
	switch {
	case s.pl.note == noteSameText:
		return stillShown(s, by) // its erratum claims only that the text is unchanged
	case s.pl.note != noteNone:
		// Its erratum claimed the lines and text of one version of the
		// source: true while the source is still at that version.
		for _, sl := range s.links {
			if !versionHeld(sl, by) {
				return false
			}
		}
		return true
	}
	for _, sl := range s.links {
		if !shownAt(sl, by) {
			return false
		}
	}
	return true
}

// versionHeld reports whether the latest erratum about sl spoke of the
// version of the source a live link of by is at now.
func versionHeld(sl *link, by *block) bool {
	for _, bl := range by.links {
		if bl.uri() == sl.uri() && bl.state == linkOK && sl.placed().notedVersion != "" && bl.version == sl.placed().notedVersion {
			return true
		}
	}
	return false
}

// shownAt reports whether a live link of by has, at the lines sl's copy
// names, exactly the text that copy shows.
func shownAt(sl *link, by *block) bool {
	for _, bl := range by.links {
		if bl.uri() != sl.uri() || bl.state != linkOK || !bl.tracked {
			continue
		}
		switch {
		case sl.whole:
			if bl.whole && bl.text == sl.shownText() {
				return true
			}
		case bl.whole:
			cur := locator.SplitLines(bl.text)
			if r := sl.shownRange(); r.End <= len(cur) && slices.Equal(cur[r.Start-1:r.End], spanLines(sl.shownText(), r)) {
				return true
			}
		case bl.rng.Start <= sl.shownRange().Start && sl.shownRange().End <= bl.rng.End:
			cur := spanLines(bl.text, bl.rng)
			from, to := sl.shownRange().Start-bl.rng.Start, sl.shownRange().End-bl.rng.Start+1
			if to <= len(cur) && slices.Equal(cur[from:to], spanLines(sl.shownText(), sl.shownRange())) {
				return true
			}
		}
	}
	return false
}
