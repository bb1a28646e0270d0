package runtime

import (
	"iter"
	"slices"
	"sort"
)

// blockTable is the index's blocks by seq. Blocks are added in seq order,
// so a slice kept in that order answers a lookup by binary search; a
// forgotten block leaves a hole (nil) until holes are a quarter of the
// slice. It holds a block in about 10 bytes, where a map took about 30.
type blockTable struct {
	s     []*block
	holes int
}

// add indexes b; seqs come in increasing order (newBlock), anything else
// is inserted in place.
func (t *blockTable) add(b *block) {
	if n := t.last(); n == nil || n.seq < b.seq {
		t.s = append(t.s, b)
		return
	}
	i := sort.Search(len(t.s), func(i int) bool { return t.at(i) >= b.seq })
	t.s = slices.Insert(t.s, i, b)
}

// last is the block with the highest seq, nil when none.
func (t *blockTable) last() *block {
	for i := len(t.s) - 1; i >= 0; i-- {
		if t.s[i] != nil {
			return t.s[i]
		}
	}
	return nil
}

// at is the seq at or after slot i (holes take the next block's seq), or
// the highest seq + 1 past the last block: non-decreasing in i, as
// sort.Search needs.
func (t *blockTable) at(i int) uint64 {
	for ; i < len(t.s); i++ {
		if t.s[i] != nil {
			return t.s[i].seq
		}
	}
	return ^uint64(0)
}

// find is b's slot, -1 when seq is not indexed.
func (t *blockTable) find(seq uint64) int {
	i := sort.Search(len(t.s), func(i int) bool { return t.at(i) >= seq })
	for ; i < len(t.s) && t.s[i] == nil; i++ {
	}
	if i < len(t.s) && t.s[i].seq == seq {
		return i
	}
	return -1
}

// get returns the block with seq, nil when none.
func (t *blockTable) get(seq uint64) *block {
	if i := t.find(seq); i >= 0 {
		return t.s[i]
	}
	return nil
}

// remove forgets the block with seq, compacting the slice once a quarter
// of it is holes (and giving back capacity it no longer needs).
func (t *blockTable) remove(seq uint64) {
	i := t.find(seq)
	if i < 0 {
		return
	}
	t.s[i] = nil
	t.holes++
	if t.holes <= len(t.s)/4 {
		return
	}
	live := slices.DeleteFunc(t.s, func(b *block) bool { return b == nil })
	if cap(live) > 2*len(live) {
		live = slices.Clone(live)
	}
	t.s, t.holes = live, 0
}

// all yields the blocks in seq order.
func (t *blockTable) all() iter.Seq[*block] {
	return func(yield func(*block) bool) {
		for _, b := range t.s {
			if b != nil && !yield(b) {
				return
			}
		}
	}
}
