package runtime

import (
	"regexp"

	"github.com/concord-ctx/concord/protocol"

	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concord-ctx/concord/locator"
)

// The runtime invariant, checked from a binding's point of view: right after
// a sync (which verifies the agent's sources first), every anchor whose latest
// view is valid or patched shows exactly the current content of its sources
// at the view's ranges. An anchor that never received a view still shows the
// tool's original output, so "no delta" must mean "still true". Other views
// are well formed (stale and invalid carry a notice, invalid and superseded
// carry no sources), a delta never gives one anchor two blocks, a full sync
// agrees with the accumulated deltas, and Stats and watches match the blocks
// the script holds.
//
// Every script runs under each repair placement, auto also with cache
// prices (syncs then report a prompt size that grows with each read and
// call, so some repairs are priced in place). Under tail and auto the
// binding is modelled as the prompt it builds: each anchor's message shows
// its latest in-place view (or the tool's output), and a view placed at the
// tail is an erratum note after the newest message; a flush drops the notes.
// The invariant then reads: every stale observation the model can see is
// either repaired in place or followed by an erratum that names it (the
// latest note about a block is checked as its view), or is a read that a
// newer read of the same lines, still held, follows.
//
// Scripts are decoded from bytes, so the fuzzer and the seeded random test
// share one interpreter.

// FuzzManagerInvariant runs fuzz-decoded scripts over 1-3 in-memory sources
// and 1-2 agents.
func FuzzManagerInvariant(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 3, 0, 10, 0, 0, 0, 2, 1, 1, 10, 0})
	f.Add([]byte("observe a range, edit it, sync; supersede it; delete the source and bring it back"))
	rnd := rand.New(rand.NewPCG(7, 11))
	for range 8 {
		f.Add(randomScript(rnd))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range placements {
			runScript(t, data, p)
		}
	})
}

// TestManagerInvariantRandom runs seeded random scripts, so CI exercises the
// invariant without -fuzz.
func TestManagerInvariantRandom(t *testing.T) {
	n, seed := 2000, uint64(2026)
	if testing.Short() {
		n = 200
	}
	// For longer hunts: CONCORD_INVARIANT_SCRIPTS=100000 CONCORD_INVARIANT_SEED=7.
	if v, err := strconv.Atoi(os.Getenv("CONCORD_INVARIANT_SCRIPTS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("CONCORD_INVARIANT_SEED"), 10, 64); err == nil {
		seed = v
	}
	rnd := rand.New(rand.NewPCG(seed, 12))
	for i := range n {
		data := randomScript(rnd)
		p := placements[i%len(placements)]
		t.Run(fmt.Sprint(i), func(t *testing.T) { runScript(t, data, p) })
		if t.Failed() {
			t.Logf("script %d (placement %s) as a fuzz seed: %q", i, p, data)
			return
		}
	}
}

func randomScript(rnd *rand.Rand) []byte {
	b := make([]byte, 40+rnd.IntN(360))
	for i := range b {
		b[i] = byte(rnd.UintN(256))
	}
	return b
}

// script decodes bytes; past the end it yields zeros and stops the script.
type script struct {
	data []byte
	i    int
}

func (s *script) done() bool { return s.i >= len(s.data) }

func (s *script) byte() byte {
	if s.i >= len(s.data) {
		s.i++
		return 0
	}
	b := s.data[s.i]
	s.i++
	return b
}

// n returns a number in [0, k).
func (s *script) n(k int) int {
	if k <= 1 {
		return 0
	}
	return int(s.byte()) % k
}

var (
	invKeys  = []string{"func", "var", "if", "return", "x :=", "//", "case", ""}
	invWords = []string{"alpha", "beta", "gamma", "delta", "one", "two", "value", "other", "f(x)", "}"}
)

// line builds a short code-like line; a small vocabulary makes repeated and
// similar lines, which is what ambiguous relocation is made of.
func (s *script) line() string {
	k, a, b, c := s.byte(), s.byte(), s.byte(), s.byte()
	if k%8 == 7 {
		return ""
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s = %s + %s%d", invKeys[int(k)%len(invKeys)], invWords[int(a)%len(invWords)],
		invWords[int(b)%len(invWords)], invWords[int(c)%len(invWords)], int(c)%5))
}

func (s *script) lines(n int) []string {
	ls := make([]string, n)
	for i := range ls {
		ls[i] = s.line()
	}
	return ls
}

// heldBlock is a binding's record of one anchor: the block it maps to, what
// the tool showed, and the latest view a sync delivered (nil: the original
// tool output is still shown).
type heldBlock struct {
	agent      string
	anchor     string
	block      string
	refs       []protocol.Source
	observed   protocol.Status // ObserveResult.Status
	superseded bool            // an ObserveResult said so
	by         string          // the block that superseded it
	orphaned   bool            // superseded, then the newer read left the context
	view       *protocol.BlockView
	note       *protocol.BlockView // the latest erratum about the block since its last in-place view
	// A compaction summary (derived block): its text and the ranges it was
	// built from, as the copies of the results it replaced showed them.
	derived bool
	summary string
	provs   []invProv
}

// invProv is one range a summary was built from, as the test expects it.
type invProv struct {
	uri   string
	whole bool
	orig  Range
	old   []string
}

type invAgent struct {
	name    string
	turn    int
	anchors map[string]*heldBlock
	next    int
	gen     uint64 // generation of the agent's last sync
	prompt  int    // the prompt size its syncs report (promptChars)
}

// syncReq is the agent's next sync. The prompt it reports grows by 10 per
// call and a quarter of each read: small enough that many repairs are
// priced in place (auto+price), so both placements are exercised.
func (ag *invAgent) syncReq(full, rebuilt bool) protocol.SyncParams {
	ag.prompt += 10
	return protocol.SyncParams{Agent: ag.name, Turn: ag.turn, Full: full, PrefixRebuilt: rebuilt, PromptChars: ag.prompt}
}

type invRun struct {
	t       *testing.T
	h       *harness
	s       *script
	srcs    []string
	content map[string]string // present sources only
	hist    map[string][]string
	agents  []*invAgent
	seen    map[string]bool // agents that registered a block
	log     []string
	memOps  *[]func() // when set, writes to the store wait here (a concurrent batch)

	placement string
	clk       *fakeClock
	tally     func(violation string) // set: a violation is counted, not fatal
}

// placementAutoPriced is auto with cache prices (a script variant, not a
// placement of the protocol).
const placementAutoPriced = "auto+price"

var placements = []string{PlacementInplace, PlacementTail, PlacementAuto, placementAutoPriced}

// tailing reports whether repairs may go to the tail.
func (r *invRun) tailing() bool { return r.placement != PlacementInplace }

// mem writes to the store now, or queues the write for a concurrent batch.
func (r *invRun) mem(f func()) {
	if r.memOps != nil {
		*r.memOps = append(*r.memOps, f)
		return
	}
	f()
}

func (r *invRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *invRun) fail(format string, args ...any) {
	r.t.Helper()
	if r.tally != nil {
		r.tally(fmt.Sprintf(format, args...)) // the session model counts them instead
		return
	}
	r.t.Fatalf("invariant violated: %s\nscript:\n  %s", fmt.Sprintf(format, args...), strings.Join(r.log, "\n  "))
}

var invActions = []protocol.Action{"", protocol.Patch, protocol.Refresh, protocol.Annotate, protocol.Suppress}

func runScript(t *testing.T, data []byte, placement string) {
	s := &script{data: data}
	var pol protocol.Policy
	switch s.n(3) {
	case 0: // default policy
	default:
		pol.Local, pol.Drift = invActions[s.n(len(invActions))], invActions[s.n(len(invActions))]
		if s.n(4) == 0 {
			pol.MaxAgeTurns = intp(1 + s.n(3))
		}
	}
	// Which changes correct a summary: range (the invariant then also
	// demands a correction for every change), or the default.
	if s.n(2) == 0 {
		pol.Derived = protocol.DerivedRange
	}
	cfg := protocol.PolicyConfig{Global: pol}
	if s.n(4) == 0 {
		// A per-source layer over the global one.
		cfg.BySource = map[string]protocol.Policy{"mem://s0": {Local: invActions[s.n(len(invActions))], Drift: invActions[s.n(len(invActions))]}}
	}
	clk := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	mcfg := Config{Options: protocol.InitializeParams{Policy: &cfg, Placement: placement}, Now: clk.now}
	if placement == placementAutoPriced {
		mcfg.Options.Placement, mcfg.Options.Cache = PlacementAuto, &protocol.CacheParams{Price: &CachePrice{Write: 1.25, Read: 0.1}}
	}
	h := newHarness(t, mcfg)
	r := &invRun{t: t, h: h, s: s, content: map[string]string{}, hist: map[string][]string{}, seen: map[string]bool{}, placement: placement, clk: clk}
	r.logf("policy %+v placement %s", cfg, placement)
	for i := range 1 + s.n(3) {
		id := fmt.Sprintf("mem://s%d", i)
		r.srcs = append(r.srcs, id)
		r.set(id, r.render(s.lines(s.n(10))))
	}
	for i := range 1 + s.n(2) {
		r.agents = append(r.agents, &invAgent{name: fmt.Sprintf("a%d", i), turn: 1, anchors: map[string]*heldBlock{}})
	}
	for step := 0; step < 80 && !s.done(); step++ {
		r.step()
	}
	for _, ag := range r.agents {
		r.sync(ag, true)
	}
}

// render writes lines as a file: mostly LF-terminated, sometimes without a
// final newline, sometimes with CRLF endings.
func (r *invRun) render(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	switch r.s.n(8) {
	case 0:
		if ls[len(ls)-1] != "" { // an empty last line needs its "\n" to exist
			return strings.Join(ls, "\n")
		}
	case 1:
		return strings.Join(ls, "\r\n") + "\r\n"
	}
	return text(ls)
}

// set writes a source's content, as an editor or another process would.
func (r *invRun) set(id, c string) {
	r.content[id] = c
	r.hist[id] = append(r.hist[id], c)
	r.mem(func() { r.h.mem.set(id, c) })
	r.logf("set %s %q", id, c)
}

func (r *invRun) step() {
	s := r.s
	switch op := s.n(16); {
	case op < 4:
		r.edit(r.srcs[s.n(len(r.srcs))])
	case op < 7:
		r.observe(r.agent(), "", false)
	case op == 7:
		r.observe(r.agent(), "", true)
	case op == 8:
		r.observeMulti(r.agent())
	case op == 9:
		ag := r.agent()
		if a := r.pickAnchor(ag); a != "" {
			r.observe(ag, a, s.n(4) == 0)
		}
	case op == 10 && s.n(4) == 0:
		// An adapter hint: the background worker re-reads, concurrently
		// with whatever comes next.
		id := r.srcs[s.n(len(r.srcs))]
		r.logf("hint %s", id)
		r.h.m.Hint(id)
	case op == 10:
		id := r.srcs[s.n(len(r.srcs))]
		r.logf("sourceChanged %s", id)
		if _, err := r.h.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: id}); err != nil {
			r.fail("sourceChanged %s: %v", id, err)
		}
	case op == 11:
		r.release(r.agent())
	case op == 15:
		r.concurrent()
	case op == 12 && s.n(3) == 0:
		r.compact(r.agent())
	default:
		ag := r.agent()
		if s.n(3) == 0 {
			ag.turn++
		}
		var rebuilt bool
		if r.tailing() {
			// The cache expires, or the runtime condenses its prompt.
			if s.n(8) == 0 {
				r.clk.t = r.clk.t.Add(DefaultCacheTTL + time.Second)
				r.logf("wait past the cache TTL")
			}
			rebuilt = s.n(8) == 0
		}
		r.syncRebuilt(ag, s.n(4) == 0, rebuilt)
	}
}

func (r *invRun) agent() *invAgent { return r.agents[r.s.n(len(r.agents))] }

func (r *invRun) pickAnchor(ag *invAgent) string {
	if len(ag.anchors) == 0 {
		return ""
	}
	keys := make([]string, 0, len(ag.anchors))
	for k := range ag.anchors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[r.s.n(len(keys))]
}

// edit changes, deletes or restores a source.
func (r *invRun) edit(id string) {
	s := r.s
	c, present := r.content[id]
	if !present {
		// Deleted: bring it back, with its last content or a new one.
		if s.n(2) == 0 && len(r.hist[id]) > 0 {
			r.set(id, r.hist[id][len(r.hist[id])-1])
		} else {
			r.set(id, r.render(s.lines(s.n(8))))
		}
		return
	}
	ls := locator.SplitLines(c)
	n := len(ls)
	pos := s.n(n + 1)
	k := 1 + s.n(3)
	out := slices.Clone(ls)
	switch s.n(10) {
	case 0: // insert lines
		out = slices.Insert(out, pos, s.lines(k)...)
	case 1: // delete lines
		out = slices.Delete(out, pos, min(n, pos+k))
	case 2: // replace one token in a line
		if n > 0 {
			i := s.n(n)
			w := invWords[s.n(len(invWords))]
			fs := strings.Fields(out[i])
			if len(fs) == 0 {
				out[i] = w
			} else {
				fs[s.n(len(fs))] = w
				out[i] = strings.Join(fs, " ")
			}
		}
	case 3: // replace lines
		out = slices.Replace(out, pos, min(n, pos+k), s.lines(1+s.n(3))...)
	case 4: // duplicate a block
		blk := slices.Clone(out[pos:min(n, pos+k)])
		out = slices.Insert(out, s.n(n+1), blk...)
	case 5: // move a block
		blk := slices.Clone(out[pos:min(n, pos+k)])
		out = slices.Delete(out, pos, min(n, pos+k))
		out = slices.Insert(out, s.n(len(out)+1), blk...)
	case 6: // truncate to empty
		out = nil
	case 7: // delete the source, or make it unreadable
		delete(r.content, id)
		if s.n(3) == 0 {
			r.mem(func() {
				r.h.mem.mu.Lock()
				r.h.mem.errs[id] = fmt.Errorf("read %s: %w", id, ErrUnreadable)
				r.h.mem.stamps[id]++
				r.h.mem.mu.Unlock()
			})
			r.logf("unreadable %s", id)
			return
		}
		r.mem(func() { r.h.mem.remove(id) })
		r.logf("remove %s", id)
		return
	case 8: // write the same content again (the stamp moves, the hash does not)
	default: // rewrite everything
		out = s.lines(s.n(10))
	}
	r.set(id, r.render(out))
}

// ref builds what a read tool would show of a source: a range or the whole,
// of the current content or (raced) of an older one.
func (r *invRun) ref(id string, raced bool) protocol.Source {
	s := r.s
	c, present := r.content[id]
	if raced || !present {
		hs := r.hist[id]
		c = hs[s.n(len(hs))]
	}
	ls := locator.SplitLines(c)
	if len(ls) == 0 || s.n(4) == 0 {
		t := c
		if s.n(2) == 0 {
			t = strings.TrimSuffix(strings.TrimSuffix(c, "\n"), "\r") // tools differ about the final newline
		}
		return protocol.Source{URI: id, Text: t}
	}
	a := 1 + s.n(len(ls))
	b := a + s.n(min(4, len(ls)-a+1))
	return protocol.Source{URI: id, Range: rng(a, b), Text: strings.Join(ls[a-1:b], "\n")}
}

func (r *invRun) observe(ag *invAgent, anchor string, raced bool) {
	var refs []protocol.Source
	if h := ag.anchors[anchor]; h != nil && r.s.n(2) == 0 && len(h.refs) > 0 {
		// Re-read the same span(s) as before.
		for _, old := range h.refs {
			ref := r.ref(old.URI, raced)
			if old.Range != nil && ref.Range != nil {
				ls := locator.SplitLines(r.content[old.URI])
				if old.Range.End <= len(ls) {
					ref = protocol.Source{URI: old.URI, Range: old.Range, Text: strings.Join(ls[old.Range.Start-1:old.Range.End], "\n")}
				}
			}
			refs = append(refs, ref)
		}
	} else {
		refs = []protocol.Source{r.ref(r.srcs[r.s.n(len(r.srcs))], raced)}
	}
	r.register(ag, anchor, refs)
}

func (r *invRun) observeMulti(ag *invAgent) {
	k := 2 + r.s.n(2)
	refs := make([]protocol.Source, k)
	for i := range refs {
		refs[i] = r.ref(r.srcs[r.s.n(len(r.srcs))], r.s.n(5) == 0)
	}
	r.register(ag, "", refs)
}

func (r *invRun) register(ag *invAgent, anchor string, refs []protocol.Source) {
	if anchor == "" {
		ag.next++
		anchor = fmt.Sprintf("call_%d", ag.next)
	}
	obs := protocol.ObserveParams{Agent: ag.name, Turn: ag.turn, Anchor: anchor, Sources: refs}
	if r.s.n(8) == 0 {
		obs.Policy = &protocol.Policy{Local: invActions[r.s.n(len(invActions))], Drift: invActions[r.s.n(len(invActions))]}
	}
	res, err := r.h.m.Observe(context.Background(), obs)
	for _, ref := range refs {
		ag.prompt += len(ref.Text) / 4
	}
	if old := ag.anchors[anchor]; err == nil && old != nil {
		r.retire(ag, old) // the replaced block leaves the context first
	}
	r.logf("observe %s/%s turn %d policy %v refs %s -> %+v err %v", ag.name, anchor, ag.turn, obs.Policy, fmtRefs(refs), res, err)
	if err != nil {
		for _, ref := range refs {
			if _, ok := r.content[ref.URI]; !ok && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnreadable)) {
				return // the tool read a source that is gone by now
			}
		}
		r.fail("observe: %v", err)
	}
	switch res.Status {
	case protocol.Valid, protocol.Patched, protocol.Invalid, protocol.Stale:
	default:
		r.fail("observe %s: status %q", anchor, res.Status)
	}
	r.seen[ag.name] = true
	for _, id := range res.Superseded {
		h := r.byBlock(ag, id)
		if h == nil {
			r.fail("observe %s superseded %s, which the agent does not hold", anchor, id)
		}
		h.superseded, h.by = true, res.Block
	}
	// A new result for the anchor replaces what the binding showed.
	ag.anchors[anchor] = &heldBlock{agent: ag.name, anchor: anchor, block: res.Block, refs: refs, observed: res.Status}
}

func fmtRefs(refs []protocol.Source) string {
	var b strings.Builder
	for _, ref := range refs {
		if ref.Range != nil {
			fmt.Fprintf(&b, "[%s %d-%d %q]", ref.URI, ref.Range.Start, ref.Range.End, ref.Text)
		} else {
			fmt.Fprintf(&b, "[%s whole %q]", ref.URI, ref.Text)
		}
	}
	return b.String()
}

func (r *invRun) byBlock(ag *invAgent, id string) *heldBlock {
	for _, h := range ag.anchors {
		if h.block == id {
			return h
		}
	}
	return nil
}

func (r *invRun) release(ag *invAgent) {
	a := r.pickAnchor(ag)
	if a == "" {
		return
	}
	h := ag.anchors[a]
	req := protocol.ReleaseParams{Agent: ag.name, Anchors: []string{a}}
	if r.s.n(2) == 0 {
		req = protocol.ReleaseParams{Blocks: []string{h.block}}
	}
	res, err := r.h.m.Release(context.Background(), req)
	r.logf("release %s/%s %+v -> %v %v", ag.name, a, req, res.Released, err)
	if err != nil {
		r.fail("release: %v", err)
	}
	if !slices.Equal(res.Released, []string{h.block}) {
		r.fail("release %s/%s: released %v, want [%s]", ag.name, a, res.Released, h.block)
	}
	r.retire(ag, h)
	delete(ag.anchors, a)
}

// retire models what happens to the blocks n superseded when n leaves the
// context: if n was superseded itself, its newer read covers them; else they
// become invalid (orphaned), and so do the blocks they superseded.
func (r *invRun) retire(ag *invAgent, n *heldBlock) {
	for _, s := range ag.anchors {
		if !s.superseded || s.by != n.block {
			continue
		}
		if n.superseded {
			s.by = n.by
			continue
		}
		s.superseded, s.orphaned, s.by = false, true, ""
		r.retire(ag, s)
	}
}

// sync applies the agent's delta as a binding does and checks the invariant;
// full also compares a full projection with the accumulated deltas.
func (r *invRun) sync(ag *invAgent, full bool) { r.syncRebuilt(ag, full, false) }

func (r *invRun) syncRebuilt(ag *invAgent, full, rebuilt bool) {
	res, err := r.h.m.Sync(context.Background(), ag.syncReq(false, rebuilt))
	if err != nil {
		r.fail("sync %s: %v", ag.name, err)
	}
	r.logf("sync %s turn %d rebuilt %v -> flushed %v %s", ag.name, ag.turn, rebuilt, res.Flushed, fmtViews(res.Blocks))
	if rebuilt && !res.Flushed {
		r.fail("a rebuilt prefix did not flush")
	}
	r.apply(ag, res)
	r.check(ag)
	if full {
		r.compareFull(ag)
	}
	r.checkStats()
}

// concurrent runs an edit, a sourceChanged, a hint and some agents' syncs at
// once. Their deltas are applied as a binding would; the invariant is checked
// at the next sync, when nothing runs concurrently.
func (r *invRun) concurrent() {
	s := r.s
	var ops []func()
	r.memOps = &ops
	r.edit(r.srcs[s.n(len(r.srcs))])
	r.memOps = nil
	changed, hinted := r.srcs[s.n(len(r.srcs))], r.srcs[s.n(len(r.srcs))]
	var syncing []*invAgent
	for _, ag := range r.agents {
		if s.n(2) == 0 {
			syncing = append(syncing, ag)
		}
	}
	r.logf("concurrently: the edit above, sourceChanged %s, hint %s, sync of %d agents", changed, hinted, len(syncing))
	results := make([]protocol.SyncResult, len(syncing))
	errs := make([]error, len(syncing)+1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, f := range ops {
			f()
		}
	})
	wg.Go(func() {
		_, errs[len(syncing)] = r.h.m.SourceChanged(context.Background(), protocol.SourceChangedParams{URI: changed})
	})
	wg.Go(func() { r.h.m.Hint(hinted) })
	for i, ag := range syncing {
		wg.Go(func() {
			results[i], errs[i] = r.h.m.Sync(context.Background(), ag.syncReq(false, false))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			r.fail("concurrent batch: %v", err)
		}
	}
	for i, ag := range syncing {
		r.logf("  sync %s -> %s", ag.name, fmtViews(results[i].Blocks))
		r.apply(ag, results[i])
	}
	r.checkStats()
}

// apply checks a delta's shape and keeps each anchor's latest view.
func (r *invRun) apply(ag *invAgent, res protocol.SyncResult) {
	if res.Full {
		r.fail("delta sync answered full")
	}
	// A change since the agent's last sync moved the generation.
	if res.Generation < ag.gen || len(res.Blocks) > 0 && res.Generation == ag.gen {
		r.fail("generation %d after %d with %d changed blocks", res.Generation, ag.gen, len(res.Blocks))
	}
	ag.gen = res.Generation
	if res.Flushed {
		if !r.tailing() {
			r.fail("placement inplace answered flushed")
		}
		for _, h := range ag.anchors {
			h.note = nil // every deferred repair is in this delta, in place
		}
	}
	// The binding joins the delta's errata into one note; errata of one
	// source are grouped, so a view's statement may sit on another view.
	var errata []string
	for _, v := range res.Blocks {
		if v.Erratum != "" {
			errata = append(errata, v.Erratum)
		}
	}
	note := strings.Join(errata, "\n")
	got := map[string]bool{}
	for i := range res.Blocks {
		v := res.Blocks[i]
		if got[v.Anchor] {
			r.fail("one delta carries two views for anchor %s", v.Anchor)
		}
		got[v.Anchor] = true
		h := ag.anchors[v.Anchor]
		switch {
		case v.Agent != ag.name:
			r.fail("sync %s got a view of agent %s", ag.name, v.Agent)
		case h == nil:
			r.fail("view %s for anchor %s, which the agent no longer holds (released or never observed)", v.Block, v.Anchor)
		case h.block != v.Block:
			r.fail("anchor %s holds %s, but a view for %s arrived (replaced block leaked)", v.Anchor, h.block, v.Block)
		}
		if h.derived {
			r.applyDerived(h, v, note)
			continue
		}
		switch v.Placement {
		case "":
			if h.note != nil {
				r.fail("anchor %s rewritten in place without a flush, below an erratum that still speaks for it", v.Anchor)
			}
			if v.Erratum != "" {
				r.fail("anchor %s: in-place view with an erratum", v.Anchor)
			}
			h.view = &v
		case PlacementTail:
			if !r.tailing() {
				r.fail("placement inplace sent an erratum for %s", v.Anchor)
			}
			if v.Erratum != "" && !strings.HasPrefix(v.Erratum, "[concord] ") {
				r.fail("anchor %s: erratum %q is not marked", v.Anchor, v.Erratum)
			}
			v.Erratum = aboutAnchor(note, v.Anchor)
			if v.Erratum == "" {
				r.fail("anchor %s: the note %q does not name the call", v.Anchor, note)
			}
			r.checkErratum(h, &v)
			h.note = &v
		default:
			r.fail("anchor %s: placement %q", v.Anchor, v.Placement)
		}
	}
}

// aboutAnchor returns what a note says about one call: each erratum line
// (with its changed lines) that names it, cut to the clauses naming it
// as an item ("call_1 (lines 3-5) ...", "call_1, call_2 ...").
func aboutAnchor(note, anchor string) string {
	item := regexp.MustCompile(`(^|: |, |; )` + regexp.QuoteMeta(anchor) + `( \(|,| )`)
	var out []string
	for _, e := range strings.Split(strings.ReplaceAll(note, "\n[concord] ", "\x00[concord] "), "\x00") {
		head, body, _ := strings.Cut(e, "\n")
		if strings.HasPrefix(head, "[concord] The summary in "+anchor+" is ") {
			out = append(out, e)
			continue
		}
		prefix, clauses, grouped := strings.Cut(head, ": ")
		if !grouped || !strings.HasPrefix(prefix, "[concord] Outdated in ") {
			if item.MatchString(strings.TrimPrefix(head, "[concord] About the output of ")) ||
				strings.Contains(head, "output of "+anchor+" ") || strings.Contains(head, "output of "+anchor+":") {
				out = append(out, e)
			}
			continue
		}
		var mine []string
		for _, c := range strings.Split(clauses, "; ") {
			if item.MatchString(c) {
				mine = append(mine, c)
			}
		}
		if len(mine) > 0 {
			t := prefix + ": " + strings.Join(mine, "; ")
			if body != "" {
				t += "\n" + body
			}
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
}

func fmtViews(vs []protocol.BlockView) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "{%s %s %s", v.Block, v.Anchor, v.Status)
		if v.Placement != "" {
			fmt.Fprintf(&b, " %s %q", v.Placement, v.Erratum)
		}
		for _, sv := range v.Sources {
			if sv.Range != nil {
				fmt.Fprintf(&b, " [%s %d-%d %q]", sv.URI, sv.Range.Start, sv.Range.End, sv.Text)
			} else {
				fmt.Fprintf(&b, " [%s whole %q]", sv.URI, sv.Text)
			}
		}
		if v.Reason != "" {
			fmt.Fprintf(&b, " reason %q", v.Reason)
		}
		b.WriteString("} ")
	}
	return b.String()
}

// checkErratum checks that an erratum's text says what its view says,
// relative to the copy in place: a span that only moved is named at its new
// lines; changed text is listed line by line ("+N: text"), attributed to the
// agent's edit, or asked to be re-read.
func (r *invRun) checkErratum(h *heldBlock, v *protocol.BlockView) {
	if v.Status == protocol.Superseded {
		if !strings.Contains(v.Erratum, "was read again in") {
			r.fail("anchor %s: superseded erratum %q does not point to the newer read", h.anchor, v.Erratum)
		}
		return
	}
	if v.Status != protocol.Valid && v.Status != protocol.Patched {
		if !strings.Contains(v.Erratum, "Re-read") && !strings.Contains(v.Erratum, "may be outdated") {
			r.fail("anchor %s: %s erratum %q asks for no re-read", h.anchor, v.Status, v.Erratum)
		}
		return
	}
	// The copy in place: the latest in-place view with sources, else the tool's output.
	old := h.refs
	if h.view != nil && len(h.view.Sources) > 0 {
		old = h.view.Sources
	}
	if len(old) != len(v.Sources) {
		r.fail("anchor %s: erratum view has %d sources, the copy in place %d", h.anchor, len(v.Sources), len(old))
	}
	for i, sv := range v.Sources {
		o := old[i]
		ot, nt := normalizeText(o.Text), sv.Text
		if sv.Range == nil {
			ot, nt = strings.TrimSuffix(ot, "\n"), strings.TrimSuffix(nt, "\n")
		}
		switch {
		case ot == nt && (sv.Range == nil || *sv.Range == *o.Range):
		case ot == nt && strings.Contains(v.Erratum, "text unchanged"):
		case ot == nt:
			if want := "now at " + linesOf(Range{Start: sv.Range.Start, End: sv.Range.End}); !strings.Contains(v.Erratum, want) {
				r.fail("anchor %s: erratum %q does not say %q", h.anchor, v.Erratum, want)
			}
		case strings.Contains(v.Erratum, "Re-read"), strings.Contains(v.Erratum, "your edit"):
		default:
			start, oldSet := 1, map[string]bool{}
			if sv.Range != nil {
				start = sv.Range.Start
			}
			for _, l := range strings.Split(ot, "\n") {
				oldSet[l] = true
			}
			lines := strings.Split(nt, "\n")
			if sv.Range == nil && nt == "" {
				lines = nil // an empty source has no lines
			}
			for j, l := range lines {
				if want := fmt.Sprintf("+%d: %s", start+j, l); !oldSet[l] && !strings.Contains(v.Erratum, want) {
					r.fail("anchor %s: erratum %q misses the changed line %q", h.anchor, v.Erratum, want)
				}
			}
		}
	}
}

// allTextUnchanged reports whether every clause of an anchor's erratum
// says only that its lines moved, text unchanged.
func allTextUnchanged(erratum string) bool {
	n := 0
	for _, l := range strings.Split(erratum, "\n") {
		if !strings.HasPrefix(l, "[concord] ") {
			continue
		}
		_, clauses, ok := strings.Cut(l, ": ")
		if !ok {
			return false
		}
		for _, c := range strings.Split(clauses, "; ") {
			if !strings.Contains(c, "text unchanged") {
				return false
			}
			n++
		}
	}
	return n > 0
}

// checkTextUnchanged: the latest erratum says only that the lines of the
// copy in place moved, its text unchanged; later moves add nothing, so the
// text must still be in the source, line for line.
func (r *invRun) checkTextUnchanged(h *heldBlock) {
	old := h.refs
	if h.view != nil && len(h.view.Sources) > 0 {
		old = h.view.Sources
	}
	for _, o := range old {
		cur, ok := r.content[o.URI]
		if !ok {
			r.fail("anchor %s: an erratum says its text is unchanged, but %s is deleted", h.anchor, o.URI)
			continue
		}
		if !containsLines(strings.Join(locator.SplitLines(cur), "\n"), strings.Join(locator.SplitLines(normalizeText(o.Text)), "\n")) {
			r.fail("anchor %s: an erratum says its text is unchanged, but %q is no longer in %s: %q", h.anchor, o.Text, o.URI, cur)
		}
	}
}

// warning: an erratum that says the copy is outdated without claiming what
// is current (a re-read notice, a pointer to the agent's edit).
func warning(erratum string) bool {
	for _, w := range []string{"Re-read", "your edit", "may be outdated", "About the output of"} {
		if strings.Contains(erratum, w) {
			return true
		}
	}
	return false
}

// check verifies every anchor the agent holds, right after a sync.
func (r *invRun) check(ag *invAgent) {
	for _, a := range slices.Sorted(maps.Keys(ag.anchors)) {
		h := ag.anchors[a]
		if h.derived {
			r.checkDerived(h)
			continue
		}
		if r.tailing() && h.superseded && !h.orphaned {
			r.checkSupersededCopy(ag, h)
			continue
		}
		if h.note != nil && warning(h.note.Erratum) {
			// The latest statement says the copy is outdated: it cannot look
			// current. A deletion notice must not outlive the deletion,
			// though: back as it was, the copy is true and the note is not.
			if strings.Contains(h.note.Erratum, "was deleted after that read") {
				for _, ref := range h.refs {
					if _, back := r.content[ref.URI]; back && strings.Contains(h.note.Erratum, strings.TrimPrefix(ref.URI, "mem:/")+" was deleted") {
						r.fail("anchor %s: the latest erratum says %s was deleted, but it is back: %q", a, ref.URI, h.note.Erratum)
					}
				}
			}
			continue
		}
		if h.note != nil && allTextUnchanged(h.note.Erratum) {
			r.checkTextUnchanged(h)
			continue
		}
		v := h.view
		if h.note != nil {
			v = h.note // the latest statement about the block
		}
		if v == nil {
			// No delta: the binding still shows the tool's original output.
			if h.observed != protocol.Valid && !r.tailing() {
				r.fail("anchor %s: observe said %s but no sync delivered its view", a, h.observed)
			}
			if h.superseded || h.orphaned {
				r.fail("anchor %s: superseded at observe but no sync delivered the notice", a)
			}
			r.checkOriginal(h)
			continue
		}
		if h.superseded != (v.Status == protocol.Superseded) || h.orphaned && v.Status != protocol.Invalid {
			r.fail("anchor %s: superseded by observe %v (orphaned %v), view status %s", a, h.superseded, h.orphaned, v.Status)
		}
		if h.superseded && v.SupersededBy != h.by {
			r.fail("anchor %s: superseded by %s, the view says %s", a, h.by, v.SupersededBy)
		}
		switch v.Status {
		case protocol.Valid, protocol.Patched:
			if v.Notice != "" {
				r.fail("anchor %s: %s view with a notice %q", a, v.Status, v.Notice)
			}
			r.checkSources(h, v, true)
		case protocol.Stale:
			if v.Notice == "" {
				r.fail("anchor %s: stale view without a notice", a)
			}
			r.checkSources(h, v, false)
		case protocol.Invalid, protocol.Superseded:
			if v.Notice == "" || len(v.Sources) != 0 {
				r.fail("anchor %s: %s view must have a notice and no sources: %+v", a, v.Status, *v)
			}
			if v.Status == protocol.Superseded && r.byBlock(ag, v.SupersededBy) == nil {
				// The notice says "a newer read is in the context": it must be.
				r.fail("anchor %s: superseded by %q, which the agent no longer holds", a, v.SupersededBy)
			}
		default:
			r.fail("anchor %s: view status %q", a, v.Status)
		}
	}
}

// checkOriginal: the tool's original output is still what the model has of
// the anchor, with nothing after it that corrects it, so it must be current.
func (r *invRun) checkOriginal(h *heldBlock) {
	for _, ref := range h.refs {
		cur, ok := r.content[ref.URI]
		if !ok {
			r.fail("anchor %s: original output of %s still shown (valid, no delta), but the source is deleted", h.anchor, ref.URI)
		}
		if ref.Range == nil {
			// The same lines; a final newline may differ (tools differ about it).
			// Under tail and auto the server compares the model-visible
			// texts: "" for an empty file and for one blank line alike.
			same := r.tailing() && strings.TrimSuffix(normalizeText(ref.Text), "\n") == strings.TrimSuffix(normalizeText(cur), "\n")
			if cl := locator.SplitLines(cur); !same && !slices.Equal(locator.SplitLines(ref.Text), cl) && !slices.Equal(locator.SplitLines(ref.Text+"\n"), cl) {
				r.fail("anchor %s: original whole output of %s still shown (no delta) but the source is now %q", h.anchor, ref.URI, cur)
			}
			continue
		}
		if want, ok := at(cur, Range(*ref.Range)); !ok || want != normalizeText(ref.Text) {
			r.fail("anchor %s: original output %q of %s lines %d-%d still shown (no delta) but those lines are now %q", h.anchor, ref.Text, ref.URI, ref.Range.Start, ref.Range.End, want)
		}
	}
}

// checkSupersededCopy: under tail and auto a superseded read stays in the
// prompt as the model last had it, and the newer read follows it. That is
// no correction by itself (a reader may take either copy): the copy must
// still be true, or the latest statement about it must hold, a pointer to
// the newer read included (the newer read is checked as an anchor of its
// own).
func (r *invRun) checkSupersededCopy(ag *invAgent, h *heldBlock) {
	if r.byBlock(ag, h.by) == nil {
		r.fail("anchor %s: superseded by %s, which the agent no longer holds", h.anchor, h.by)
	}
	if n := h.note; n != nil {
		switch {
		case n.Status == protocol.Superseded, warning(n.Erratum):
			// A pointer (checkErratum read it) or a warning: both stay true.
		case allTextUnchanged(n.Erratum):
			r.checkTextUnchanged(h)
		case n.Status == protocol.Valid || n.Status == protocol.Patched:
			r.checkSources(h, n, true)
		default:
			r.fail("anchor %s: superseded, latest erratum %q (%s) neither points nor warns", h.anchor, n.Erratum, n.Status)
		}
		return
	}
	switch v := h.view; {
	case v == nil:
		r.checkOriginal(h)
	case len(v.Sources) == 0, v.Status == protocol.Stale:
		// In place it shows a notice, or text marked as possibly outdated.
	default:
		r.checkSources(h, v, true)
	}
}

// checkSources checks a view's sources keep the observation's shape and,
// when current is set, show exactly the current content.
func (r *invRun) checkSources(h *heldBlock, v *protocol.BlockView, current bool) {
	if len(v.Sources) != len(h.refs) {
		r.fail("anchor %s: %d sources in the view, %d observed", h.anchor, len(v.Sources), len(h.refs))
	}
	for i, sv := range v.Sources {
		ref := h.refs[i]
		if sv.URI != ref.URI || (sv.Range == nil) != (ref.Range == nil) {
			r.fail("anchor %s: source %d is %s (range %v), observed %s (range %v)", h.anchor, i, sv.URI, sv.Range, ref.URI, ref.Range)
		}
		if !current {
			// Kept text (annotate, a deleted source, aged): it was true once.
			if !r.wasTrue(sv) {
				r.fail("anchor %s: %s view shows %s %v as %q, which no version of the source ever had there", h.anchor, v.Status, sv.URI, sv.Range, sv.Text)
			}
			continue
		}
		cur, ok := r.content[sv.URI]
		if !ok {
			r.fail("anchor %s: %s view shows %s, which is deleted", h.anchor, v.Status, sv.URI)
		}
		if sv.Range == nil {
			if want := strings.TrimSuffix(normalizeText(cur), "\n"); sv.Text != want {
				r.fail("anchor %s: %s view shows whole %s as %q, current content %q", h.anchor, v.Status, sv.URI, sv.Text, want)
			}
			continue
		}
		if want, ok := at(cur, Range(*sv.Range)); !ok || want != sv.Text {
			r.fail("anchor %s: %s view shows %s lines %d-%d as %q, current lines there %q (in range: %v)", h.anchor, v.Status, sv.URI, sv.Range.Start, sv.Range.End, sv.Text, want, ok)
		}
	}
}

// wasTrue reports whether some version of the source had sv's text at sv's
// range (whole: the same lines, a final newline aside).
func (r *invRun) wasTrue(sv protocol.Source) bool {
	for _, c := range r.hist[sv.URI] {
		if sv.Range == nil {
			cl := locator.SplitLines(c)
			if slices.Equal(locator.SplitLines(sv.Text), cl) || slices.Equal(locator.SplitLines(sv.Text+"\n"), cl) {
				return true
			}
		} else if t, ok := at(c, Range(*sv.Range)); ok && t == sv.Text {
			return true
		}
	}
	return false
}

// at returns lines r of content joined by "\n".
func at(content string, r Range) (string, bool) {
	ls := locator.SplitLines(content)
	if r.Start < 1 || r.End < r.Start || r.End > len(ls) {
		return "", false
	}
	return strings.Join(ls[r.Start-1:r.End], "\n"), true
}

// compareFull asks for the full projection right after a delta sync: it must
// show every anchor the agent holds, as the accumulated deltas do.
func (r *invRun) compareFull(ag *invAgent) {
	// Nothing changed since the delta: the next delta is empty.
	again, err := r.h.m.Sync(context.Background(), ag.syncReq(false, false))
	if err != nil {
		r.fail("sync %s: %v", ag.name, err)
	}
	if len(again.Blocks) != 0 {
		r.fail("a second sync with nothing changed returned %s", fmtViews(again.Blocks))
	}
	res, err := r.h.m.Sync(context.Background(), ag.syncReq(true, false))
	if err != nil {
		r.fail("full sync %s: %v", ag.name, err)
	}
	r.logf("full sync %s -> flushed %v %s", ag.name, res.Flushed, fmtViews(res.Blocks))
	if !res.Full {
		r.fail("full sync not marked full")
	}
	if r.tailing() {
		// A full projection is a flush: every view in place, notes dropped;
		// it must then satisfy the invariant by itself.
		if !res.Flushed {
			r.fail("full sync under %s not flushed", r.placement)
		}
		seen := map[string]bool{}
		for _, v := range res.Blocks {
			if h := ag.anchors[v.Anchor]; h == nil || h.block != v.Block || seen[v.Anchor] || v.Placement != "" {
				r.fail("full sync: view %s for anchor %s (placement %q), which the deltas do not hold (or twice)", v.Block, v.Anchor, v.Placement)
			}
			seen[v.Anchor] = true
		}
		for a := range ag.anchors {
			if !seen[a] {
				r.fail("full sync: anchor %s (%s) missing", a, ag.anchors[a].block)
			}
		}
		for _, h := range ag.anchors {
			h.note = nil
		}
		for i := range res.Blocks {
			v := res.Blocks[i]
			ag.anchors[v.Anchor].view = &v
		}
		r.check(ag)
		return
	}
	seen := map[string]bool{}
	for _, v := range res.Blocks {
		h := ag.anchors[v.Anchor]
		if h == nil || h.block != v.Block || seen[v.Anchor] {
			r.fail("full sync: view %s for anchor %s, which the deltas do not hold (or twice)", v.Block, v.Anchor)
		}
		seen[v.Anchor] = true
		if h.view == nil {
			if v.Status != protocol.Valid {
				r.fail("full sync: anchor %s is %s, the deltas never said so (still original output)", v.Anchor, v.Status)
			}
			for i, sv := range v.Sources {
				ref := h.refs[i]
				if t := normalizeText(ref.Text); sv.Text != t && !(ref.Range == nil && sv.Text == strings.TrimSuffix(t, "\n")) {
					r.fail("full sync: anchor %s shows %q, the binding the original %q", v.Anchor, sv.Text, ref.Text)
				}
			}
			continue
		}
		if v.Status != h.view.Status || v.Notice != h.view.Notice || !slices.EqualFunc(v.Sources, h.view.Sources, sameSourceView) {
			r.fail("full sync: anchor %s is %s %s, the deltas say %s %s", v.Anchor, v.Status, fmtViews([]protocol.BlockView{v}), h.view.Status, fmtViews([]protocol.BlockView{*h.view}))
		}
	}
	for a := range ag.anchors {
		if !seen[a] {
			r.fail("full sync: anchor %s (%s) missing", a, ag.anchors[a].block)
		}
	}
}

func sameSourceView(a, b protocol.Source) bool {
	return a.URI == b.URI && a.Text == b.Text && (a.Range == nil) == (b.Range == nil) && (a.Range == nil || *a.Range == *b.Range)
}

// checkStats compares Stats and the adapter's watches with the blocks the
// script holds.
func (r *invRun) checkStats() {
	st := r.h.m.Stats()
	if n := st.Reconciliations["illegalTransition"]; n > 0 {
		r.fail("%d illegal block lifecycle transitions", n)
	}
	held, sup := 0, 0
	linked := map[string]bool{}
	for _, ag := range r.agents {
		for _, h := range ag.anchors {
			held++
			if h.superseded {
				sup++
				continue
			}
			if h.orphaned {
				continue
			}
			for _, ref := range h.refs {
				linked[ref.URI] = true
			}
			for _, pv := range h.provs {
				linked[pv.uri] = true
			}
		}
	}
	total := 0
	for s, n := range st.Blocks {
		if n < 0 {
			r.fail("stats: %d %s blocks", n, s)
		}
		total += n
	}
	for k, n := range st.Reconciliations {
		if n < 0 {
			r.fail("stats: reconciliations[%s] = %d", k, n)
		}
	}
	if total != held || st.Blocks[protocol.Superseded] != sup {
		r.fail("stats: blocks %v (total %d), the script holds %d (%d superseded)", st.Blocks, total, held, sup)
	}
	if st.Sources != len(linked) || st.Agents != len(r.seen) || st.BytesHeld < 0 || st.VerifyPasses < 0 {
		r.fail("stats: %d sources, %d agents, %d bytes; want %d sources, %d agents", st.Sources, st.Agents, st.BytesHeld, len(linked), len(r.seen))
	}
	for _, id := range r.srcs {
		want := 0
		if linked[id] {
			want = 1
		}
		if got := r.h.mem.watching(id); got != want {
			r.fail("watches of %s: %d, want %d", id, got, want)
		}
	}
}

// TestRangeEndingInBlankLine: lines "x" and "" joined by "\n" are "x\n"; a
// read of a range ending in a blank line is not a raced read, and the view
// keeps the blank line (found by FuzzManagerInvariant).
func TestRangeEndingInBlankLine(t *testing.T) {
	tests := []struct {
		name   string
		ref    protocol.Source
		status protocol.Status
	}{
		{"blank last line", protocol.Source{URI: fid, Range: rng(2, 3), Text: "b\n"}, protocol.Valid},
		{"blank only", protocol.Source{URI: fid, Range: rng(3, 3), Text: ""}, protocol.Valid},
		{"terminated text", protocol.Source{URI: fid, Range: rng(1, 2), Text: "a\nb\n"}, protocol.Valid},
		{"terminated, blank last line", protocol.Source{URI: fid, Range: rng(2, 3), Text: "b\n\n"}, protocol.Valid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, "a\nb\n\nc\n")
			if o := h.observe("main", 1, "call_1", tc.ref); o.Status != tc.status {
				t.Fatalf("observe status %s, want %s", o.Status, tc.status)
			}
			h.mem.set(fid, "new\na\nb\n\nc\n")
			v := one(t, h.sync("main", 2))
			want, _ := at("new\na\nb\n\nc\n", Range{Start: tc.ref.Range.Start + 1, End: tc.ref.Range.End + 1})
			if v.Status != protocol.Patched || len(v.Sources) != 1 || v.Sources[0].Text != want || *v.Sources[0].Range != (protocol.Range{Start: tc.ref.Range.Start + 1, End: tc.ref.Range.End + 1}) {
				t.Fatalf("after an insert above: %+v, want patched %q", v, want)
			}
		})
	}
}

// TestSupersededByReleased: a superseded block's notice says a newer read is
// in the context. When that newer read is released, the notice must not lie:
// a newer read that was itself superseded hands its readers on; otherwise
// they become invalid and ask for a re-read (found by FuzzManagerInvariant).
func TestSupersededByReleased(t *testing.T) {
	ls := numbered(8)
	h := newHarness(t, Config{})
	h.mem.set(fid, text(ls))
	b1 := h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(2, 3), Text: span(ls, 2, 3)})
	b2 := h.observe("main", 2, "call_2", protocol.Source{URI: fid, Range: rng(1, 5), Text: span(ls, 1, 5)})
	b3 := h.observe("main", 3, "call_3", protocol.Source{URI: fid, Text: text(ls)})
	if !slices.Equal(b2.Superseded, []string{b1.Block}) || !slices.Equal(b3.Superseded, []string{b2.Block}) {
		t.Fatalf("superseded %v, %v", b2.Superseded, b3.Superseded)
	}
	h.sync("main", 3)

	// b2 leaves: b3 still covers b1.
	if _, err := h.m.Release(context.Background(), protocol.ReleaseParams{Blocks: []string{b2.Block}}); err != nil {
		t.Fatal(err)
	}
	v := one(t, h.sync("main", 3))
	if v.Block != b1.Block || v.Status != protocol.Superseded || v.SupersededBy != b3.Block || !strings.Contains(v.Notice, "(turn 3)") {
		t.Fatalf("after releasing b2: %+v, want b1 superseded by %s", v, b3.Block)
	}

	// b3 leaves: nothing shows lines 2-3 any more, and the agent hears of it.
	calls := len(h.onChangeCalls())
	if _, err := h.m.Release(context.Background(), protocol.ReleaseParams{Agent: "main", Anchors: []string{"call_3"}}); err != nil {
		t.Fatal(err)
	}
	if cs := h.onChangeCalls(); len(cs) != calls+1 || !slices.Equal(cs[len(cs)-1], []string{"main"}) {
		t.Fatalf("OnChange calls after release: %v", cs[calls:])
	}
	v = one(t, h.sync("main", 4))
	want := "[concord] a newer read of /proj/main.go lines 2-3 replaced this one and has since been removed from the context; the content shown earlier is not available. Re-read /proj/main.go lines 2-3 before relying on it."
	if v.Block != b1.Block || v.Status != protocol.Invalid || v.Notice != want || len(v.Sources) != 0 || v.SupersededBy != "" {
		t.Fatalf("after releasing b3: %+v", v)
	}
	if st := h.m.Stats(); st.Blocks[protocol.Invalid] != 1 || st.Blocks[protocol.Superseded] != 0 || st.Sources != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSupersedeOwesNoHintToItsAgent: the blocks an observe supersedes are
// in its result, so the observing agent is not hinted about them (a hint
// per re-read was a notification written and read for nothing); the next
// sync still carries them.
func TestSupersedeOwesNoHintToItsAgent(t *testing.T) {
	ls := numbered(8)
	h := newHarness(t, Config{})
	h.mem.set(fid, text(ls))
	b1 := h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(2, 3), Text: span(ls, 2, 3)})
	h.sync("main", 1)
	before := len(h.onChangeCalls())
	b2 := h.observe("main", 2, "call_2", protocol.Source{URI: fid, Range: rng(1, 5), Text: span(ls, 1, 5)})
	if !slices.Equal(b2.Superseded, []string{b1.Block}) {
		t.Fatalf("superseded %v, want [%s]", b2.Superseded, b1.Block)
	}
	if cs := h.onChangeCalls(); len(cs) != before {
		t.Fatalf("OnChange after a superseding observe: %v", cs[before:])
	}
	var got protocol.BlockView
	for _, v := range h.sync("main", 2).Blocks {
		if v.Block == b1.Block {
			got = v
		}
	}
	if got.Status != protocol.Superseded || got.SupersededBy != b2.Block {
		t.Fatalf("the next sync shows b1 as %+v, want superseded by %s", got, b2.Block)
	}
}

// compact compacts some of the agent's results (and maybe a summary) into a
// summary, as a runtime does: what the test expects each replaced copy to
// hand on is what the binding shows of it (the latest in-place view with
// text, else the tool's output; nothing of a notice).
func (r *invRun) compact(ag *invAgent) {
	var replaced []string
	for range 1 + r.s.n(3) {
		if a := r.pickAnchor(ag); a != "" && !slices.Contains(replaced, a) {
			replaced = append(replaced, a)
		}
	}
	anchor := fmt.Sprintf("sum_%d", ag.next+1)
	if a := r.pickAnchor(ag); a != "" && ag.anchors[a].derived && r.s.n(2) == 0 {
		anchor = a // the same summary reported again
	} else {
		ag.next++
	}
	var want []invProv
	var summary strings.Builder
	for _, a := range append(slices.Clone(replaced), anchor) {
		h := ag.anchors[a]
		if h == nil {
			continue
		}
		want = append(want, r.copyOf(h)...)
	}
	for _, pv := range want {
		summary.WriteString(strings.Join(pv.old, "\n") + "\n")
	}
	p := protocol.CompactedParams{Agent: ag.name, Anchor: anchor, Text: summary.String(), Replaced: append(replaced, "never")}
	res, err := r.h.m.Compacted(context.Background(), p)
	r.logf("compacted %s into %s -> %+v %v", replaced, anchor, res, err)
	if err != nil {
		r.fail("compacted: %v", err)
	}
	var held []string
	for _, a := range replaced {
		if ag.anchors[a] != nil && a != anchor {
			held = append(held, a)
		}
	}
	slices.Sort(held)
	if !slices.Equal(slices.Sorted(slices.Values(res.Released)), held) {
		r.fail("compacted released %v, want the held replaced anchors %v", res.Released, held)
	}
	for _, a := range append(replaced, anchor) {
		if h := ag.anchors[a]; h != nil {
			r.retire(ag, h)
			delete(ag.anchors, a)
		}
	}
	// Every range the server kept is one the test expects; every range the
	// test expects is kept, or held by a kept one with the same lines.
	// (Two copies of the same lines with other texts are two ranges; the
	// provenance names lines, not texts, so both stand for that entry.)
	var got []invProv
	for _, pr := range res.Provenance {
		found := false
		for _, w := range want {
			if w.uri == pr.URI && w.orig == (Range{Start: pr.StartLine, End: pr.EndLine}) {
				found = true
				if !slices.ContainsFunc(got, func(g invProv) bool {
					return g.uri == w.uri && g.whole == w.whole && g.orig == w.orig && slices.Equal(g.old, w.old)
				}) {
					got = append(got, w)
				}
			}
		}
		if !found {
			r.fail("compacted: provenance %+v is no copy the binding showed (%+v)", pr, want)
		}
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g invProv) bool { return g.uri == w.uri && provHolds(g, w) }) {
			r.fail("compacted: %s %v (%q) shown but not in the provenance %+v", w.uri, w.orig, w.old, res.Provenance)
		}
	}
	if (res.Derived == "") != (len(got) == 0) {
		r.fail("compacted: derived %q with %d ranges", res.Derived, len(got))
	}
	if res.Derived != "" {
		ag.anchors[anchor] = &heldBlock{agent: ag.name, anchor: anchor, block: res.Derived, observed: protocol.Valid, derived: true, summary: p.Text, provs: got}
	}
}

// copyOf is what the binding shows of h as the ranges a summary is built
// from: its copy in place, unless that is a notice.
func (r *invRun) copyOf(h *heldBlock) []invProv {
	if h.derived {
		return slices.Clone(h.provs)
	}
	srcs := h.refs
	if v := h.view; v != nil {
		if len(v.Sources) == 0 {
			return nil // a notice
		}
		srcs = v.Sources
	}
	var out []invProv
	for _, s := range srcs {
		t := normalizeText(s.Text)
		if s.Range == nil {
			ls := wholeLines(t) // blank lines at the end state nothing
			out = append(out, invProv{uri: s.URI, whole: true, orig: Range{Start: 1, End: len(ls)}, old: ls})
			continue
		}
		rg := Range(*s.Range)
		out = append(out, invProv{uri: s.URI, orig: rg, old: spanLines(t, rg)})
	}
	return out
}

// provHolds reports whether g's lines contain w's, with the same text.
func provHolds(g, w invProv) bool {
	if w.orig.Start < g.orig.Start || w.orig.End > g.orig.End || w.whole && !g.whole {
		return false
	}
	off := w.orig.Start - g.orig.Start
	return off+len(w.old) <= len(g.old) && slices.Equal(g.old[off:off+len(w.old)], w.old)
}

// applyDerived keeps a summary's latest view: in place, the summary as
// written then the correction (or nothing: the summary stands); at the
// tail, the note's lines about it.
func (r *invRun) applyDerived(h *heldBlock, v protocol.BlockView, note string) {
	switch v.Placement {
	case "":
		if h.note != nil {
			r.fail("summary %s rewritten in place below an erratum that still speaks for it", h.anchor)
		}
		switch {
		case v.Status == protocol.DerivedStale && (v.Show == nil || *v.Show != h.summary+"\n\n"+v.Notice):
			r.fail("summary %s: show %v is not the summary as written, then the correction %q", h.anchor, v.Show, v.Notice)
		case v.Status == protocol.Valid && (v.Show != nil || v.Notice != ""):
			r.fail("summary %s: valid with show %v, notice %q", h.anchor, v.Show, v.Notice)
		case v.Status != protocol.Valid && v.Status != protocol.DerivedStale:
			r.fail("summary %s: status %s", h.anchor, v.Status)
		}
		h.view = &v
	case PlacementTail:
		if !r.tailing() {
			r.fail("placement inplace sent an erratum for %s", h.anchor)
		}
		v.Erratum = aboutAnchor(note, h.anchor)
		if v.Erratum == "" {
			r.fail("summary %s: the note %q does not name it", h.anchor, note)
		}
		h.note = &v
	}
}

// checkDerived is the invariant for a summary: the latest statement about
// it (its in-place correction or the latest erratum naming it) is true, and
// every range it was built from that changed has a correction in force
// (under the range rule; under mentioned every statement must still be
// true). A range whose old lines are still in the source, once, needs none.
func (r *invRun) checkDerived(h *heldBlock) {
	said := ""
	switch {
	case h.note != nil:
		said = h.note.Erratum
		if strings.HasSuffix(said, " is current again.") {
			said = ""
		}
	case h.view != nil:
		said = h.view.Notice
	}
	segs := strings.Split(strings.ReplaceAll(said, "\n[concord] ", "\x00[concord] "), "\x00")
	if said == "" {
		segs = nil
	}
	rule := r.h.m.resolve(nil, nil).derived
	// Ranges with the same lines (copies of other texts) share a name in
	// the correction: they are judged together.
	type group struct {
		uri   string
		whole bool
		orig  Range
		olds  [][]string
	}
	var groups []*group
	for _, pv := range h.provs {
		// (A whole copy's correction names no lines: every whole copy of a
		// source shares one name.)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.uri == pv.uri && g.whole == pv.whole && (g.whole || g.orig == pv.orig) })
		if i < 0 {
			groups = append(groups, &group{uri: pv.uri, whole: pv.whole, orig: pv.orig})
			i = len(groups) - 1
		}
		groups[i].olds = append(groups[i].olds, pv.old)
	}
	for _, g := range groups {
		name := strings.TrimPrefix(g.uri, "mem:/")
		var mine []string
		for _, sg := range segs {
			head, _, _ := strings.Cut(sg, "\n")
			if g.whole && strings.Contains(head, name+", which it was built from,") ||
				!g.whole && (strings.Contains(head, name+" "+linesOf(g.orig)+",") || strings.Contains(head, name+", which it was built from ("+linesOf(g.orig)+")")) {
				mine = append(mine, sg)
			}
		}
		cur, present := r.content[g.uri]
		var now []string
		if present {
			now = locator.SplitLines(normalizeText(cur))
			if g.whole {
				now = wholeLines(normalizeText(cur))
			}
		}
		for _, sg := range mine {
			r.checkDerivedLines(h, g.uri, g.orig, g.olds, sg, now, present)
		}
		allOnce, someGone := true, false
		for _, old := range g.olds {
			found := 0
			if present && g.whole && slices.Equal(now, old) {
				found = 1
			}
			for i := 0; present && !g.whole && i+len(old) <= len(now); i++ {
				if slices.Equal(now[i:i+len(old)], old) {
					found++
				}
			}
			allOnce = allOnce && found == 1
			someGone = someGone || found == 0
		}
		switch {
		case allOnce && len(mine) > 0:
			r.fail("summary %s: %s %v is still there as shown, yet the correction says %q", h.anchor, g.uri, g.orig, mine)
		case someGone && len(mine) == 0 && rule == protocol.DerivedRange && !slices.ContainsFunc(segs, func(sg string) bool {
			// A range held by another one of the same source (a read inside
			// a whole read) is corrected under that one's name.
			head, _, _ := strings.Cut(sg, "\n")
			return strings.Contains(head, " "+name+" ") || strings.Contains(head, " "+name+",")
		}):
			r.fail("summary %s: %s %v changed (now %q), no correction in force (said %q)", h.anchor, g.uri, g.orig, cur, said)
		}
	}
}

// checkDerivedLines checks one correction's lines: each old line is what the
// summary was built from, each current one is the source's now.
func (r *invRun) checkDerivedLines(h *heldBlock, uri string, orig Range, olds [][]string, seg string, now []string, present bool) {
	head, body, _ := strings.Cut(seg, "\n")
	if strings.Contains(head, "was deleted") || strings.Contains(head, "could not be re-read") {
		if present {
			r.fail("summary %s: %q but %s is there", h.anchor, head, uri)
		}
		return
	}
	if !present {
		r.fail("summary %s: %q but %s is gone", h.anchor, head, uri)
		return
	}
	for _, l := range strings.Split(body, "\n") {
		if len(l) < 2 || (l[0] != '+' && l[0] != '-') {
			continue
		}
		num, text, ok := strings.Cut(l[1:], ": ")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		switch l[0] {
		case '+':
			if n < 1 || n > len(now) || now[n-1] != text {
				r.fail("summary %s: correction says %s line %d is %q, it is not (%q)", h.anchor, uri, n, text, now)
			}
		case '-':
			i := n - orig.Start
			if !slices.ContainsFunc(olds, func(old []string) bool { return i >= 0 && i < len(old) && old[i] == text }) {
				r.fail("summary %s: correction says %s line %d was %q, the summary saw %q", h.anchor, uri, n, text, olds)
			}
		}
	}
}
