package derive

import (
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/search"
)

func TestKeyNumsBounds(t *testing.T) {
	var c keyNums
	c.store(5, 50, 1000)
	c.store(1<<40, 7, 1000) // above the highest key: not remembered
	c.store(900, 90, 1000)
	res := []ann.Result{{ID: 5}, {ID: 900}, {ID: 1 << 40}, {ID: 6}}
	nums := make([]search.DocNum, len(res))
	c.load(res, nums)
	if want := []search.DocNum{50, 90, 0, 0}; !slices.Equal(nums, want) {
		t.Fatalf("loaded %v, want %v", nums, want)
	}
	if len(c.nums) > 1001 {
		t.Fatalf("grew to %d entries for keys up to 1000", len(c.nums))
	}
}
