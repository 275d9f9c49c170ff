package transform

import (
	"context"
	"hash/maphash"
	"slices"
	"sort"
)

// Bounds of the spelling index.
const (
	// spellPrefix is the length in runes of the word prefixes indexed:
	// deletes of longer words are taken from their first spellPrefix runes
	// (SymSpell's prefix bound), so a word costs at most 1 + 7 + 21 index
	// entries.
	spellPrefix = 7
	// spellMaxD is the largest edit distance Correct uses.
	spellMaxD = 2
	// spellMinRunes: shorter words are never candidates (Correct leaves
	// words under 4 runes alone and looks at most one edit away).
	spellMinRunes = 3
)

// spellIndex finds correction candidates by symmetric deletes (Wolf
// Garbe's SymSpell): two words within edit distance d (optimal string
// alignment, with transpositions) share a string obtained by at most d
// deletions from each, and the same holds of their spellPrefix-rune
// prefixes. The index maps the hash of every deletion variant (up to
// spellMaxD) of every candidate word's prefix to the word; a query
// generates the variants of its own prefix and looks each up, so its cost
// is independent of the vocabulary size. Candidates are then checked with
// the full distance, which also filters hash collisions.
//
// Measured against a BK-tree on a 60 000-word vocabulary (see
// BenchmarkSpellCandidates): the deletes answer a distance-2 query in
// microseconds where the tree visits a large share of its nodes; the index
// costs 12 bytes per entry (≈ 25 entries per candidate word).
//
// Only words seen in at least two documents are candidates (a hapax is as
// likely a typo as the query word).
type spellIndex struct {
	seed maphash.Seed
	keys []uint64 // sorted deletion-variant hashes
	ids  []int32  // the word of each key
}

// build indexes words whose df is at least 2; ctx is checked every 4096
// words.
func (x *spellIndex) build(ctx context.Context, words []string, df []int32) error {
	x.seed = maphash.MakeSeed()
	type entry struct {
		key uint64
		id  int32
	}
	var entries []entry
	var variants []string
	for id, w := range words {
		if id%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r := []rune(w)
		if df[id] < 2 || len(r) < spellMinRunes {
			continue
		}
		variants = deletes(variants[:0], r[:min(len(r), spellPrefix)], spellMaxD)
		for _, v := range variants {
			entries = append(entries, entry{maphash.String(x.seed, v), int32(id)})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return int(a.id - b.id)
	})
	x.keys = make([]uint64, len(entries))
	x.ids = make([]int32, len(entries))
	for i, e := range entries {
		x.keys[i], x.ids[i] = e.key, e.id
	}
	return nil
}

// candidates calls fn once for each indexed word that may be within maxD
// edits of word (a superset: the caller checks the distance).
func (x *spellIndex) candidates(word []rune, maxD int, fn func(id int32)) {
	seen := map[int32]struct{}{}
	for _, v := range deletes(nil, word[:min(len(word), spellPrefix)], maxD) {
		k := maphash.String(x.seed, v)
		for i := sort.Search(len(x.keys), func(i int) bool { return x.keys[i] >= k }); i < len(x.keys) && x.keys[i] == k; i++ {
			if _, dup := seen[x.ids[i]]; !dup {
				seen[x.ids[i]] = struct{}{}
				fn(x.ids[i])
			}
		}
	}
}

// deletes appends to out s and every distinct string obtained from s by
// deleting up to d runes.
func deletes(out []string, s []rune, d int) []string {
	start := len(out)
	out = append(out, string(s))
	level := []string{string(s)}
	for range d {
		var next []string
		for _, w := range level {
			r := []rune(w)
			if len(r) <= 1 {
				continue
			}
			for i := range r {
				v := string(slices.Concat(r[:i], r[i+1:]))
				if !slices.Contains(out[start:], v) {
					out = append(out, v)
					next = append(next, v)
				}
			}
		}
		level = next
	}
	return out
}
