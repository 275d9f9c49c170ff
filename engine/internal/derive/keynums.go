package derive

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/search"
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
func (c *keyNums) load(res []ann.Result, nums []search.DocNum) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, r := range res {
		if r.ID < uint64(len(c.nums)) {
			nums[i] = search.DocNum(c.nums[r.ID].Load())
		}
	}
}

// store remembers num for key; keys above maxKey (the highest assigned,
// so a damaged checkpoint cannot make the array grow without bound) are
// not remembered.
func (c *keyNums) store(key uint64, num search.DocNum, maxKey uint64) {
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

// warmBatch is how many keys warm resolves per read transaction: short
// transactions, so that a commit growing engine.db never waits on one.
const warmBatch = 4096

// warm remembers the document number of every unit key in engine.db's
// dense log (in key order, a batch per read transaction) and returns how
// many it resolved. Run after a generation is loaded, it spares the
// queries that follow a restart the lookup path: each dense hit not seen
// before costs two read transactions (engine.db, then the document store):
// after a restart at 1 M passages, the first 1 000 hybrid queries took
// p50 2.3–2.8 ms without it and 1.4–1.6 ms with it (docs/benchmarks.md).
// It takes ≈ 3 s of one core at 1 M. Writes meanwhile only make some
// guesses stale, which recall detects (index.Index.LiveIDs) and corrects.
func (c *keyNums) warm(ctx context.Context, db *bolt.DB, lk numLookup) (int, error) {
	resolved := 0
	for from := uint64(0); ; {
		if err := ctx.Err(); err != nil {
			return resolved, err
		}
		keys, ids := make([]uint64, 0, warmBatch), make([]string, 0, warmBatch)
		var maxKey uint64
		err := db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketDenseKeys)
			maxKey = b.Sequence()
			cur := b.Cursor()
			for k, v := cur.Seek(be64(from)); k != nil && len(keys) < warmBatch; k, v = cur.Next() {
				if len(k) == 8 {
					keys, ids = append(keys, binary.BigEndian.Uint64(k)), append(ids, string(v))
				}
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return resolved, err
		}
		nums, err := lk.Nums(ctx, ids)
		if err != nil {
			return resolved, err
		}
		for i, key := range keys {
			if nums[i] != 0 {
				c.store(key, nums[i], maxKey)
				resolved++
			}
		}
		from = keys[len(keys)-1] + 1
	}
}
