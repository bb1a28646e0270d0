package runtime

import (
	"github.com/concord-ctx/concord/protocol"

	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const fid = "mem://proj/main.go"

func intp(n int) *int { return &n }

// TestPolicyPaths covers every action for a local edit and for drift.
func TestPolicyPaths(t *testing.T) {
	base := numbered(12)
	local := append([]string(nil), base...)
	local[3] = strings.Replace(local[3], "value4", "changed4", 1) // one token in the span 3-5
	drift := append([]string(nil), base...)
	drift[2], drift[3], drift[4] = "completely", "different lines", "now here"

	tests := []struct {
		name       string
		policy     protocol.Policy
		after      []string
		status     protocol.Status
		text       string // "" = no sources in the view
		notice     string // substring; "" = no notice
		reasonPart string
	}{
		{"patch/local", protocol.Policy{Local: protocol.Patch}, local, protocol.Patched, span(local, 3, 5), "", "local"},
		{"patch/drift", protocol.Policy{Drift: protocol.Patch}, drift, protocol.Patched, span(drift, 3, 5), "", "refreshed"},
		{"refresh/local", protocol.Policy{Local: protocol.Refresh}, local, protocol.Patched, span(local, 3, 5), "", "refreshed: lines 3-5 re-read"},
		{"refresh/drift", protocol.Policy{Drift: protocol.Refresh}, drift, protocol.Patched, span(drift, 3, 5), "", "refreshed"},
		{"annotate/local", protocol.Policy{Local: protocol.Annotate}, local, protocol.Stale, span(base, 3, 5), "may be outdated. Re-read /proj/main.go lines 3-5", ""},
		{"annotate/drift", protocol.Policy{Drift: protocol.Annotate}, drift, protocol.Stale, span(base, 3, 5), "may be outdated", "drift"},
		{"suppress/local", protocol.Policy{Local: protocol.Suppress}, local, protocol.Invalid, "", "[concord] /proj/main.go changed since this read; the content shown earlier (lines 3-5) is no longer accurate. Re-read /proj/main.go lines 3-5 before relying on it.", ""},
		{"suppress/drift", protocol.Policy{Drift: protocol.Suppress}, drift, protocol.Invalid, "", "Re-read /proj/main.go lines 3-5", "drift"},
		{"default/local", protocol.Policy{}, local, protocol.Patched, span(local, 3, 5), "", ""},
		{"default/drift", protocol.Policy{}, drift, protocol.Invalid, "", "no longer accurate", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Options: protocol.InitializeParams{Policy: &protocol.PolicyConfig{Global: tc.policy}}})
			h.mem.set(fid, text(base))
			o := h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)})
			if o.Status != protocol.Valid {
				t.Fatalf("observe status %s, want valid", o.Status)
			}
			h.mem.set(fid, text(tc.after))
			cr := h.changed(fid)
			if !reflect.DeepEqual(cr.Blocks, []string{o.Block}) {
				t.Fatalf("changed blocks %v, want [%s]", cr.Blocks, o.Block)
			}
			v := one(t, h.sync("main", 2))
			if v.Status != tc.status {
				t.Fatalf("status %s, want %s (reason %q)", v.Status, tc.status, v.Reason)
			}
			if tc.text == "" && len(v.Sources) != 0 {
				t.Fatalf("sources shown for %s block: %+v", v.Status, v.Sources)
			}
			if tc.text != "" && (len(v.Sources) != 1 || v.Sources[0].Text != tc.text) {
				t.Fatalf("sources %+v, want text %q", v.Sources, tc.text)
			}
			if (tc.notice == "") != (v.Notice == "") || !strings.Contains(v.Notice, tc.notice) {
				t.Fatalf("notice %q, want containing %q", v.Notice, tc.notice)
			}
			if v.Notice != "" && !strings.HasPrefix(v.Notice, "[concord]") {
				t.Fatalf("notice does not start with [concord]: %q", v.Notice)
			}
			if !strings.Contains(v.Reason, tc.reasonPart) {
				t.Fatalf("reason %q, want containing %q", v.Reason, tc.reasonPart)
			}
			// Nothing more to say until something changes again.
			if r := h.sync("main", 3); len(r.Blocks) != 0 {
				t.Fatalf("second sync not empty: %+v", r.Blocks)
			}
		})
	}
}

func TestPolicyResolution(t *testing.T) {
	m := New(Config{Options: protocol.InitializeParams{Policy: &protocol.PolicyConfig{
		Global:   protocol.Policy{Local: protocol.Patch, Drift: protocol.Suppress, MaxAgeTurns: intp(0)},
		ByType:   map[string]protocol.Policy{"mem": {Drift: protocol.Annotate, MaxAgeTurns: intp(10), Derived: protocol.DerivedRange}},
		BySource: map[string]protocol.Policy{"mem://a": {Local: protocol.Refresh}},
	}}})
	defer m.Close()
	_, fa := newMem()
	m.AddAdapter(fa)
	srcA := &source{id: "mem://a", scheme: "mem"}
	srcB := &source{id: "mem://b", scheme: "mem"}
	srcX := &source{id: "x://c", scheme: "x"}
	tests := []struct {
		name string
		b    *block
		s    *source
		want effective
	}{
		{"global only", nil, srcX, effective{protocol.Patch, protocol.Suppress, true, 0, DefaultDerived}},
		{"type over global", nil, srcB, effective{protocol.Patch, protocol.Annotate, true, 10, protocol.DerivedRange}},
		{"source over type", nil, srcA, effective{protocol.Refresh, protocol.Annotate, true, 10, protocol.DerivedRange}},
		{"block over source", &block{x: &blockExtra{policy: &protocol.Policy{Local: protocol.Suppress, MaxAgeTurns: intp(2)}}}, srcA, effective{protocol.Suppress, protocol.Annotate, true, 2, protocol.DerivedRange}},
		{"block field by field", &block{x: &blockExtra{policy: &protocol.Policy{Drift: protocol.Refresh, Derived: protocol.DerivedMentioned}}}, srcA, effective{protocol.Refresh, protocol.Refresh, true, 10, protocol.DerivedMentioned}},
		{"invalid action inherits", &block{x: &blockExtra{policy: &protocol.Policy{Local: "bogus", Derived: "bogus"}}}, srcX, effective{protocol.Patch, protocol.Suppress, true, 0, DefaultDerived}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.resolve(tc.b, tc.s); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMovedSpanIsProjectedAsPatched(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(10)
	h.mem.set(fid, text(base))
	o := h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(6, 8), Text: span(base, 6, 8)})
	after := append([]string{"// new header", "// second"}, base...)
	h.mem.set(fid, text(after))
	h.changed(fid)
	v := one(t, h.sync("main", 2))
	if v.Block != o.Block || v.Status != protocol.Patched || v.Reason != "moved: lines 6-8 -> 8-10" {
		t.Fatalf("got %+v", v)
	}
	if v.Sources[0].Range == nil || *v.Sources[0].Range != (protocol.Range{Start: 8, End: 10}) || v.Sources[0].Text != span(base, 6, 8) {
		t.Fatalf("source %+v", v.Sources[0])
	}
}

func TestChangeOutsideSpanLeavesBlockAlone(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(20)
	h.mem.set(fid, text(base))
	h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(2, 4), Text: span(base, 2, 4)})
	after := append([]string(nil), base...)
	after[15] = "changed far below"
	h.mem.set(fid, text(after))
	if cr := h.changed(fid); len(cr.Blocks) != 0 {
		t.Fatalf("blocks changed: %v", cr.Blocks)
	}
	if r := h.sync("main", 2); len(r.Blocks) != 0 {
		t.Fatalf("projection not empty: %+v", r.Blocks)
	}
	// The block tracks the new version and still reconciles later edits.
	after2 := append([]string(nil), after...)
	after2[2] = strings.Replace(after2[2], "value3", "v3", 1)
	h.mem.set(fid, text(after2))
	h.changed(fid)
	v := one(t, h.sync("main", 3))
	if v.Status != protocol.Patched || v.Sources[0].Text != span(after2, 2, 4) || v.Sources[0].Version != hashOf(text(after2)) {
		t.Fatalf("got %+v", v)
	}
}

func TestSupersession(t *testing.T) {
	base := numbered(30)
	tests := []struct {
		name       string
		first      *protocol.Range
		second     *protocol.Range
		agent2     string
		superseded bool
	}{
		{"wider read supersedes", rng(10, 12), rng(5, 20), "main", true},
		{"same range supersedes", rng(10, 12), rng(10, 12), "main", true},
		{"whole read supersedes", rng(10, 12), nil, "main", true},
		{"narrower read does not", rng(5, 20), rng(10, 12), "main", false},
		{"overlap only does not", rng(10, 20), rng(15, 25), "main", false},
		{"other agent does not", rng(10, 12), rng(5, 20), "sub-1", false},
		{"ranged read does not supersede whole", nil, rng(1, 30), "main", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, text(base))
			ref := func(r *protocol.Range) protocol.Source {
				if r == nil {
					return protocol.Source{URI: fid, Text: text(base)}
				}
				return protocol.Source{URI: fid, Range: r, Text: span(base, r.Start, r.End)}
			}
			o1 := h.observe("main", 1, "c1", ref(tc.first))
			o2 := h.observe(tc.agent2, 2, "c2", ref(tc.second))
			if got := len(o2.Superseded) == 1 && o2.Superseded[0] == o1.Block; got != tc.superseded {
				t.Fatalf("superseded %v, want %v", o2.Superseded, tc.superseded)
			}
			r := h.sync("main", 3)
			if !tc.superseded {
				if len(r.Blocks) != 0 {
					t.Fatalf("projection %+v", r.Blocks)
				}
				return
			}
			v := one(t, r)
			if v.Status != protocol.Superseded || v.SupersededBy != o2.Block || len(v.Sources) != 0 ||
				!strings.HasPrefix(v.Notice, "[concord] a newer read of /proj/main.go") {
				t.Fatalf("got %+v", v)
			}
			// Audit trail: still counted, no longer reconciled.
			if st := h.m.Stats(); st.Blocks[protocol.Superseded] != 1 {
				t.Fatalf("stats %+v", st)
			}
			h.mem.set(fid, "all new\n")
			h.changed(fid)
			for _, b := range h.sync("main", 4).Blocks {
				if b.Block == o1.Block {
					t.Fatalf("superseded block reconciled again: %+v", b)
				}
			}
		})
	}
}

func TestAge(t *testing.T) {
	h := newHarness(t, Config{Options: protocol.InitializeParams{Policy: &protocol.PolicyConfig{ByType: map[string]protocol.Policy{"mem": {MaxAgeTurns: intp(3)}}}}})
	base := numbered(5)
	h.mem.set(fid, text(base))
	o := h.observe("main", 2, "c1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	if r := h.sync("main", 5); len(r.Blocks) != 0 {
		t.Fatalf("aged too early: %+v", r.Blocks)
	}
	v := one(t, h.sync("main", 6))
	if v.Block != o.Block || v.Status != protocol.Stale || len(v.Sources) != 1 ||
		v.Notice != "[concord] this read of /proj/main.go lines 1-2 is from turn 2 (now turn 6, limit 3 turns) and may be outdated. Re-read /proj/main.go lines 1-2 before relying on it." {
		t.Fatalf("got %+v", v)
	}
	// A re-read supersedes the aged block and is fresh.
	o2 := h.observe("main", 6, "c2", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	if len(o2.Superseded) != 1 || o2.Status != protocol.Valid {
		t.Fatalf("re-read %+v", o2)
	}
	// Age off (0) at the global level: never stale.
	h2 := newHarness(t, Config{})
	h2.mem.set(fid, text(base))
	h2.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	if r := h2.sync("main", 1000); len(r.Blocks) != 0 {
		t.Fatalf("age off but flagged: %+v", r.Blocks)
	}
}

func TestEventsAreNeverTracked(t *testing.T) {
	h := newHarness(t, Config{})
	r, err := h.m.Observe(context.Background(), protocol.ObserveParams{Agent: "main", Turn: 1, Anchor: "call_cmd", Kind: protocol.Event,
		Sources: []protocol.Source{{URI: "mem://proj/out.log", Text: "ran"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Block != "" || r.Status != protocol.EventAck || protocol.EventAck != "event" || r.Superseded == nil {
		t.Fatalf("got %+v", r)
	}
	if st := h.m.Stats(); len(st.Blocks) != 0 || st.Sources != 0 || h.mem.reads.Load() != 0 {
		t.Fatalf("event tracked: %+v reads=%d", st, h.mem.reads.Load())
	}
}

func TestMultiSourceGrepBlock(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := numbered(10), numbered(10)
	ida, idb := "mem://proj/a.go", "mem://proj/b.go"
	h.mem.set(ida, text(a))
	h.mem.set(idb, text(b))
	o := h.observe("main", 1, "grep_1",
		protocol.Source{URI: ida, Range: rng(2, 2), Text: a[1]},
		protocol.Source{URI: ida, Range: rng(7, 7), Text: a[6]},
		protocol.Source{URI: idb, Range: rng(4, 4), Text: b[3]},
	)
	// A local edit in b.go's hit: only that link is patched.
	b2 := append([]string(nil), b...)
	b2[3] = strings.Replace(b2[3], "other4", "others4", 1)
	h.mem.set(idb, text(b2))
	if cr := h.changed(idb); len(cr.Blocks) != 1 || cr.Blocks[0] != o.Block {
		t.Fatalf("changed %v", cr.Blocks)
	}
	v := one(t, h.sync("main", 2))
	if v.Status != protocol.Patched || len(v.Sources) != 3 || v.Sources[0].Text != a[1] || v.Sources[1].Text != a[6] || v.Sources[2].Text != b2[3] {
		t.Fatalf("got %+v", v)
	}
	// Drift under a.go's second hit: the block is suppressed, the notice names it.
	a2 := append([]string(nil), a...)
	a2[6] = "x"
	h.mem.set(ida, text(a2))
	h.changed(ida)
	v = one(t, h.sync("main", 3))
	if v.Status != protocol.Invalid || !strings.Contains(v.Notice, "Re-read /proj/a.go line 7") || strings.Contains(v.Notice, "b.go") {
		t.Fatalf("got %+v", v)
	}
	// A sync verifies both sources: nothing else pending.
	if r := h.sync("main", 4); len(r.Blocks) != 0 {
		t.Fatalf("got %+v", r.Blocks)
	}
}

func TestDeleteAndComeBack(t *testing.T) {
	base := numbered(10)
	tests := []struct {
		name   string
		back   []string
		status protocol.Status
		rng    Range
	}{
		{"same content", base, protocol.Valid, Range{Start: 4, End: 5}},
		{"shifted", append([]string{"new first line"}, base...), protocol.Patched, Range{Start: 5, End: 6}},
		{"gone for good", []string{"unrelated", "content"}, protocol.Invalid, Range{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, text(base))
			o := h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(4, 5), Text: span(base, 4, 5)})
			h.mem.remove(fid)
			v := one(t, h.sync("main", 2)) // the verify pass notices the deletion
			if v.Status != protocol.Invalid || !strings.HasPrefix(v.Notice, "[concord] /proj/main.go was deleted") ||
				!strings.Contains(v.Notice, "lines 4-5") {
				t.Fatalf("after delete: %+v", v)
			}
			h.mem.set(fid, text(tc.back))
			v = one(t, h.sync("main", 3))
			if v.Block != o.Block || v.Status != tc.status {
				t.Fatalf("after return: %+v", v)
			}
			if tc.status != protocol.Invalid && (v.Notice != "" || Range(*v.Sources[0].Range) != tc.rng || v.Sources[0].Text != span(base, 4, 5)) {
				t.Fatalf("after return: %+v", v)
			}
		})
	}
}

func TestRacedReadAtRegistration(t *testing.T) {
	base := numbered(10)
	local := append([]string(nil), base...)
	local[4] = strings.Replace(local[4], "value5", "val5", 1)
	tests := []struct {
		name   string
		shown  string
		rng    *protocol.Range
		status protocol.Status
		text   string
	}{
		{"local edit raced", span(base, 4, 6), rng(4, 6), protocol.Patched, span(local, 4, 6)},
		{"shifted lines raced", span(base, 4, 6), rng(3, 5), protocol.Patched, span(local, 4, 6)},
		{"drift raced", "nothing like\nthis at all\nreally", rng(4, 6), protocol.Invalid, ""},
		{"no race", span(local, 4, 6), rng(4, 6), protocol.Valid, span(local, 4, 6)},
		{"whole read raced", text(base), nil, protocol.Patched, strings.TrimSuffix(text(local), "\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, text(local)) // the write landed before registration
			o := h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: tc.rng, Text: tc.shown})
			if o.Status != tc.status {
				t.Fatalf("observe status %s, want %s", o.Status, tc.status)
			}
			r := h.sync("main", 2)
			if tc.status == protocol.Valid {
				if len(r.Blocks) != 0 {
					t.Fatalf("projection %+v", r.Blocks)
				}
				return
			}
			v := one(t, r)
			if !strings.HasPrefix(v.Reason, "raced read: ") {
				t.Fatalf("reason %q", v.Reason)
			}
			if tc.text != "" && v.Sources[0].Text != tc.text {
				t.Fatalf("text %q, want %q", v.Sources[0].Text, tc.text)
			}
		})
	}
}

func TestSourceErrors(t *testing.T) {
	h := newHarness(t, Config{})
	h.mem.set("mem://proj/bin", "x")
	h.mem.errs["mem://proj/bin"] = fmt.Errorf("read: %w", ErrBinary)
	tests := []struct {
		uri  string
		want error
	}{
		{"mem://outside/x", ErrOutsideRoots},
		{"nope://x/y", ErrUnknownScheme},
		{"relative/path", ErrInvalidParams}, // the field is named: sources[0].uri
	}
	for _, tc := range tests {
		_, err := h.m.Observe(context.Background(), protocol.ObserveParams{Agent: "a", Anchor: "c", Sources: []protocol.Source{{URI: tc.uri, Text: "x"}}})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.uri) {
			t.Errorf("%s: err %v, want %v naming the uri", tc.uri, err, tc.want)
		}
	}
	if st := h.m.Stats(); len(st.Blocks) != 0 {
		t.Fatalf("blocks registered on error: %+v", st)
	}
}

// TestUnavailableAtObserve: a source already gone (or binary) when the
// binding registers the read is tracked all the same: the block is invalid
// at once and the next sync tells the model (issue 10 bug 4: observe failed
// and the binding took that as "don't track", so the stale text stayed).
func TestUnavailableAtObserve(t *testing.T) {
	h := newHarness(t, Config{})
	h.mem.set("mem://proj/bin", "x")
	h.mem.errs["mem://proj/bin"] = fmt.Errorf("read: %w", ErrBinary)
	for _, tc := range []struct{ uri, notice string }{
		{"mem://proj/missing", "was deleted"},
		{"mem://proj/bin", "could not be re-read (binary)"},
	} {
		o, err := h.m.Observe(context.Background(), protocol.ObserveParams{Agent: tc.uri, Anchor: "c", Sources: []protocol.Source{{URI: tc.uri, Range: rng(1, 1), Text: "x"}}})
		if err != nil || o.Block == "" || o.Status != protocol.Invalid {
			t.Fatalf("%s: observe %+v %v, want an invalid block", tc.uri, o, err)
		}
		v := one(t, h.sync(tc.uri, 1))
		if v.Block != o.Block || v.Status != protocol.Invalid || !strings.Contains(v.Notice, tc.notice) || len(v.Sources) != 0 {
			t.Errorf("%s: sync %+v, want the notice %q", tc.uri, v, tc.notice)
		}
	}
}

func TestValidation(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"agent", func() error {
			_, err := h.m.Observe(ctx, protocol.ObserveParams{Sources: []protocol.Source{{URI: fid}}})
			return err
		}, "agent"},
		{"sources", func() error { _, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "a"}); return err }, "sources"},
		{"uri", func() error {
			_, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: fid}, {Text: "x"}}})
			return err
		}, "sources[1].uri"},
		{"range", func() error {
			_, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: fid, Range: rng(5, 2)}}})
			return err
		}, "sources[0].range.end"},
		{"kind", func() error {
			_, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "a", Kind: "x", Sources: []protocol.Source{{URI: fid}}})
			return err
		}, "kind"},
		{"policy", func() error {
			_, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "a", Policy: &protocol.Policy{Drift: "delete"}, Sources: []protocol.Source{{URI: fid}}})
			return err
		}, "policy.drift"},
		{"turn", func() error { _, err := h.m.Sync(ctx, protocol.SyncParams{Agent: "a", Turn: -1}); return err }, "turn"},
		{"sync agent", func() error { _, err := h.m.Sync(ctx, protocol.SyncParams{}); return err }, "agent"},
		{"change uri", func() error { _, err := h.m.SourceChanged(ctx, protocol.SourceChangedParams{}); return err }, "uri"},
		{"release", func() error { _, err := h.m.Release(ctx, protocol.ReleaseParams{}); return err }, "blocks"},
		{"release agent", func() error { _, err := h.m.Release(ctx, protocol.ReleaseParams{Anchors: []string{"x"}}); return err }, "agent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var fe *protocol.FieldError
			if !errors.Is(err, ErrInvalidParams) || !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err %v, want invalid params naming %q", err, tc.field)
			}
		})
	}
}

func TestReleaseAndWatchRefcount(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(10)
	h.mem.set(fid, text(base))
	o1 := h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	o2 := h.observe("main", 1, "c2", protocol.Source{URI: fid, Range: rng(5, 6), Text: span(base, 5, 6)})
	if n := h.mem.watching(fid); n != 1 {
		t.Fatalf("watches %d, want 1", n)
	}
	ctx := context.Background()
	if _, err := h.m.Release(ctx, protocol.ReleaseParams{Blocks: []string{o1.Block, "b999"}}); !errors.Is(err, ErrUnknownBlock) {
		t.Fatalf("err %v, want ErrUnknownBlock", err)
	}
	r, err := h.m.Release(ctx, protocol.ReleaseParams{Agent: "main", Anchors: []string{"c1", "event-anchor"}})
	if err != nil || !reflect.DeepEqual(r.Released, []string{o1.Block}) {
		t.Fatalf("release %+v %v", r, err)
	}
	if n := h.mem.watching(fid); n != 1 {
		t.Fatalf("watches %d after partial release, want 1", n)
	}
	if r, err = h.m.Release(ctx, protocol.ReleaseParams{Blocks: []string{o2.Block}}); err != nil || len(r.Released) != 1 {
		t.Fatalf("release %+v %v", r, err)
	}
	if n := h.mem.watching(fid); n != 0 {
		t.Fatalf("watches %d after release, want 0", n)
	}
	if st := h.m.Stats(); len(st.Blocks) != 0 || st.Sources != 0 || st.BytesHeld != 0 {
		t.Fatalf("stats after release %+v", st)
	}
}

func TestVerifyPassUsesStamp(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(10)
	h.mem.set(fid, text(base))
	h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	reads := h.mem.reads.Load()
	for i := 0; i < 5; i++ {
		h.sync("main", 2+i)
	}
	if got := h.mem.reads.Load(); got != reads {
		t.Fatalf("verify pass read %d times with unchanged stamps", got-reads)
	}
	after := append([]string(nil), base...)
	after[0] = strings.Replace(after[0], "value1", "v1", 1)
	h.mem.set(fid, text(after)) // no SourceChanged, no hint: only the verify pass can see it
	v := one(t, h.sync("main", 8))
	if v.Status != protocol.Patched || h.mem.reads.Load() != reads+1 || h.m.Stats().VerifyPasses != 6 {
		t.Fatalf("got %+v reads=%d", v, h.mem.reads.Load()-reads)
	}
}

func TestHintAndOnChange(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(10)
	h.mem.set(fid, text(base))
	h.observe("sub-1", 1, "c1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	g0 := h.m.Generation()
	after := append([]string(nil), base...)
	after[1] = strings.Replace(after[1], "value2", "v2", 1)
	h.mem.set(fid, text(after))
	h.m.Hint(fid)
	h.m.Hint("mem://unknown") // ignored
	waitFor(t, func() bool { return len(h.onChangeCalls()) > 0 })
	if c := h.onChangeCalls(); !reflect.DeepEqual(c[0], []string{"sub-1"}) {
		t.Fatalf("OnChange %v", c)
	}
	if h.m.Generation() <= g0 {
		t.Fatalf("generation did not move")
	}
	r := h.sync("sub-1", 2)
	if one(t, r).Status != protocol.Patched || r.Generation != h.m.Generation() {
		t.Fatalf("got %+v", r)
	}
}

func TestFullProjection(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(10)
	h.mem.set(fid, text(base))
	h.observe("main", 1, "c1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
	h.observe("main", 1, "c2", protocol.Source{URI: fid, Range: rng(1, 3), Text: span(base, 1, 3)})
	h.observe("other", 1, "c3", protocol.Source{URI: fid, Range: rng(1, 3), Text: span(base, 1, 3)})
	r, err := h.m.Sync(context.Background(), protocol.SyncParams{Agent: "main", Turn: 2, Full: true})
	if err != nil || !r.Full || len(r.Blocks) != 2 || r.Blocks[0].Status != protocol.Superseded || r.Blocks[1].Status != protocol.Valid ||
		r.Blocks[1].Sources[0].Text != span(base, 1, 3) {
		t.Fatalf("got %+v %v", r, err)
	}
	if r := h.sync("nobody", 1); len(r.Blocks) != 0 {
		t.Fatalf("unknown agent: %+v", r)
	}
}

// TestSlowReadDoesNotBlockOthers: a read stuck in one source's adapter call
// must not hold the manager: another agent syncs meanwhile.
func TestSlowReadDoesNotBlockOthers(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(5)
	slow, fast := "mem://proj/slow", "mem://proj/fast"
	h.mem.set(slow, text(base))
	h.mem.set(fast, text(base))
	h.observe("a", 1, "c1", protocol.Source{URI: slow, Range: rng(1, 1), Text: base[0]})
	h.observe("b", 1, "c2", protocol.Source{URI: fast, Range: rng(1, 1), Text: base[0]})
	gate := make(chan struct{})
	h.mem.mu.Lock()
	h.mem.gate[slow] = gate
	h.mem.mu.Unlock()
	h.mem.set(slow, text(numbered(6)))
	done := make(chan error, 1)
	go func() {
		_, err := h.m.Sync(context.Background(), protocol.SyncParams{Agent: "a", Turn: 2})
		done <- err
	}()
	for i := 0; i < 20; i++ {
		h.sync("b", 2)
		h.m.Stats()
	}
	select {
	case err := <-done:
		t.Fatalf("slow sync finished before the read was released: %v", err)
	default:
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUse(t *testing.T) {
	h := newHarness(t, Config{})
	ids := []string{"mem://p/a", "mem://p/b", "mem://p/c"}
	for _, id := range ids {
		h.mem.set(id, text(numbered(40)))
	}
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			agent := fmt.Sprintf("agent-%d", g%3)
			ctx := context.Background()
			for i := 0; i < 40; i++ {
				id := ids[(g+i)%len(ids)]
				ls := numbered(40)
				s := 1 + (i*7)%35
				_, _ = h.m.Observe(ctx, protocol.ObserveParams{Agent: agent, Turn: i, Anchor: fmt.Sprintf("c%d-%d", g, i),
					Sources: []protocol.Source{{URI: id, Range: rng(s, s+3), Text: span(ls, s, s+3)}}})
				if i%5 == 0 {
					ls[s] = fmt.Sprintf("edited by %d at %d", g, i)
					h.mem.set(id, text(ls))
					_, _ = h.m.SourceChanged(ctx, protocol.SourceChangedParams{URI: id})
					h.m.Hint(id)
				}
				_, _ = h.m.Sync(ctx, protocol.SyncParams{Agent: agent, Turn: i})
				if i%9 == 0 {
					_, _ = h.m.Release(ctx, protocol.ReleaseParams{Agent: agent, Anchors: []string{fmt.Sprintf("c%d-%d", g, i-1)}})
				}
			}
		}(g)
	}
	wg.Wait()
	st := h.m.Stats()
	if st.Agents != 3 || st.VerifyPasses != 240 {
		t.Fatalf("stats %+v", st)
	}
}

func TestClose(t *testing.T) {
	h := newHarness(t, Config{})
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := h.m.Observe(ctx, protocol.ObserveParams{Agent: "a", Sources: []protocol.Source{{URI: fid}}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("observe after close: %v", err)
	}
	if _, err := h.m.Sync(ctx, protocol.SyncParams{Agent: "a"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("sync after close: %v", err)
	}
	h.m.Hint(fid) // must not block or panic
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSyncVerifiesOtherAgentsSources: a sync verifies every live source;
// another agent's changed source is reconciled in the background and that
// agent hears of it through OnChange.
func TestSyncVerifiesOtherAgentsSources(t *testing.T) {
	h := newHarness(t, Config{})
	base := numbered(5)
	mine, theirs := "mem://proj/mine", "mem://proj/theirs"
	h.mem.set(mine, text(base))
	h.mem.set(theirs, text(base))
	h.observe("a", 1, "c1", protocol.Source{URI: mine, Range: rng(1, 1), Text: base[0]})
	h.observe("b", 1, "c2", protocol.Source{URI: theirs, Range: rng(1, 1), Text: base[0]})
	after := append([]string(nil), base...)
	after[0] = strings.Replace(after[0], "value1", "v1", 1)
	h.mem.set(theirs, text(after))
	if r := h.sync("a", 2); len(r.Blocks) != 0 {
		t.Fatalf("a's projection %+v", r.Blocks)
	}
	waitFor(t, func() bool {
		for _, c := range h.onChangeCalls() {
			if reflect.DeepEqual(c, []string{"b"}) {
				return true
			}
		}
		return false
	})
	if v := one(t, h.sync("b", 2)); v.Status != protocol.Patched {
		t.Fatalf("b's block %+v", v)
	}
}

// TestAuditTrailIsBounded: re-reading the same lines over and over keeps at
// most AuditLimit superseded blocks per agent, and never forgets one whose
// notice a sync has not delivered yet.
func TestAuditTrailIsBounded(t *testing.T) {
	const limit = 3
	base := numbered(12)
	tests := []struct {
		name          string
		reads         int
		syncEach      bool // sync after every read, so each superseded block is reported
		wantKept      int  // superseded blocks still known after the reads
		wantDelivered int  // superseded views the final sync returns
	}{
		{"reported ones are trimmed", 10, true, limit, 0},
		{"unreported ones are kept", 10, false, 9, 9},
		{"under the limit nothing goes", 3, true, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{AuditLimit: limit})
			h.mem.set(fid, text(base))
			for i := 1; i <= tc.reads; i++ {
				h.observe("main", i, fmt.Sprintf("call_%d", i), protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)})
				if tc.syncEach {
					h.sync("main", i)
				}
			}
			if got := h.m.Stats().Blocks[protocol.Superseded]; got != tc.wantKept {
				t.Fatalf("superseded blocks kept = %d, want %d", got, tc.wantKept)
			}
			delivered := 0
			for _, v := range h.sync("main", tc.reads+1).Blocks {
				if v.Status == protocol.Superseded {
					delivered++
				}
			}
			if delivered != tc.wantDelivered {
				t.Fatalf("superseded views delivered = %d, want %d", delivered, tc.wantDelivered)
			}
		})
	}
}

// TestReobservedAnchorReplaces: registering the same tool result again (a
// binding that restarted) replaces its block; the anchor never gets two views.
func TestReobservedAnchorReplaces(t *testing.T) {
	base := numbered(12)
	tests := []struct {
		name   string
		second []string // file content when the anchor is observed again
		want   protocol.Status
	}{
		{"unchanged file", base, protocol.Valid},
		{"file changed in between", oneTokenEdited(base, 4), protocol.Patched},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, text(base))
			first := h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)})
			h.sync("main", 1)
			h.mem.set(fid, text(tc.second))
			again := h.observe("main", 2, "call_1", protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)})
			if len(again.Superseded) != 0 {
				t.Fatalf("re-observation superseded %v; it should replace", again.Superseded)
			}
			st := h.m.Stats()
			if n := st.Blocks[protocol.Valid] + st.Blocks[protocol.Patched] + st.Blocks[protocol.Superseded]; n != 1 {
				t.Fatalf("blocks by status %v, want exactly one block", st.Blocks)
			}
			if st.Reconciliations["replaced"] != 1 {
				t.Fatalf("reconciliations %v, want replaced=1", st.Reconciliations)
			}
			v := one(t, h.sync("main", 3))
			if v.Anchor != "call_1" || v.Block != again.Block || v.Block == first.Block || v.Status != tc.want {
				t.Fatalf("view %+v, want the new block %s of call_1 with status %s", v, again.Block, tc.want)
			}
		})
	}
}

// oneTokenEdited returns ls with line n's "valueN" token renamed.
func oneTokenEdited(ls []string, n int) []string {
	out := append([]string(nil), ls...)
	out[n-1] = strings.Replace(out[n-1], fmt.Sprintf("value%d", n), fmt.Sprintf("changed%d", n), 1)
	return out
}

// TestReleaseRespectsAgent: a release naming an agent cannot drop another
// agent's block by id; without an agent the id alone decides.
func TestReleaseRespectsAgent(t *testing.T) {
	base := numbered(6)
	tests := []struct {
		name    string
		agent   string
		wantErr bool
	}{
		{"owner", "a", false},
		{"other agent", "b", true},
		{"no agent", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, text(base))
			o := h.observe("a", 1, "call_1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
			h.observe("b", 1, "call_1", protocol.Source{URI: fid, Range: rng(1, 2), Text: span(base, 1, 2)})
			res, err := h.m.Release(context.Background(), protocol.ReleaseParams{Agent: tc.agent, Blocks: []string{o.Block}})
			if tc.wantErr {
				if !errors.Is(err, ErrUnknownBlock) || !strings.Contains(err.Error(), `belongs to agent "a"`) {
					t.Fatalf("err %v, want ErrUnknownBlock naming the owner", err)
				}
				if n := h.m.Stats().Blocks[protocol.Valid]; n != 2 {
					t.Fatalf("%d valid blocks after a refused release, want 2", n)
				}
				return
			}
			if err != nil || len(res.Released) != 1 || res.Released[0] != o.Block {
				t.Fatalf("release = %+v, %v; want [%s]", res, err, o.Block)
			}
		})
	}
}

// TestDeletedSourceComesBack: a deleted source invalidates its blocks; when it
// returns, unchanged spans are valid again (the model's copy is true once
// more) and edited ones are relocated.
func TestDeletedSourceComesBack(t *testing.T) {
	base := numbered(12)
	tests := []struct {
		name     string
		restored []string
		want     protocol.Status
	}{
		{"same content", base, protocol.Valid},
		{"one token edited", oneTokenEdited(base, 4), protocol.Patched},
		{"lines inserted above", append([]string{"// new header"}, base...), protocol.Patched},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mem.set(fid, text(base))
			h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)})
			h.mem.remove(fid)
			if v := one(t, h.sync("main", 2)); v.Status != protocol.Invalid || !strings.Contains(v.Notice, "deleted") {
				t.Fatalf("after delete: %+v, want invalid with a deleted notice", v)
			}
			h.mem.set(fid, text(tc.restored))
			v := one(t, h.sync("main", 3))
			if v.Status != tc.want || v.Notice != "" || len(v.Sources) != 1 {
				t.Fatalf("after restore: %+v, want %s with the current text", v, tc.want)
			}
			r := *v.Sources[0].Range
			if got := strings.Join(tc.restored[r.Start-1:r.End], "\n"); v.Sources[0].Text != got {
				t.Fatalf("restored view text %q, want the file's lines %d-%d %q", v.Sources[0].Text, r.Start, r.End, got)
			}
		})
	}
}

// TestAnnotateKeepsWhatTheModelSaw: under annotate, the warned-about text is
// the model's own copy: the original read, or the last repair a sync
// delivered, never a repair made in between that no sync carried.
func TestAnnotateKeepsWhatTheModelSaw(t *testing.T) {
	base := numbered(12)
	local := oneTokenEdited(base, 4)
	drift := append([]string(nil), local...)
	drift[2], drift[3], drift[4] = "completely", "different lines", "now here"
	tests := []struct {
		name       string
		syncBefore bool // a sync delivers the local repair before the drift
		want       string
	}{
		{"repair never delivered", false, span(base, 3, 5)},
		{"repair delivered", true, span(local, 3, 5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Options: protocol.InitializeParams{Policy: &protocol.PolicyConfig{Global: protocol.Policy{Local: protocol.Patch, Drift: protocol.Annotate}}}})
			h.mem.set(fid, text(base))
			h.observe("main", 1, "call_1", protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)})
			h.mem.set(fid, text(local))
			h.changed(fid)
			if tc.syncBefore {
				if v := one(t, h.sync("main", 2)); v.Status != protocol.Patched {
					t.Fatalf("local edit: %+v, want patched", v)
				}
			}
			h.mem.set(fid, text(drift))
			h.changed(fid)
			v := one(t, h.sync("main", 3))
			if v.Status != protocol.Stale || v.Notice == "" || len(v.Sources) != 1 || v.Sources[0].Text != tc.want {
				t.Fatalf("after drift: %+v, want stale keeping %q", v, tc.want)
			}
		})
	}
}
