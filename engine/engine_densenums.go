package engine

import (
	"sync"
	"sync/atomic"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/index"
)

// keyNums maps ann keys to the document number each last resolved to.
// A key names one unit id for good (keys are never reused), but the id's
// document number changes whenever the document is written again, with
// or without a new text, so a remembered number is only a guess: dense
// recall keeps it only while the index's current snapshot still holds it
// live (index.Index.LiveIDs), which also yields the id. Misses and stale
// guesses take the lookup path and are remembered.
//
// It is an array indexed by key, grown on demand up to the highest key
// assigned: 8 bytes per unit (8 MB per million), filled as hits are
// resolved.
type keyNums struct {
	mu   sync.RWMutex // growth; entries are atomic
	nums []atomic.Uint64
}

// load sets nums[i] to the number remembered for res[i]'s key (0: none).
func (c *keyNums) load(res []ann.Result, nums []index.DocNum) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, r := range res {
		if r.ID < uint64(len(c.nums)) {
			nums[i] = index.DocNum(c.nums[r.ID].Load())
		}
	}
}

// store remembers num for key; keys above maxKey (the highest assigned,
// so a damaged checkpoint cannot make the array grow without bound) are
// not remembered.
func (c *keyNums) store(key uint64, num index.DocNum, maxKey uint64) {
	if key > maxKey {
		return
	}
	c.mu.RLock()
	if key < uint64(len(c.nums)) {
		c.nums[key].Store(uint64(num))
		c.mu.RUnlock()
		return
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if key >= uint64(len(c.nums)) {
		grown := make([]atomic.Uint64, min(max(key+1, 2*uint64(len(c.nums))), maxKey+1))
		for i := range c.nums {
			grown[i].Store(c.nums[i].Load())
		}
		c.nums = grown
	}
	c.nums[key].Store(uint64(num))
}
