package index

import (
	"context"
	"fmt"

	"github.com/rcpgo/rcpgo/engine/store"
)

// Nums returns the live document numbers of ids, in one read transaction
// and without reading any record: 0 where an id has no live document
// (document numbers start at 1). Load reads the documents later, only
// those a caller needs.
func (ix *Index) Nums(ctx context.Context, ids []string) ([]DocNum, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nums := make([]DocNum, len(ids))
	err := ix.st.View(func(tx *store.ReadTx) error {
		for i, id := range ids {
			if seq, ok := tx.LookupID(id); ok {
				nums[i] = DocNum(seq)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: nums: %w", err)
	}
	return nums, nil
}
