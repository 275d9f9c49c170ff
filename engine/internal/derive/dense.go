// Package derive keeps the engine's dense side: the dense log in engine.db
// (the texts to embed, written with every write), the generations derived
// from it (an encoder and the HNSW index of every unit embedded under it)
// and the deriver, the one goroutine that maintains them (embedding new
// writes, checkpointing, fitting and refitting the LSA basis, backfilling
// the log), the generations kept for the sessions that negotiated them,
// and dense recall over them. See deriver.go for the lifecycle.
package derive

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/internal/readiness"
	"github.com/rcpgo/rcpgo/engine/internal/tree"
	"github.com/rcpgo/rcpgo/engine/retain"
	"github.com/rcpgo/rcpgo/engine/search"
)

// Errors the engine's error table translates.
var (
	// ErrRebuilding: no generation is published (a damaged one is being
	// rebuilt); the call may be retried.
	ErrRebuilding = errors.New("the dense index is being rebuilt")
	// ErrDamaged: the session's generation was found damaged on disk and
	// withdrawn; a session of the rebuilt one can use dense again.
	ErrDamaged = errors.New("the dense index is damaged on disk and is being rebuilt")
)

// lsaKind is Options.Dense for the offline LSA encoder.
const lsaKind = "lsa"

// Options configure the dense side of an engine.
type Options struct {
	Dir string // the data directory (DIR/dense/gN/)
	// Dense is "lsa" (the encoder is fitted on the corpus) or the name of
	// the external encoder Provider.
	Dense        string
	Provider     embed.Provider
	MinFitDocs   int
	LSADimension int
	LSAFitSample int
	ReadOnly     bool
	Retain       retain.Options

	DB      *bolt.DB
	Index   search.Backend
	An      *analysis.Analyzer
	Log     *slog.Logger
	Gate    *gate.Gate
	Catalog *catalog.Catalog
	Board   *readiness.Board
	// Writable is checked before every backfill batch (a deleted data
	// directory stores nothing).
	Writable func() error

	// CheckpointEvery is the minimum spacing of checkpoints (tests lower
	// it); RefitQuiet how long writes pause before a refit starts;
	// BackfillBatch bounds a backfill batch's units; HoldLoad, when set,
	// holds the background load of the published generation until it is
	// closed (tests: requests during loading).
	CheckpointEvery time.Duration
	RefitQuiet      time.Duration
	BackfillBatch   int
	HoldLoad        chan struct{}
	// BackfillHook, when set (tests), runs in each backfill batch of phase
	// 'u' between reading the index and logging what it read; an error
	// fails the batch.
	BackfillHook func() error
}

// Dense is the dense side of one engine. Safe for concurrent use.
type Dense struct {
	cfg     Options
	db      *bolt.DB
	ix      search.Backend
	an      *analysis.Analyzer
	log     *slog.Logger
	gate    *gate.Gate
	catalog *catalog.Catalog
	board   *readiness.Board

	// gen is the published generation (nil: none yet, sessions are
	// offered sparse); kept holds it and those kept for their sessions
	// (retain.go); deriver maintains them (nil over a remote backend).
	gen     atomic.Pointer[Generation]
	kept    *retain.Set[*Generation]
	deriver *deriver
	// opSeq is the seq of the last committed dense op; lastWrite the unix
	// ns of the last write that logged some.
	opSeq     atomic.Uint64
	lastWrite atomic.Int64
	// remote is the backend that stores the vectors itself (OpenRemote).
	remote search.DenseBackend
	// keyNums remembers the document number each ann key last resolved
	// to, so dense recall resolves its hits without reading engine.db or
	// the document store (keynums.go).
	keyNums keyNums
}

func newDense(opts Options) *Dense {
	d := &Dense{cfg: opts, db: opts.DB, ix: opts.Index, an: opts.An, log: opts.Log, gate: opts.Gate, catalog: opts.Catalog,
		board: opts.Board, kept: retain.New[*Generation](opts.Retain)}
	if d.cfg.RefitQuiet <= 0 {
		d.cfg.RefitQuiet = refitQuiet
	}
	if d.cfg.BackfillBatch <= 0 {
		d.cfg.BackfillBatch = backfillBatch
	}
	if d.board != nil {
		d.board.Add(Name, Label, d.probe)
	}
	return d
}

// New is the dense side of an engine whose engine.db has the dense log's
// buckets (Buckets, Migrate): writes can log dense ops (Committed) before
// Start.
func New(opts Options) (*Dense, error) {
	d := newDense(opts)
	if err := d.db.View(func(tx *bolt.Tx) error {
		d.opSeq.Store(tx.Bucket(bucketDenseOps).Sequence())
		return nil
	}); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return d, nil
}

// Start loads the published generation and starts the deriver; with
// waitPreload it waits until the writes made since New are embedded (a
// preload's).
func (d *Dense) Start(ctx context.Context, waitPreload bool) error {
	return d.openDense(ctx, waitPreload)
}

// Seq is the seq of the last committed dense op.
func (d *Dense) Seq() uint64 { return d.opSeq.Load() }

// Close ends the deriver: a build in progress is abandoned, pending writes
// are still applied for a moment (so a clean restart replays nothing),
// and a last checkpoint is written.
func (d *Dense) Close() error {
	if d.deriver == nil {
		return nil
	}
	return d.deriver.stop()
}

// Published is the published generation (nil: none).
func (d *Dense) Published() *Generation { return d.gen.Load() }

// Touch marks the published generation used by a session negotiating it.
func (d *Dense) Touch() {
	if g := d.gen.Load(); g != nil {
		d.kept.Touch(g.info.identity)
	}
}

// Committed records the seq of the last committed dense op (caller holds
// the write lock) and wakes the deriver.
func (d *Dense) Committed(seq uint64) {
	if seq <= d.opSeq.Load() {
		return // nothing changed (writers are serialised)
	}
	d.opSeq.Store(seq)
	d.lastWrite.Store(time.Now().UnixNano())
	if d.deriver != nil {
		d.deriver.notify()
	}
}

// WaitIdle waits until every dense op committed before the call is applied
// and no build is due; it returns the deriver's error if a step fails
// meanwhile.
func (d *Dense) WaitIdle(ctx context.Context) error { return d.deriver.waitIdle(ctx) }

// Embedded reports whether the published generation has every write.
func (d *Dense) Embedded() bool {
	g := d.gen.Load()
	return g != nil && d.Backlog(g) == 0
}

// Leaves reads every embedded unit's vector and dense text (nil without a
// published generation): the summary tree's leaves.
func (d *Dense) Leaves(ctx context.Context) ([]tree.Leaf, error) {
	g := d.gen.Load()
	if g == nil {
		return nil, nil
	}
	select {
	case <-g.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.loadErr != nil {
		return nil, nil
	}
	var leaves []tree.Leaf
	err := d.db.View(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketDense)
		c := tx.Bucket(bucketDenseIDs).Cursor()
		for id, k := c.First(); id != nil; id, k = c.Next() {
			if len(leaves)&1023 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if len(k) != 8 {
				continue
			}
			vec, ok := g.ann.Vector(binary.BigEndian.Uint64(k))
			if !ok {
				continue // not embedded yet: the next rebuild has it
			}
			rec, err := decodeDenseRecord(recs.Get(id), true)
			if err != nil {
				return fmt.Errorf("unit %q: %w", id, err)
			}
			leaves = append(leaves, tree.Leaf{ID: string(id), Vec: vec, Text: rec.Text})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: tree leaves: %w", err)
	}
	return leaves, nil
}

// Identity is the published generation's encoder identity ("": none).
func (g *Generation) Identity() string { return g.info.identity }

// Model is the generation's encoder (loaded: the generation is one that
// For returned).
func (g *Generation) Model() embed.Provider { return g.model }

// Encoder describes the generation's encoder for the embed capability:
// its dimension, batch limit and whether its vectors are unit-length.
func (g *Generation) Encoder() (dim, batchLimit int, normalized bool) {
	return g.info.dim, g.info.batchLimit, g.info.normalized
}
