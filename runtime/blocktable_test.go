package runtime

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBlockTable checks the seq-ordered block slice against a map through
// adds, removes (holes, compaction) and lookups, and seqOf's parsing of ids.
func TestBlockTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		remove func(seq uint64) bool
	}{
		{"none removed", 50, func(uint64) bool { return false }},
		{"every other", 200, func(s uint64) bool { return s%2 == 0 }},
		{"a long run", 300, func(s uint64) bool { return s > 20 && s < 250 }},
		{"all", 100, func(uint64) bool { return true }},
		{"random", 1000, func(uint64) bool { return rand.IntN(3) > 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tab blockTable
			want := map[uint64]*block{}
			for s := uint64(1); s <= uint64(tc.n); s++ {
				b := &block{seq: s}
				tab.add(b)
				want[s] = b
				// Removing as it goes: holes before, compaction between adds.
				if r := s / 2; r > 0 && tc.remove(r) && want[r] != nil {
					tab.remove(r)
					delete(want, r)
				}
			}
			for s := uint64(0); s <= uint64(tc.n)+1; s++ {
				if got := tab.get(s); got != want[s] {
					t.Fatalf("get(%d) = %v, want %v", s, got, want[s])
				}
			}
			var seqs []uint64
			for b := range tab.all() {
				seqs = append(seqs, b.seq)
			}
			if len(seqs) != len(want) || !slices.IsSorted(seqs) {
				t.Fatalf("all: %d blocks (sorted %v), want %d", len(seqs), slices.IsSorted(seqs), len(want))
			}
			if tab.holes > len(tab.s)/4 {
				t.Errorf("%d holes in %d slots: not compacted", tab.holes, len(tab.s))
			}
		})
	}
	t.Run("out of order add", func(t *testing.T) {
		var tab blockTable
		for _, s := range []uint64{5, 9, 7, 1} {
			tab.add(&block{seq: s})
		}
		for _, s := range []uint64{1, 5, 7, 9} {
			if b := tab.get(s); b == nil || b.seq != s {
				t.Errorf("get(%d) = %v", s, b)
			}
		}
	})
}

func TestSeqOf(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want uint64
	}{
		{"b1", 1}, {"b123", 123}, {"b0", 0}, {"b01", 0}, {"b", 0}, {"", 0}, {"123", 0}, {"b-1", 0}, {"b+1", 0}, {"c12", 0}, {"b18446744073709551616", 0},
	} {
		if got := seqOf(tc.id); got != tc.want {
			t.Errorf("seqOf(%q) = %d, want %d", tc.id, got, tc.want)
		}
		if tc.want > 0 && (&block{seq: tc.want}).id() != tc.id {
			t.Errorf("id of seq %d is not %q", tc.want, tc.id)
		}
	}
}
