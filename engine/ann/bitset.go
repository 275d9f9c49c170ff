package ann

import "math/bits"

// Bitset is a dense set of ids, usable as a search filter (e.g. the
// documents a metadata filter admits).
type Bitset []uint64

// NewBitset returns a bitset able to hold ids below n without growing.
func NewBitset(n uint64) Bitset { return make(Bitset, (n+63)/64) }

// Set adds id, growing the set when needed.
func (b *Bitset) Set(id uint64) {
	w := id / 64
	if w >= uint64(len(*b)) {
		grown := make(Bitset, w+1, max(w+1, 2*uint64(len(*b))))
		copy(grown, *b)
		*b = grown
	}
	(*b)[w] |= 1 << (id % 64)
}

// Has reports whether id is in the set.
func (b Bitset) Has(id uint64) bool {
	w := id / 64
	return w < uint64(len(b)) && b[w]&(1<<(id%64)) != 0
}

// Count is the number of ids in the set.
func (b Bitset) Count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// Filter returns b.Has as a SearchOptions.Filter.
func (b Bitset) Filter() func(uint64) bool { return b.Has }
