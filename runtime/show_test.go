package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

// tagView renders a block's sources as a tool would: a header, the lines,
// a trailing newline (which compose trims before a notice).
type tagView struct{}

func (tagView) Render(srcs []protocol.Source) (string, bool) {
	var b strings.Builder
	b.WriteString("TOOL\n")
	for _, s := range srcs {
		b.WriteString(s.Text + "\n")
	}
	return b.String(), true
}

// TestShow checks what sync's Show carries for each status of a block that
// has a View (docs/protocol.md, "How a binding renders a block view"): the
// bindings apply it as given, so a status without Show keeps stale text in
// front of the model.
func TestShow(t *testing.T) {
	base := numbered(12)
	local := append([]string(nil), base...)
	local[3] = strings.Replace(local[3], "value4", "changed4", 1)
	tests := []struct {
		name   string
		policy protocol.Policy
		after  []string // the file after the read; nil: read again instead
		drop   bool     // then release the newer read (the older one is orphaned)
		status protocol.Status
		want   func(v protocol.BlockView) string
	}{
		{"patched", protocol.Policy{}, local, false, protocol.Patched,
			func(v protocol.BlockView) string { return v.View }},
		{"stale", protocol.Policy{Local: protocol.Annotate}, local, false, protocol.Stale,
			func(v protocol.BlockView) string { return strings.TrimRight(v.View, "\n") + "\n\n" + v.Notice }},
		{"invalid", protocol.Policy{Local: protocol.Suppress}, local, false, protocol.Invalid,
			func(v protocol.BlockView) string { return v.Notice }},
		{"superseded", protocol.Policy{}, nil, false, protocol.Superseded,
			func(v protocol.BlockView) string { return v.Notice }},
		{"orphaned", protocol.Policy{}, nil, true, protocol.Invalid,
			func(v protocol.BlockView) string { return v.Notice }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Options: protocol.InitializeParams{Policy: &protocol.PolicyConfig{Global: tc.policy}}})
			h.mem.set(fid, text(base))
			src := protocol.Source{URI: fid, Range: rng(3, 5), Text: span(base, 3, 5)}
			read := func(anchor string, turn int) {
				t.Helper()
				_, err := h.m.ObserveView(context.Background(), protocol.ObserveParams{Agent: "main", Turn: turn, Anchor: anchor, Sources: []protocol.Source{src}}, tagView{})
				if err != nil {
					t.Fatalf("observe %s: %v", anchor, err)
				}
			}
			read("call_1", 1)
			if tc.after != nil {
				h.mem.set(fid, text(tc.after))
				h.changed(fid)
			} else {
				read("call_2", 2)
			}
			if tc.drop {
				h.sync("main", 3)
				if _, err := h.m.Release(context.Background(), protocol.ReleaseParams{Agent: "main", Anchors: []string{"call_2"}}); err != nil {
					t.Fatal(err)
				}
			}
			v := one(t, h.sync("main", 4))
			if v.Anchor != "call_1" || v.Status != tc.status {
				t.Fatalf("view %s %s, want call_1 %s", v.Anchor, v.Status, tc.status)
			}
			if want := tc.want(v); v.Show == nil || *v.Show != want || want == "" {
				t.Fatalf("show %v, want %q (view %q, notice %q)", v.Show, want, v.View, v.Notice)
			}
			if tc.after == nil {
				return
			}
			// The file as first read: the original output stands again, no Show.
			h.mem.set(fid, text(base))
			h.changed(fid)
			v = one(t, h.sync("main", 5))
			switch {
			case v.Status == protocol.Patched: // back at its lines: the read as first shown
				if v.Show == nil || *v.Show != "TOOL\n"+span(base, 3, 5)+"\n" {
					t.Fatalf("restored, patched: show %v", v.Show)
				}
			case v.Status != protocol.Valid || v.Show != nil:
				t.Fatalf("restored: %s with show %v, want valid without", v.Status, v.Show)
			}
		})
	}
}
