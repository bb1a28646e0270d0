package runtime

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

const cfgID = "mem://proj/config.yaml"

var cfgLines = []string{
	"name: demo",
	"retry_limit: 3",
	"timeout_seconds: 30",
	"log_level: info",
	"workers: 4",
	"region: eu-west",
	"owner: platform team",
	"# end of config",
}

// summaryText restates two of the lines the read showed, as a compaction
// summary does: retry_limit and the region, in its own words.
const summaryText = "Summary: config.yaml sets retry_limit to 3 and the region to eu-west."

// compactedHarness reads lines 1-7 of the config in call_1 (sent with one
// sync), then compacts call_1 into the summary at anchor sum_1.
func compactedHarness(t *testing.T, placement, rule string) (*harness, protocol.CompactedResult) {
	t.Helper()
	opts := protocol.InitializeParams{Placement: placement}
	if rule != "" {
		opts.Policy = &protocol.PolicyConfig{Global: protocol.Policy{Derived: rule}}
	}
	h := newHarness(t, Config{Options: opts})
	h.mem.set(cfgID, text(cfgLines))
	h.observe("main", 1, "call_1", protocol.Source{URI: cfgID, Range: rng(1, 7), Text: span(cfgLines, 1, 7)})
	h.sync("main", 1)
	res, err := h.m.Compacted(context.Background(), protocol.CompactedParams{Agent: "main", Anchor: "sum_1", Text: summaryText, Replaced: []string{"call_1", "call_9"}})
	if err != nil {
		t.Fatalf("compacted: %v", err)
	}
	return h, res
}

func withLine(i int, s string) []string {
	ls := append([]string(nil), cfgLines...)
	ls[i-1] = s
	return ls
}

// TestCompactedResult: the replaced block is released, the anchor never
// tracked is ignored, and the provenance is the lines call_1 showed.
func TestCompactedResult(t *testing.T) {
	h, res := compactedHarness(t, PlacementInplace, "")
	want := protocol.CompactedResult{Derived: "b2", Released: []string{"call_1"},
		Provenance: []protocol.Provenance{{URI: cfgID, StartLine: 1, EndLine: 7, Version: hashOf(text(cfgLines))}}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	// Nothing changed: the summary needs no correction, and says nothing.
	if r := h.sync("main", 2); len(r.Blocks) != 0 {
		t.Fatalf("sync after compaction: %+v", r.Blocks)
	}
	// It keeps the source watched but not its text: only the seven lines.
	h.m.mu.Lock()
	src := h.m.ix.sources[cfgID]
	kept, held := src.text, h.m.ix.stats().BytesHeld
	h.m.mu.Unlock()
	if kept != "" {
		t.Errorf("the source's text is kept for a summary: %q", kept)
	}
	lines := int64(len(span(cfgLines, 1, 7))) - 6 // without the newlines
	if want := int64(len(summaryText)) + lines; held != want {
		t.Errorf("bytesHeld %d, want %d (the summary and the seven lines)", held, want)
	}
	if n := h.mem.watching(cfgID); n != 1 {
		t.Errorf("watches on the source: %d, want 1", n)
	}
	if st := h.m.Stats(); st.Blocks[protocol.Valid] != 1 || st.Reconciliations["compacted"] != 1 || st.Sources != 1 {
		t.Errorf("stats %+v", st)
	}
	// Releasing the summary lets the source go.
	if _, err := h.m.Release(context.Background(), protocol.ReleaseParams{Agent: "main", Anchors: []string{"sum_1"}}); err != nil {
		t.Fatal(err)
	}
	if n := h.mem.watching(cfgID); n != 0 {
		t.Errorf("watches after the summary was released: %d, want 0", n)
	}
}

// TestCompactedNothingTracked: no derived block without a tracked result.
func TestCompactedNothingTracked(t *testing.T) {
	h := newHarness(t, Config{})
	for _, agent := range []string{"main", "other"} {
		if agent == "main" {
			h.mem.set(cfgID, text(cfgLines))
			h.observe("main", 1, "call_1", protocol.Source{URI: cfgID, Range: rng(1, 2), Text: span(cfgLines, 1, 2)})
		}
		res, err := h.m.Compacted(context.Background(), protocol.CompactedParams{Agent: agent, Anchor: "sum", Text: "x", Replaced: []string{"call_7"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Derived != "" || len(res.Released) != 0 || len(res.Provenance) != 0 {
			t.Errorf("%s: %+v, want no derived block", agent, res)
		}
	}
	for _, tc := range []struct {
		p     protocol.CompactedParams
		field string
	}{
		{protocol.CompactedParams{Anchor: "s"}, "agent"},
		{protocol.CompactedParams{Agent: "main"}, "anchor"},
		{protocol.CompactedParams{Agent: "main", Anchor: "s", Replaced: []string{"a", ""}}, "replaced[1]"},
	} {
		_, err := h.m.Compacted(context.Background(), tc.p)
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: error %v, want field %s", tc.p, err, tc.field)
		}
	}
}

// TestDerivedCorrection: which changes correct the summary, under each
// rule, and what the correction says.
func TestDerivedCorrection(t *testing.T) {
	tests := []struct {
		name   string
		rule   string
		after  []string // nil: the file is deleted
		status protocol.Status
		want   string // the correction ("" none)
	}{
		{"mentioned value", protocol.DerivedMentioned, withLine(2, "retry_limit: 5"), protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-7):\n-2: retry_limit: 3\n+2: retry_limit: 5"},
		{"default is mentioned", "", withLine(3, "timeout_seconds: 60"), "", ""},
		{"unmentioned value", protocol.DerivedMentioned, withLine(3, "timeout_seconds: 60"), "", ""},
		{"unmentioned value, range rule", protocol.DerivedRange, withLine(3, "timeout_seconds: 60"), protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-7):\n-3: timeout_seconds: 30\n+3: timeout_seconds: 60"},
		{"a word the summary uses", protocol.DerivedMentioned, withLine(6, "region: us-east"), protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-7):\n-6: region: eu-west\n+6: region: us-east"},
		{"after the range", protocol.DerivedRange, withLine(8, "# the end"), "", ""},
		{"moved, text the same", protocol.DerivedRange, append([]string{"# header", "# more"}, cfgLines...), "", ""},
		{"inserted inside, range rule", protocol.DerivedRange, append(append(append([]string(nil), cfgLines[:2]...), "retry_backoff: 2"), cfgLines[2:]...), protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-8):\n(inserted after line 2)\n+3: retry_backoff: 2"},
		{"inserted inside, mentioned rule", protocol.DerivedMentioned, append(append(append([]string(nil), cfgLines[:2]...), "retry_backoff: 2"), cfgLines[2:]...), "", ""},
		{"emptied", protocol.DerivedMentioned, []string{}, protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, were removed (/proj/config.yaml now has 0 lines)."},
		{"rewritten, judged in place", protocol.DerivedMentioned, []string{"# rewritten", "name: other"}, protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-2):\n-1: name: demo\n-2: retry_limit: 3\n-3: timeout_seconds: 30\n-4: log_level: info\n-5: workers: 4\n-6: region: eu-west\n-7: owner: platform team\n+1: # rewritten\n+2: name: other"},
		{"deleted", protocol.DerivedMentioned, nil, protocol.DerivedStale,
			"[concord] The summary in sum_1 is outdated: /proj/config.yaml, which it was built from (lines 1-7), was deleted."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := compactedHarness(t, PlacementInplace, tc.rule)
			switch {
			case tc.after == nil:
				h.mem.remove(cfgID)
			case len(tc.after) == 0:
				h.mem.set(cfgID, "")
			default:
				h.mem.set(cfgID, text(tc.after))
			}
			r := h.sync("main", 2)
			if tc.status == "" {
				if len(r.Blocks) != 0 {
					t.Fatalf("a correction nobody needs: %+v", r.Blocks)
				}
				return
			}
			v := one(t, r)
			if v.Anchor != "sum_1" || v.Status != tc.status || v.Notice != tc.want {
				t.Fatalf("view %+v\nwant status %s, notice:\n%s", v, tc.status, tc.want)
			}
			if v.Show == nil || *v.Show != summaryText+"\n\n"+tc.want {
				t.Fatalf("show %v, want the summary as written, then the correction", v.Show)
			}
			// Said once.
			if r := h.sync("main", 3); len(r.Blocks) != 0 {
				t.Fatalf("said twice: %+v", r.Blocks)
			}
			// Back to what the summary saw: the summary stands again.
			h.mem.set(cfgID, text(cfgLines))
			v = one(t, h.sync("main", 4))
			if v.Status != protocol.Valid || v.Show != nil || v.Notice != "" {
				t.Fatalf("after the change back: %+v", v)
			}
		})
	}
}

// TestDerivedTail: under tail the summary stays as written; the correction
// is an erratum, said once, replaced by the next change's, and withdrawn by
// "current again" when the lines are back.
func TestDerivedTail(t *testing.T) {
	h, _ := compactedHarness(t, PlacementTail, protocol.DerivedMentioned)
	steps := []struct {
		lines   []string
		erratum string // "": no view
	}{
		{withLine(2, "retry_limit: 5"), "[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-7):\n-2: retry_limit: 3\n+2: retry_limit: 5"},
		{withLine(2, "retry_limit: 5"), ""},
		{withLine(2, "retry_limit: 6"), "[concord] The summary in sum_1 is outdated: /proj/config.yaml lines 1-7, which it was built from, changed (now lines 1-7):\n-2: retry_limit: 3\n+2: retry_limit: 6"},
		{cfgLines, "[concord] The summary in sum_1 is current again."},
		{cfgLines, ""},
	}
	for i, s := range steps {
		h.mem.set(cfgID, text(s.lines))
		r := h.sync("main", 2+i)
		if s.erratum == "" {
			if len(r.Blocks) != 0 {
				t.Fatalf("step %d: %+v", i, r.Blocks)
			}
			continue
		}
		v := one(t, r)
		if v.Placement != PlacementTail || v.Erratum != s.erratum || v.Show != nil {
			t.Fatalf("step %d: %+v\nwant erratum:\n%s", i, v, s.erratum)
		}
	}
	// A flush puts the truth in place and the notes go.
	h.mem.set(cfgID, text(withLine(2, "retry_limit: 7")))
	r, err := h.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: 9, PrefixRebuilt: true})
	if err != nil {
		t.Fatal(err)
	}
	v := one(t, r)
	if !r.Flushed || v.Placement != "" || v.Show == nil || !strings.HasPrefix(*v.Show, summaryText+"\n\n[concord] The summary in sum_1 is outdated:") || !strings.HasSuffix(*v.Show, "+2: retry_limit: 7") {
		t.Fatalf("flush: %+v", v)
	}
}

// TestRecompacted: a summary compacted again hands its provenance on, and
// a change corrects the new summary.
func TestRecompacted(t *testing.T) {
	h, _ := compactedHarness(t, PlacementInplace, protocol.DerivedMentioned)
	res, err := h.m.Compacted(context.Background(), protocol.CompactedParams{Agent: "main", Anchor: "sum_2", Text: "Earlier: retry_limit 3.", Replaced: []string{"sum_1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Derived != "b3" || !reflect.DeepEqual(res.Released, []string{"sum_1"}) || len(res.Provenance) != 1 || res.Provenance[0].StartLine != 1 || res.Provenance[0].EndLine != 7 {
		t.Fatalf("%+v", res)
	}
	if n := h.mem.watching(cfgID); n != 1 {
		t.Errorf("watches: %d, want 1", n)
	}
	h.mem.set(cfgID, text(withLine(2, "retry_limit: 5")))
	v := one(t, h.sync("main", 2))
	if v.Anchor != "sum_2" || !strings.Contains(v.Notice, "The summary in sum_2 is outdated") {
		t.Fatalf("%+v", v)
	}
}

// TestMentions: the rule's test of one change against a summary.
func TestMentions(t *testing.T) {
	tests := []struct {
		name     string
		summary  string
		old, cur []string
		want     bool
	}{
		{"quoted line", "the file says `return cached`", []string{"    return cached  "}, []string{"    return fresh"}, true},
		{"value taken out", "retry_limit is 3", []string{"retry_limit: 3"}, []string{"retry_limit: 5"}, true},
		{"identifier kept, value not mentioned", "retry_limit is set in config", []string{"retry_limit: 3"}, []string{"retry_limit: 5"}, false},
		{"common words only", "the handler is in this file", []string{"the one"}, []string{"a one"}, false},
		{"removed line", "workers: 4 by default", []string{"workers: 4"}, nil, true},
		{"pure insertion", "anything at all", nil, []string{"new line"}, false},
		{"case and punctuation", "Founded by Alma Brekke.", []string{"In 1987, Alma Brekke founded it."}, []string{"In 1987, Bruno Brekke founded it."}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mentions(tc.summary, tc.old, tc.cur); got != tc.want {
				t.Errorf("mentions = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzMentions: the rule's test never fails on any text, a summary that
// quotes a changed line (8 characters or more) always mentions it, and an
// insertion that removes nothing never does.
func FuzzMentions(f *testing.F) {
	f.Add("retry_limit is 3", "retry_limit: 3", "retry_limit: 5")
	f.Add("Ünïcödé 1,500 people", "employs 1,500 people.", "employs 1,600 people.")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, summary, old, cur string) {
		mentions(summary, []string{old}, []string{cur})
		if q := strings.TrimSpace(old); len(q) >= minQuoted && !mentions(summary+" "+old, []string{old}, []string{cur}) {
			t.Errorf("a summary quoting %q does not mention it", old)
		}
		if mentions(summary, nil, []string{cur}) {
			t.Errorf("an insertion mentioned")
		}
	})
}
