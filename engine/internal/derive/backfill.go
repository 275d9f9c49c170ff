package derive

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/search"
)

// Backfilling the dense log. An engine with dense off (Config.Dense none)
// writes no dense log: its adds and deletes change the index and the
// catalog only. Each such write marks densemeta "backfill" (markDenseBehind,
// in the write's own transaction). An engine that opens with dense on and
// finds the mark — or finds an empty dense log beside an index that holds
// units, which is what directories written before the mark existed look
// like — brings the log up to the index in the background, in the deriver,
// before it fits or builds anything (docs/rcpd.md, "Dense lifecycle"):
//
//   - phase 'u': every unit of every catalogued document gets the index's
//     text in the log (denseText, chunks with their parent), as the write
//     path would have logged it; an unchanged text appends no op;
//   - phase 'd': every record of a unit the index no longer holds goes.
//
// Each batch runs under the write lock and re-reads the index, so a write
// committed meanwhile is never reverted by a stale text; the batch's
// transaction advances the cursor kept in the mark ('u' or 'd' followed by
// the last id done), so a crash or a Close resumes where it stopped, and
// re-running a batch appends nothing. The mark goes with the last batch.
// Open, ping and sparse retrieval do not wait for any of it; the deriver
// then fits and builds from the full log as for new writes.
var keyBackfill = []byte("backfill")

const (
	// backfillBatch bounds the units one backfill batch reads and logs: the
	// write lock is held for it (its reads and one fsynced commit: ≈ 40 ms
	// at 300 k passages under load), so adds queued meanwhile wait at most
	// that long.
	backfillBatch = 256
	phaseUnits    = 'u'
	phaseDead     = 'd'
)

// markDenseBehind records, in a write transaction of an engine with dense
// off, that the dense log no longer matches the index: the backfill starts
// over from the first document.
func markDenseBehind(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketDenseMeta)
	if v := meta.Get(keyBackfill); len(v) == 1 && v[0] == phaseUnits {
		return nil
	}
	return meta.Put(keyBackfill, []byte{phaseUnits})
}

// denseBehind reports whether the dense log must be backfilled from the
// index (see above): the mark is set, or the log is empty (logEmpty, which
// Open has read) while the index holds units.
func denseBehind(tx *bolt.Tx, logEmpty bool, indexUnits int) bool {
	return tx.Bucket(bucketDenseMeta).Get(keyBackfill) != nil || logEmpty && indexUnits > 0
}

// backfill is the deriver's state of a backfill in progress.
type backfill struct {
	started time.Time
	logged  time.Time
	units   int // units read from the index so far
	dropped int // records of units the index no longer holds
}

// backfillStep runs one batch of the backfill; done reports that the log
// now matches the index.
func (dv *deriver) backfillStep(ctx context.Context) (done bool, err error) {
	d, bf := dv.d, dv.backfill
	if err := ctx.Err(); err != nil {
		return false, err
	}
	d.gate.LockWrites()
	defer d.gate.UnlockWrites()
	if err := d.cfg.Writable(); err != nil {
		return false, err
	}
	var cursor []byte
	if err := d.db.View(func(tx *bolt.Tx) error {
		cursor = bytes.Clone(tx.Bucket(bucketDenseMeta).Get(keyBackfill))
		return nil
	}); err != nil {
		return false, fmt.Errorf("engine: %w", err)
	}
	if len(cursor) == 0 || cursor[0] != phaseUnits && cursor[0] != phaseDead {
		cursor = []byte{phaseUnits} // none yet (an empty log) or unreadable: from the start
	}
	var seq uint64
	switch cursor[0] {
	case phaseUnits:
		seq, err = dv.backfillUnits(ctx, cursor[1:])
	case phaseDead:
		seq, done, err = dv.backfillDead(ctx, cursor[1:])
	}
	if err != nil {
		return false, err
	}
	if seq > d.opSeq.Load() {
		d.opSeq.Store(seq) // writers are serialised by wmu, which we hold
	}
	if done {
		d.log.Info("engine: dense log backfilled", "units", bf.units, "dropped", bf.dropped,
			"took", time.Since(bf.started).Round(time.Millisecond))
	} else if time.Since(bf.logged) >= progressLogEvery {
		bf.logged = time.Now()
		d.log.Info("engine: backfilling the dense log", "units", bf.units, "of", d.ix.Stats().Docs,
			"elapsed", time.Since(bf.started).Round(time.Second))
	}
	return done, nil
}

// backfillUnits logs the units of the catalogued documents after the id
// after (a batch of about backfillBatch units) and advances the cursor; after
// the last document the cursor moves to phase 'd'. It returns the dense
// log's op sequence after the batch.
func (dv *deriver) backfillUnits(ctx context.Context, after []byte) (uint64, error) {
	d := dv.d
	type doc struct {
		id     string
		chunks int
	}
	var docs []doc
	n := 0
	if err := d.catalog.Scan(string(after), true, func(id string, rec *catalog.Record) bool {
		docs = append(docs, doc{id, rec.Chunks})
		n += max(rec.Chunks, 1)
		return n < d.cfg.BackfillBatch
	}); err != nil {
		return 0, fmt.Errorf("engine: %w", err)
	}
	var units []denseUnit
	for _, doc := range docs {
		ids := []string{doc.id}
		if doc.chunks > 0 {
			ids = ids[:0]
			for j := range doc.chunks {
				ids = append(ids, catalog.ChunkID(doc.id, j))
			}
		}
		for _, id := range ids {
			u, err := d.ix.Get(ctx, id)
			if err != nil {
				return 0, fmt.Errorf("engine: %w", err)
			}
			if u == nil { // a chunk deleted on its own: phase 'd' drops its record
				continue
			}
			du := denseUnit{id: id, text: Text(u)}
			if u.Chunk != nil {
				du.parent = u.Chunk.DocID
			}
			units = append(units, du)
		}
	}
	if hook := d.cfg.BackfillHook; hook != nil {
		if err := hook(); err != nil {
			return 0, err
		}
	}
	next := []byte{phaseDead}
	if len(docs) > 0 {
		next = append([]byte{phaseUnits}, docs[len(docs)-1].id...)
	}
	var seq uint64
	err := d.db.Update(func(tx *bolt.Tx) error {
		dt := openDenseTx(tx)
		for _, u := range units {
			if err := dt.put(u.id, u.parent, u.text); err != nil {
				return err
			}
		}
		seq = dt.ops.Sequence()
		return tx.Bucket(bucketDenseMeta).Put(keyBackfill, next)
	})
	if err != nil {
		return 0, fmt.Errorf("engine: dense log: %w", err)
	}
	dv.backfill.units += len(units)
	return seq, nil
}

// backfillDead drops the records, after the id after, of units the index
// no longer holds (a batch of backfillBatch records); after the last
// record it removes the mark (done).
func (dv *deriver) backfillDead(ctx context.Context, after []byte) (seq uint64, done bool, err error) {
	d := dv.d
	var ids []string
	if err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDense).Cursor()
		k, _ := c.Seek(after)
		if k != nil && len(after) > 0 && bytes.Equal(k, after) {
			k, _ = c.Next()
		}
		for ; k != nil && len(ids) < d.cfg.BackfillBatch; k, _ = c.Next() {
			ids = append(ids, string(k))
		}
		return nil
	}); err != nil {
		return 0, false, fmt.Errorf("engine: %w", err)
	}
	live, err := dv.liveUnits(ctx, ids)
	if err != nil {
		return 0, false, err
	}
	var dead []string
	for i, id := range ids {
		if !live[i] {
			dead = append(dead, id)
		}
	}
	done = len(ids) == 0
	err = d.db.Update(func(tx *bolt.Tx) error {
		dt := openDenseTx(tx)
		for _, id := range dead {
			if err := dt.del(id); err != nil {
				return err
			}
		}
		seq = dt.ops.Sequence()
		meta := tx.Bucket(bucketDenseMeta)
		if done {
			return meta.Delete(keyBackfill)
		}
		return meta.Put(keyBackfill, append([]byte{phaseDead}, ids[len(ids)-1]...))
	})
	if err != nil {
		return 0, false, fmt.Errorf("engine: dense log: %w", err)
	}
	dv.backfill.dropped += len(dead)
	return seq, done, nil
}

// numser is the embedded index's lookup of live document numbers
// (index.Index.Nums): it reads no record.
type numser interface {
	Nums(ctx context.Context, ids []string) ([]search.DocNum, error)
}

// liveUnits reports which of ids the index holds.
func (dv *deriver) liveUnits(ctx context.Context, ids []string) ([]bool, error) {
	live := make([]bool, len(ids))
	if ns, ok := dv.d.ix.(numser); ok {
		nums, err := ns.Nums(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		for i, n := range nums {
			live[i] = n != 0
		}
		return live, nil
	}
	for i, id := range ids {
		d, err := dv.d.ix.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		live[i] = d != nil
	}
	return live, nil
}
