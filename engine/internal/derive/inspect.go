package derive

import (
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/search"
)

// What the dense side can say about itself, for diagnostics and the
// engine's tests: its generations and the records of its log.

// N is the generation's number (DIR/dense/gN).
func (g *Generation) N() uint64 { return g.n }

// Applied is the highest dense op seq the generation's index reflects.
func (g *Generation) Applied() uint64 { return g.applied.Load() }

// Units is the number of units the generation's index holds (0 while it
// loads, or for a backend's).
func (g *Generation) Units() int {
	if g.ann == nil {
		return 0
	}
	return g.ann.Len()
}

// FitUnits is the corpus size recorded for the generation's LSA fit (0:
// none recorded, or an external encoder).
func (g *Generation) FitUnits() int { return g.fitUnits }

// FittedAt is the corpus size the generation's LSA basis was fitted at
// (its model's own document count when none was recorded).
func (g *Generation) FittedAt() int { return g.fittedAt() }

// Kept are the generations held for sessions, the published one among
// them.
func (d *Dense) Kept() []*Generation { return d.kept.Kept() }

// Logged reads unit id's record in db's dense log: its dense text and its
// parent document (ok false: none).
func Logged(db *bolt.DB, id string) (text, parent string, ok bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketDense).Get([]byte(id))
		if v == nil {
			return nil
		}
		r, err := decodeDenseRecord(v, true)
		text, parent, ok = r.Text, r.Parent, err == nil
		return err
	})
	return text, parent, ok, err
}

// LogStats is the number of units in db's dense log, and whether the log
// is marked behind the index (a backfill is due or running).
func LogStats(db *bolt.DB) (units int, behind bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		units = tx.Bucket(bucketDense).Stats().KeyN
		behind = tx.Bucket(bucketDenseMeta).Get(keyBackfill) != nil
		return nil
	})
	return units, behind, err
}

// Remembered is the document number dense recall remembers for ann key
// (0: none).
func (d *Dense) Remembered(key uint64) search.DocNum {
	d.keyNums.mu.RLock()
	defer d.keyNums.mu.RUnlock()
	if key < uint64(len(d.keyNums.nums)) {
		return search.DocNum(d.keyNums.nums[key].Load())
	}
	return 0
}

// Pause stops the deriver until Close: later writes stay unembedded (the
// engine's tests look at recall between a write and its embedding).
func (d *Dense) Pause() {
	d.deriver.cancel()
	<-d.deriver.done
}

// GenerationDir is generation n's directory under the data directory.
func GenerationDir(dataDir string, n uint64) string { return genDir(dataDir, n) }

// Files are the paths of the LSA model and the checkpoints (newest first)
// in generation directory dir.
func Files(dir string) (model string, checkpoints []string) {
	for _, seq := range checkpointSeqs(dir) {
		checkpoints = append(checkpoints, filepath.Join(dir, checkpointName(seq)))
	}
	return filepath.Join(dir, lsaModelFile), checkpoints
}

// Backdate makes the last write that logged dense ops look as old as t
// (the engine's tests: a refit waits for writes to pause).
func (d *Dense) Backdate(t time.Time) { d.lastWrite.Store(t.UnixNano()) }
