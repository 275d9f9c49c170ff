package index

import "sort"

// Which documents of the segment files are deleted follows from the
// store's live-id map, but recovering it reads every id (≈ 0.35–0.85 s of
// CPU at 1 M documents). Open reads the killed journal instead
// (store.ForEachKilled): the number of every killed document a segment file
// may hold, put in the transaction that kills it, so its size is the number
// of deleted documents the segments hold, not the corpus — after a clean
// close and after a crash alike. Numbers no segment file holds (a merge
// dropped the document, or it was killed before any flush wrote it) are
// pruned: by the merge (Unkill), else by the next Open (unheld).

// killedIn returns the deletion set of seg from the killed journal killed
// (ascending document numbers; nil set: none deleted), and marks in held
// the positions in killed of the numbers seg holds. Numbers no segment
// holds any more (replayed documents' kills, merges not yet pruned) are
// skipped.
func killedIn(seg *segment, killed []uint64, held *Bitset) (*Bitset, int) {
	var del *Bitset
	n := 0
	lo := sort.Search(len(killed), func(i int) bool { return killed[i] >= seg.minSeq })
	for i := lo; i < len(killed) && killed[i] <= seg.maxSeq; i++ {
		l, ok := seg.findSeq(killed[i])
		if !ok {
			continue
		}
		held.Set(uint32(i))
		if del == nil || !del.Has(l) {
			if del == nil {
				del = NewBitset(seg.n)
			}
			del.Set(l)
			n++
		}
	}
	return del, n
}

// unheld returns the numbers of killed that no segment holds: those whose
// positions killedIn did not mark in held (documents killed before a flush
// wrote them).
func unheld(killed []uint64, held *Bitset) []uint64 {
	var out []uint64
	for i, seq := range killed {
		if !held.Has(uint32(i)) {
			out = append(out, seq)
		}
	}
	return out
}

// deletedSeqs returns the numbers of the deleted documents of views,
// ascending (views are in ascending ranges): the killed journal of a
// store written before it existed.
func deletedSeqs(views []segView) []uint64 {
	var out []uint64
	for _, v := range views {
		if v.del == nil {
			continue
		}
		for _, i := range v.del.Members() {
			out = append(out, v.seg.seq(i))
		}
	}
	return out
}
