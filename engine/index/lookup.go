package index

import (
	"context"
	"fmt"
	"sort"

	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
)

// Nums returns the live document numbers of ids, in one read transaction
// and without reading any record: 0 where an id has no live document
// (document numbers start at 1). Load reads the documents later, only
// those a caller needs.
func (ix *Index) Nums(ctx context.Context, ids []string) ([]search.DocNum, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nums := make([]search.DocNum, len(ids))
	err := ix.st.View(func(tx *store.ReadTx) error {
		for i, id := range ids {
			if seq, ok := tx.LookupID(id); ok {
				nums[i] = search.DocNum(seq)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: nums: %w", err)
	}
	return nums, nil
}

// LiveIDs returns the ids of the documents numbered nums in the current
// snapshot, "" where a number is not live (deleted, replaced by a newer
// version, or never stored). It reads only the snapshot's segments, never
// the document store: a caller that remembers the numbers of earlier
// lookups (the dense recall does, per vector key) checks them with it
// instead of looking ids up again.
func (ix *Index) LiveIDs(nums []search.DocNum) ([]string, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	snap := ix.cur.Load()
	ids := make([]string, len(nums))
	for i, n := range nums {
		ids[i] = snap.liveID(uint64(n))
	}
	return ids, nil
}

// liveID is the id of the live document numbered seq, or "".
func (s *snapshot) liveID(seq uint64) string {
	i := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].seg.maxSeq >= seq })
	if i == len(s.segs) {
		return ""
	}
	v := s.segs[i]
	local, ok := v.seg.findSeq(seq)
	if !ok || v.deleted(local) {
		return ""
	}
	return v.seg.id(local)
}
