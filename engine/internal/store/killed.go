package store

import (
	"encoding/binary"
	"fmt"
)

// The killed journal (bucket "killed"): the number of every document
// killed — deleted or replaced — that a segment file may still hold, put
// by Kill in the transaction that kills it. After a crash the index
// derives its segments' deletion sets from it, in time proportional to
// the deleted documents, instead of reading the whole live-id map; a merge
// that drops killed documents removes their numbers (Unkill). The index
// fills it once for a store written before it existed (ResetKilled) and
// says so in its manifest (Manifest.Killed).
var bktKilled = []byte("killed")

// ForEachKilled calls fn with every number in the killed journal,
// ascending.
func (r *ReadTx) ForEachKilled(fn func(seq uint64) error) error {
	return r.tx.Bucket(bktKilled).ForEach(func(k, _ []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: killed key %x", ErrCorrupt, k)
		}
		return fn(binary.BigEndian.Uint64(k))
	})
}

// Unkill removes seqs from the killed journal: documents no segment file
// holds any more.
func (t *Tx) Unkill(seqs []uint64) error {
	b := t.tx.Bucket(bktKilled)
	for _, seq := range seqs {
		if err := b.Delete(seqKey(seq)); err != nil {
			return fmt.Errorf("store: unkill: %w", err)
		}
	}
	return nil
}

// ResetKilled makes seqs the whole killed journal.
func (t *Tx) ResetKilled(seqs []uint64) error {
	if err := t.tx.DeleteBucket(bktKilled); err != nil {
		return fmt.Errorf("store: reset the killed journal: %w", err)
	}
	b, err := t.tx.CreateBucket(bktKilled)
	if err != nil {
		return fmt.Errorf("store: reset the killed journal: %w", err)
	}
	b.FillPercent = 1 // ascending inserts
	for _, seq := range seqs {
		if err := b.Put(seqKey(seq), nil); err != nil {
			return fmt.Errorf("store: reset the killed journal: %w", err)
		}
	}
	return nil
}
