package runtime

import (
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/concord-ctx/concord/locator"
	"github.com/concord-ctx/concord/protocol"
)

// index is the manager's state: sources with their links, blocks, agents,
// and the block lifecycle (register, supersede, unlink, retire, forget,
// trim the audit trail). It has no lock of its own and does no I/O: its
// guard is Manager.mu, held by every caller of every method, so the methods
// are plain data-structure operations. The Manager changes it only through
// them.
type index struct {
	sources  map[string]*source
	blocks   blockTable
	agents   map[string]*agentState
	prelude  map[string]agentPlace // the call clock of agents that synced before they observed anything
	seq      uint64
	gen      uint64
	recon    map[string]int
	verifies int
	notify   map[string]struct{} // agents owed an OnChange call
	ageUsed  bool                // some policy layer sets maxAgeTurns > 0
	auditMax int
	unwatch  []*source // sources that lost links; watches synced after unlock
}

func newIndex(auditMax int) index {
	if auditMax <= 0 {
		auditMax = DefaultAuditLimit
	}
	return index{
		sources:  map[string]*source{},
		agents:   map[string]*agentState{},
		prelude:  map[string]agentPlace{},
		recon:    map[string]int{},
		notify:   map[string]struct{}{},
		auditMax: auditMax,
	}
}

// release drops blocks by id, or by the agent's anchors; see
// Manager.Release. An unknown or foreign id fails the whole request before
// anything is dropped.
func (ix *index) release(req protocol.ReleaseParams) (protocol.ReleaseResult, error) {
	var bs []*block
	seen := map[*block]bool{}
	for i, id := range req.Blocks {
		b := ix.block(id)
		if b == nil {
			return protocol.ReleaseResult{}, unknownBlock(i, "%q", id)
		}
		if req.Agent != "" && b.agent.name != req.Agent {
			// One agent's binding must not drop another agent's tracking.
			return protocol.ReleaseResult{}, unknownBlock(i, "%q belongs to agent %q, not %q", id, b.agent.name, req.Agent)
		}
		if !seen[b] {
			seen[b] = true
			bs = append(bs, b)
		}
	}
	if ag := ix.agents[req.Agent]; ag != nil {
		for _, a := range req.Anchors {
			if b := ag.byAnchor[a]; b != nil && !seen[b] {
				seen[b] = true
				bs = append(bs, b)
			}
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].seq < bs[j].seq })
	res := protocol.ReleaseResult{Released: make([]string, 0, len(bs))}
	for _, b := range bs {
		ix.drop(b, "released")
		res.Released = append(res.Released, b.id())
	}
	return res, nil
}

// source returns the entry for canonical id, creating it for adapter a.
func (ix *index) source(id string, a Adapter) *source {
	if s, ok := ix.sources[id]; ok {
		return s
	}
	s := &source{id: id, adapter: a, display: id, scheme: a.Scheme()}
	if s.scheme == "*" {
		s.scheme = uriScheme(id)
	}
	if d, ok := a.(Displayer); ok {
		s.display = d.Display(id)
	}
	if r, ok := a.(Reporter); ok {
		s.reporter = r
	}
	ix.sources[id] = s
	return s
}

// agent returns the agent's state, creating it.
func (ix *index) agent(name string) *agentState {
	ag := ix.agents[name]
	if ag == nil {
		ag = &agentState{name: name, byAnchor: map[string]*block{}, srcRefs: map[*source]int{}}
		ag.pl = ix.prelude[name]
		delete(ix.prelude, name)
		ix.agents[name] = ag
	}
	return ag
}

// replaceAnchor drops the agent's block of anchor: the same tool result
// registered again replaces the old block outright. It reports whether
// there was one.
func (ix *index) replaceAnchor(ag *agentState, anchor string) bool {
	old := ag.byAnchor[anchor]
	if old != nil {
		ix.drop(old, "replaced")
	}
	return old != nil
}

// drop takes b out of the context (released, or replaced by a new result
// for its anchor): unlinked, what it superseded retired, forgotten.
func (ix *index) drop(b *block, why string) {
	ix.unlink(b)
	ix.dropDerived(b)
	ix.retireSuperseded(b)
	ix.enter(b, stageReleased)
	ix.forget(b)
	ix.count(why)
}

type srcState uint8

const (
	statePresent srcState = iota
	stateDeleted
	stateUnreadable
)

// source is one source (file, keyed resource) with live links. Its last known
// text is kept once, shared by all its blocks, so a change is one diff plus a
// batch locate.
type source struct {
	id       string
	scheme   string // policy type: the adapter's scheme, or the URI's for the "*" adapter
	display  string // for notices: plain path for files, the URI otherwise
	adapter  Adapter
	reporter Reporter // non-nil for client-reported (keyed) sources

	io     sync.Mutex // serialises read+apply so content is applied in read order
	readAt uint64     // guarded by io: Manager.reads when the last read of a verify began

	// guarded by Manager.mu
	state   srcState
	known   bool // text is the content at version
	text    string
	lines   []string // lazily split from text, sharing its memory
	version string
	stamp   string
	readErr string
	nlinks  int     // links in the index
	order   []*link // its links in block order, with unlinked ones not yet compacted out (ordered)
	epoch   uint64  // reconciliations so far: each may move link ranges (spanIndex)
	pins    int     // observations loading this source; keeps its text alive

	pl srcPlace // guarded by Manager.mu

	// provs are the ranges of it that derived blocks were built from
	// (derived.go): they keep it watched, not its text. Guarded by
	// Manager.mu.
	provs []*prov

	watchMu sync.Mutex // orders Watch/Unwatch calls
	watched bool       // guarded by watchMu
}

// addLink indexes l in s, after every link already there. Unlinked links
// leave s.order lazily; when they outnumber the live ones it is compacted
// here, or a session that re-reads the same lines without a change to
// reconcile would keep every superseded link (and its block) alive.
func (s *source) addLink(l *link) {
	s.nlinks++
	if len(s.order) >= 2*s.nlinks+16 {
		s.compact()
	}
	s.order = append(s.order, l)
}

// ordered returns s's live links in block order (block seq, then link
// index), so results never depend on map order. Links are kept in that
// order as they are added (a new block has the highest seq), so this only
// compacts out the unlinked ones: on a file with tens of thousands of
// links a sort was most of a change's cost.
func (s *source) ordered() []*link {
	s.compact()
	return slices.Clone(s.order)
}

// compact drops the unlinked links from s.order.
func (s *source) compact() {
	if len(s.order) == s.nlinks {
		return
	}
	live := s.order[:0]
	for _, l := range s.order {
		if l.src == s {
			live = append(live, l)
		}
	}
	clear(s.order[len(live):])
	s.order = live
}

func (s *source) getLines() []string {
	if s.lines == nil && s.text != "" {
		s.lines = locator.SplitLines(s.text)
	}
	return s.lines
}

// wanted reports whether the source should be watched: links or loads
// need it, or a summary was built from it.
func (s *source) wanted() bool { return s.nlinks > 0 || s.pins > 0 || len(s.provs) > 0 }

// tracked reports whether changes to the source matter: it has links, or
// a summary was built from it.
func (s *source) tracked() bool { return s.nlinks > 0 || len(s.provs) > 0 }

// textless reports whether only derived blocks depend on the source: it is
// watched and judged on every change, but its text is not kept (a summary
// costs no more than the lines it was built from). Its stamp and version
// stay, so an unchanged source is not read again.
func (s *source) textless() bool { return s.nlinks == 0 && s.pins == 0 && len(s.provs) > 0 }

func (s *source) free() {
	switch {
	case s.textless():
		s.text, s.lines, s.known = "", nil, false
	case !s.wanted():
		s.text, s.lines, s.known, s.stamp, s.version = "", nil, false, "", ""
	}
}

type linkState uint8

const (
	linkOK      linkState = iota
	linkStale             // annotated: old text kept, with a warning
	linkInvalid           // omitted: notice only
)

type cause uint8

const (
	causeNone cause = iota
	causePolicy
	causeDeleted
	causeUnreadable
)

// link is one source link of a block. rng is the range the model was last
// shown; while tracked it is also where that text sits in the source's
// current text (text == current lines at rng).
//
// A session holds one link per block for tens of thousands of blocks, so the
// link keeps inline only what every link uses; what few links ever have (a
// notice, an anchor, a placement record, the model's copy once it differs
// from text) lives in linkExtra, made on demand.
type link struct {
	block   *block
	src     *source // nil once the block left the index (audit only; linkExtra.from keeps the source)
	rng     Range
	text    string // model-visible text
	version string // version text reflects
	// shownVersion is the version the model last saw (see shownText).
	shownVersion string
	x            *linkExtra // nil until one of its fields is set
	state        linkState
	cause        cause
	whole        bool
	tracked      bool
	patched      bool // text or lines differ from the observation
	tail         bool // the read reached the source's last line: it covers lines appended later
}

// linkExtra holds a link's rarely set fields: most links of a quiet session
// have none of them, and inline they were most of a link's bytes.
type linkExtra struct {
	anchor *locator.Anchor // kept while the source is gone, to find the span again
	notice string
	from   *source    // the source, once the link left the index: its uri and display name
	pl     *linkPlace // nil until placement records something (place)
	// The model's copy (shown, shownRng), held apart only while it differs
	// from the link's text and range: what the model last saw of the link,
	// the observation, then each view a sync delivered. Annotate keeps it,
	// not a repair that was made but never delivered.
	shown    string
	shownRng Range
	held     bool
}

// ext is l's extra fields, made on first use.
func (l *link) ext() *linkExtra {
	if l.x == nil {
		l.x = &linkExtra{}
	}
	return l.x
}

// trimExt drops l's extra fields once none is set.
func (l *link) trimExt() {
	if l.x != nil && *l.x == (linkExtra{}) {
		l.x = nil
	}
}

func (l *link) notice() string {
	if l.x == nil {
		return ""
	}
	return l.x.notice
}

func (l *link) setNotice(n string) {
	if n != "" || l.x != nil {
		l.ext().notice = n
		l.trimExt()
	}
}

func (l *link) anchor() *locator.Anchor {
	if l.x == nil {
		return nil
	}
	return l.x.anchor
}

func (l *link) setAnchor(a *locator.Anchor) {
	if a != nil || l.x != nil {
		l.ext().anchor = a
		l.trimExt()
	}
}

// uri is the canonical id of l's source, also once l left the index.
func (l *link) uri() string {
	if l.src != nil {
		return l.src.id
	}
	return l.x.from.id
}

// shownText and shownRange are the model's copy of l: its text and range
// unless a change since the copy was shown holds the copy apart.
func (l *link) shownText() string {
	if l.x != nil && l.x.held {
		return l.x.shown
	}
	return l.text
}

func (l *link) shownRange() Range {
	if l.x != nil && l.x.held {
		return l.x.shownRng
	}
	return l.rng
}

// holdShown keeps the model's copy apart before l's text or range change.
func (l *link) holdShown() {
	if l.x == nil || !l.x.held {
		x := l.ext()
		x.shown, x.shownRng, x.held = l.text, l.rng, true
	}
}

// settleShown lets the copy held apart go once l's text and range are it
// again (nothing changed, or a change was undone).
func (l *link) settleShown() {
	if x := l.x; x != nil && x.held && x.shownRng == l.rng && x.shown == l.text {
		x.shown, x.shownRng, x.held = "", Range{}, false
		l.trimExt()
	}
}

// showCurrent records that the model now has l's current text.
func (l *link) showCurrent() {
	l.shownVersion = l.version
	if x := l.x; x != nil && x.held {
		x.shown, x.shownRng, x.held = "", Range{}, false
	}
}

// block is one registered observation. Like link, it keeps inline what
// every block uses, and its rarely set fields in blockExtra. Its first link
// is part of it: most reads have one source, and a single link then needs
// no allocation of its own, nor one for the slice (links points at one).
type block struct {
	seq    uint64 // its id is "b" + seq (id)
	agent  *agentState
	anchor string
	turn   int
	links  []*link
	one    [1]*link    // links' array for a single link
	x      *blockExtra // nil until one of its fields is set
	st     statusCode
	stage  stage // the block's lifecycle stage (lifecycle.go); status follows it
	aged   bool
	pl     blockPlace
	first  link // links[0]
}

// blockExtra holds a block's rarely set fields: its own policy (most reads
// take the session's), and the texts only a change, supersession or age
// sets.
type blockExtra struct {
	// view renders the block's in-place views (a block registered by the
	// intake); retired{} once the block left stageLive: a superseded or
	// released block is never rendered again, so its renderer, and what the
	// renderer holds of the tool's output, goes with it (a superseded one
	// still shows its notice).
	view         View
	policy       *protocol.Policy
	notice       string
	reason       string
	supersededBy string
	ageNotice    string
	// derived is a compaction summary's state (derived.go); nil for a
	// block of tool output.
	derived *derivation
}

// id is the block's wire id.
func (b *block) id() string { return "b" + strconv.FormatUint(b.seq, 10) }

// seqOf is the seq of block id, 0 when id is no block's.
func seqOf(id string) uint64 {
	d, ok := strings.CutPrefix(id, "b")
	n, err := strconv.ParseUint(d, 10, 64)
	if !ok || err != nil || strconv.FormatUint(n, 10) != d {
		return 0
	}
	return n
}

// ext is b's extra fields to write, made on first use.
func (b *block) ext() *blockExtra {
	if b.x == nil {
		b.x = &blockExtra{}
	}
	return b.x
}

// policy, notice, reason, supersededBy and ageNotice read b's extra
// fields (zero when it has none).
func (b *block) policy() *protocol.Policy {
	if b.x == nil {
		return nil
	}
	return b.x.policy
}

func (b *block) notice() string {
	if b.x == nil {
		return ""
	}
	return b.x.notice
}

func (b *block) reason() string {
	if b.x == nil {
		return ""
	}
	return b.x.reason
}

func (b *block) supersededBy() string {
	if b.x == nil {
		return ""
	}
	return b.x.supersededBy
}

func (b *block) ageNotice() string {
	if b.x == nil {
		return ""
	}
	return b.x.ageNotice
}

// setNotice sets b's notice, making its extra fields only for a notice to keep.
func (b *block) setNotice(n string) {
	if n != "" || b.x != nil {
		b.ext().notice = n
	}
}

// statusCode is a block's protocol.Status in one byte (0: none, "").
type statusCode uint8

var statusNames = [...]protocol.Status{"", protocol.Valid, protocol.Patched, protocol.Stale, protocol.Invalid, protocol.Superseded, protocol.Released, protocol.DerivedStale}

func codeOf(s protocol.Status) statusCode {
	for i, n := range statusNames {
		if n == s {
			return statusCode(i)
		}
	}
	panic("runtime: no status code for " + string(s))
}

func (c statusCode) status() protocol.Status { return statusNames[c] }

func (b *block) status() protocol.Status { return b.st.status() }

func (b *block) setStatus(s protocol.Status) { b.st = codeOf(s) }

type agentState struct {
	name string
	turn int
	// byAnchor and loose are the agent's blocks (all): the one of each
	// anchor (a new result for an anchor replaces the old block,
	// replaceAnchor), and those registered without one.
	byAnchor map[string]*block
	loose    map[*block]struct{}
	dirty    map[*block]struct{}
	srcRefs  map[*source]int        // live links per source: the sources a sync must wait for
	provRefs map[*source]int        // ranges of its derived blocks per source: a sync waits for them too
	bySrc    map[*source][]*link    // the agent's links per source, in block order, unlinked ones not yet compacted out
	spans    map[*source]*spanIndex // the agent's ranged links per source by first line, for supersede (spanIndex)
	audit    []*block               // superseded blocks, oldest first (bounded by Manager.auditMax)
	// covers are, for a block, the blocks it superseded that still point
	// at it (retireSuperseded's answer, without scanning the audit trail).
	covers map[*block][]*block
	pl     agentPlace
}

// cover records that by superseded s.
func (ag *agentState) cover(by, s *block) {
	if ag.covers == nil {
		ag.covers = map[*block][]*block{}
	}
	ag.covers[by] = append(ag.covers[by], s)
}

// uncover forgets that by superseded s (s is forgotten).
func (ag *agentState) uncover(by, s *block) {
	list := ag.covers[by]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(ag.covers, by)
	} else {
		ag.covers[by] = list
	}
}

// all yields every block of the agent, in no particular order.
func (ag *agentState) all() iter.Seq[*block] {
	return func(yield func(*block) bool) {
		for _, b := range ag.byAnchor {
			if !yield(b) {
				return
			}
		}
		for b := range ag.loose {
			if !yield(b) {
				return
			}
		}
	}
}

// addLink counts l among its agent's links on its source (compacting the
// list when unlinked ones outnumber the live, as source.addLink does).
func (ag *agentState) addLink(l *link) {
	ag.srcRefs[l.src]++
	if ag.bySrc == nil {
		ag.bySrc = map[*source][]*link{}
	}
	if len(ag.bySrc[l.src]) >= 2*ag.srcRefs[l.src]+16 {
		ag.linksOn(l.src)
	}
	ag.bySrc[l.src] = append(ag.bySrc[l.src], l)
	if si := ag.spans[l.src]; si != nil && si.epoch == l.src.epoch && !l.whole {
		si.insert(l)
	}
}

// spanIndex is an agent's ranged links on one source sorted by first line:
// supersede finds the older reads inside a new one's range by a binary
// search instead of looking at every read of the agent on the source (a
// session that reads one file a thousand times over). It holds while no
// reconciliation moved the ranges (epoch); a stale one is rebuilt once
// enough observations needed it to pay for the sort, and answered by the
// plain scan until then. Unlinked links stay in it until a rebuild.
type spanIndex struct {
	links []*link
	epoch uint64 // the source's epoch it was sorted at
	stale int    // scans since it went stale
}

// spanIndexMin is the agent's links on a source below which a scan is as
// cheap as the index; spanRebuildAfter, the scans a stale index waits.
// (Variables: a test runs the same session with and without the index.)
var (
	spanIndexMin     = 64
	spanRebuildAfter = 8
)

func (si *spanIndex) insert(l *link) {
	i := sort.Search(len(si.links), func(i int) bool { return si.links[i].rng.Start > l.rng.Start })
	si.links = slices.Insert(si.links, i, l)
}

// spanCands adds to cands the agent's older live blocks with a link on s
// inside one of b's links on s (linkInside), as the scan of every link
// would. Caller holds Manager.mu.
func (ag *agentState) spanCands(s *source, b *block, cands map[*block]struct{}) {
	cand := func(ol *link) {
		ob := ol.block
		if ol.src == s && ob != b && ob.seq < b.seq && ob.stage == stageLive && linkInside(ol, b) {
			cands[ob] = struct{}{}
		}
	}
	si := ag.index(s, b)
	if si == nil {
		for _, ol := range ag.linksOn(s) {
			cand(ol)
		}
		return
	}
	for _, nl := range b.links {
		if nl.src != s {
			continue
		}
		i := sort.Search(len(si.links), func(i int) bool { return si.links[i].rng.Start >= nl.rng.Start })
		for ; i < len(si.links) && si.links[i].rng.Start <= nl.rng.End; i++ {
			if ol := si.links[i]; ol.rng.End <= nl.rng.End {
				cand(ol)
			}
		}
	}
}

// index is the agent's span index on s for a query by b, or nil when the
// scan must answer: few links, a whole read in b (every read of the source
// lies inside it), or a stale index not yet worth rebuilding.
func (ag *agentState) index(s *source, b *block) *spanIndex {
	n := ag.srcRefs[s]
	if n < spanIndexMin {
		return nil
	}
	for _, nl := range b.links {
		if nl.src == s && nl.whole {
			return nil
		}
	}
	si := ag.spans[s]
	if si != nil && si.epoch == s.epoch && len(si.links) <= 2*n+spanIndexMin {
		return si
	}
	if si != nil && si.epoch != s.epoch && si.stale < spanRebuildAfter {
		si.stale++
		return nil
	}
	if ag.spans == nil {
		ag.spans = map[*source]*spanIndex{}
	}
	si = &spanIndex{epoch: s.epoch}
	for _, l := range ag.linksOn(s) {
		if !l.whole {
			si.links = append(si.links, l)
		}
	}
	sort.SliceStable(si.links, func(i, j int) bool { return si.links[i].rng.Start < si.links[j].rng.Start })
	ag.spans[s] = si
	return si
}

// linksOn returns the agent's live links on s, compacting out unlinked ones.
func (ag *agentState) linksOn(s *source) []*link {
	ls := ag.bySrc[s]
	if len(ls) == ag.srcRefs[s] {
		return ls
	}
	live := ls[:0]
	for _, l := range ls {
		if l.src == s {
			live = append(live, l)
		}
	}
	clear(ls[len(live):])
	if len(live) == 0 {
		delete(ag.bySrc, s)
		return nil
	}
	ag.bySrc[s] = live
	return live
}

// supersede retires older blocks of the same agent whose every link lies
// inside a link of b. Only the agent's own links on b's sources are looked
// at (other agents' reads never compete). Caller holds Manager.mu.
func (ix *index) supersede(b *block) []string {
	cands := map[*block]struct{}{}
	seen := make(map[*source]bool, 1)
	for _, l := range b.links {
		if seen[l.src] {
			continue // a grep block links one source many times: scan it once
		}
		seen[l.src] = true
		b.agent.spanCands(l.src, b, cands)
	}
	var old []*block
	for ob := range cands {
		if contained(ob, b) {
			old = append(old, ob)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].seq < old[j].seq })
	ids := make([]string, 0, len(old))
	for _, ob := range old {
		ob.setNotice(noticeSuperseded(ob, b))
		ix.enter(ob, stageSuperseded)
		n := ob.ext()
		n.supersededBy, n.reason = b.id(), "superseded by "+b.id()
		b.agent.cover(b, ob)
		ix.unlink(ob)
		ix.count("superseded")
		ix.markReported(ob) // the observe's result lists it: no hint to its own agent
		ob.agent.audit = append(ob.agent.audit, ob)
		ids = append(ids, ob.id())
	}
	ix.trimAudit(b.agent)
	return ids
}

func contained(ob, nb *block) bool {
	for _, ol := range ob.links {
		if !linkInside(ol, nb) {
			return false
		}
	}
	return true
}

// linkInside reports whether ol lies inside a link of nb.
func linkInside(ol *link, nb *block) bool {
	for _, nl := range nb.links {
		if nl.src == ol.src && (nl.whole || !ol.whole && nl.rng.Start <= ol.rng.Start && ol.rng.End <= nl.rng.End) {
			return true
		}
	}
	return false
}

// unlink removes b's links from the source index, keeping a small audit
// record (uri, lines, version) and dropping texts. Caller holds Manager.mu; the
// caller syncs watches afterwards.
func (ix *index) unlink(b *block) {
	for _, l := range b.links {
		if l.src == nil {
			continue
		}
		l.src.nlinks--
		l.src.free()
		if ag := b.agent; ag.srcRefs[l.src] <= 1 {
			delete(ag.srcRefs, l.src)
			delete(ag.spans, l.src)
		} else {
			ag.srcRefs[l.src]--
		}
		ix.unwatch = append(ix.unwatch, l.src)
		l.holdShown() // the model's copy outlives the text
		x := l.ext()
		x.from, x.anchor = l.src, nil
		l.src, l.text = nil, ""
	}
}

// retireSuperseded runs when b leaves the context (released, or replaced by a
// new result for its anchor). The blocks b superseded show only a notice that
// "a newer read is in the context": if b was itself superseded, the newer
// read that replaced b covers them too; otherwise nothing covers them any
// more and they become invalid, asking for a re-read (their text is gone).
// Caller holds Manager.mu, before changing b's status.
func (ix *index) retireSuperseded(b *block) {
	var by *block
	if b.stage == stageSuperseded {
		by = ix.block(b.supersededBy())
	}
	ag, bid := b.agent, b.id()
	covered := ag.covers[b]
	delete(ag.covers, b)
	for _, s := range covered {
		if s.stage != stageSuperseded || s.supersededBy() != bid {
			continue
		}
		n := s.ext()
		if by != nil {
			ix.enter(s, stageSuperseded) // re-pointed to the read that covers b
			n.supersededBy, n.reason = by.id(), "superseded by "+by.id()
			n.notice = noticeSuperseded(s, by)
			ag.cover(by, s)
		} else {
			ix.enter(s, stageOrphaned)
			n.supersededBy = ""
			n.notice = noticeOrphaned(s)
			n.reason = "the newer read " + bid + " left the context"
			ix.count("orphaned")
			ix.retireSuperseded(s) // what s superseded lost its cover too
		}
		ix.markDirty(s)
	}
}

// forget drops a block from every index. Caller holds Manager.mu and has unlinked it.
func (ix *index) forget(b *block) {
	ag := b.agent
	if id := b.supersededBy(); id != "" {
		if by := ix.block(id); by != nil {
			ag.uncover(by, b)
		}
	}
	delete(ag.covers, b) // what still points at b stays superseded by it, as shown
	ix.blocks.remove(b.seq)
	delete(ag.dirty, b)
	if b.anchor == "" {
		delete(ag.loose, b)
	} else if ag.byAnchor[b.anchor] == b {
		delete(ag.byAnchor, b.anchor)
	}
}

// trimAudit keeps an agent's audit trail of superseded blocks within
// ix.auditMax. Only blocks a sync already reported are forgotten: an
// unreported one still owes its agent the notice that hides the old read.
// Caller holds Manager.mu.
func (ix *index) trimAudit(ag *agentState) {
	for len(ag.audit) > ix.auditMax {
		b := ag.audit[0]
		if b.stage == stageSuperseded || b.stage == stageOrphaned {
			if _, owed := ag.dirty[b]; owed {
				return
			}
			ix.forget(b)
			ix.count("auditDropped")
		}
		ag.audit[0] = nil
		ag.audit = ag.audit[1:]
	}
}

// markDirty records that b's model-visible state changed, and owes its
// agent a hint (blocksChanged).
func (ix *index) markDirty(b *block) {
	ix.markReported(b)
	ix.notify[b.agent.name] = struct{}{}
}

// markReported is markDirty for a change the agent's own request answers
// (an observe's result lists the blocks it superseded): the next sync
// carries it, and no hint is owed for it.
func (ix *index) markReported(b *block) {
	if b.agent.dirty == nil {
		b.agent.dirty = map[*block]struct{}{}
	}
	b.agent.dirty[b] = struct{}{}
	ix.gen++
}

func (ix *index) count(k string) { ix.recon[k]++ }

// countN adds n to counter k.
func (ix *index) countN(k string, n int) { ix.recon[k] += n }

// newBlock makes the agent's next block with n empty links (not yet
// indexed: addBlock). The first link is part of the block.
func (ix *index) newBlock(ag *agentState, anchor string, turn, n int) *block {
	ix.seq++
	b := &block{seq: ix.seq, agent: ag, anchor: anchor, turn: turn, st: codeOf(protocol.Valid)}
	b.links = b.one[:]
	if n != 1 {
		b.links = make([]*link, n)
		for i := 1; i < n; i++ {
			b.links[i] = &link{}
		}
	}
	if n > 0 {
		b.links[0] = &b.first
	}
	return b
}

// addBlock indexes b: by id, for its agent, and each link in its source
// (source -> blocks, across agents). Its anchor is indexed apart
// (addAnchor), after the anchor's earlier blocks are replaced.
func (ix *index) addBlock(b *block) {
	for _, l := range b.links {
		l.src.addLink(l)
		b.agent.addLink(l)
	}
	ix.blocks.add(b)
	if b.anchor == "" {
		if b.agent.loose == nil {
			b.agent.loose = map[*block]struct{}{}
		}
		b.agent.loose[b] = struct{}{}
	}
}

// addAnchor indexes b under its agent's anchor, whose earlier block is
// replaced by now.
func (ix *index) addAnchor(b *block) {
	b.agent.byAnchor[b.anchor] = b
}

// known returns the source with canonical id, nil when none is indexed.
func (ix *index) known(id string) *source { return ix.sources[id] }

// aging reports whether any policy layer sets an age limit.
func (ix *index) aging() bool { return ix.ageUsed }

// block returns the block with id, nil when unknown or forgotten.
func (ix *index) block(id string) *block { return ix.blocks.get(seqOf(id)) }

// useAge records that some policy layer sets an age limit, so syncs age blocks.
func (ix *index) useAge(p *protocol.Policy) {
	ix.ageUsed = ix.ageUsed || p.MaxAgeTurns != nil && *p.MaxAgeTurns > 0
}

// bump moves the generation: the model-visible projection changed.
func (ix *index) bump() { ix.gen++ }

// generation is the current projection generation.
func (ix *index) generation() uint64 { return ix.gen }

// verified counts a verify pass (one per projected sync).
func (ix *index) verified() { ix.verifies++ }

// notified drops agent from the agents owed an OnChange call: its sync
// just gave it the projection.
func (ix *index) notified(agent string) { delete(ix.notify, agent) }

// takeNotify returns the agents owed an OnChange call (but exclude),
// clearing the set.
func (ix *index) takeNotify(exclude string) []string {
	if len(ix.notify) == 0 {
		return nil
	}
	agents := make([]string, 0, len(ix.notify))
	for a := range ix.notify {
		if a != exclude {
			agents = append(agents, a)
		}
	}
	ix.notify = map[string]struct{}{}
	return agents
}

// takeUnwatch returns the sources that lost links since the last call, for
// watch syncing outside the lock.
func (ix *index) takeUnwatch() []*source {
	srcs := ix.unwatch
	ix.unwatch = nil
	return srcs
}

// stats counts the index for Stats.
func (ix *index) stats() protocol.StatsResult {
	st := protocol.StatsResult{Blocks: map[protocol.Status]int{}, Reconciliations: map[string]int{}, VerifyPasses: ix.verifies, Agents: len(ix.agents)}
	for k, v := range ix.recon {
		st.Reconciliations[k] = v
	}
	for b := range ix.blocks.all() {
		st.Blocks[b.status()]++
		if d := b.derivation(); d != nil {
			st.BytesHeld += d.bytes()
		}
		for _, l := range b.links {
			if l.src != nil && l.whole && sharesBytes(l.text, l.src.text) {
				continue // shares the source's copy
			}
			st.BytesHeld += int64(len(l.text))
		}
	}
	for _, s := range ix.sources {
		if s.tracked() {
			st.Sources++
		}
		st.BytesHeld += int64(len(s.text))
	}
	return st
}
