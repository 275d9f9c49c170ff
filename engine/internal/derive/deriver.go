package derive

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/engine/internal/store"
)

// Dense lifecycle (docs/architecture.md, "Dense generations").
//
// A generation is one encoder (an LSA basis, or the configured external
// provider) plus the HNSW index of every unit embedded under it. It lives in
// DIR/dense/g<N>/ (lsa.model, hnsw-<seq>.ann) and engine.db names the
// published one. The index file is a checkpoint: it covers the dense ops up
// to <seq>; Open loads the newest checkpoint (no re-embedding, no graph
// build) and the deriver replays the ops written after it in the
// background.
//
// The deriver is the one goroutine that changes dense state:
//   - it applies new ops (embeds added units, removes deleted ones) to the
//     published generation, in batches, with bounded concurrency;
//   - it writes a checkpoint when enough changed (and at Close);
//   - it builds a new generation beside the published one when the LSA
//     basis must be fitted (the corpus reached MinFitDocs) or refitted (it
//     doubled since the fit), or when no usable generation exists (first
//     start with an external encoder, a changed encoder identity, a lost
//     checkpoint); the new one catches up with the ops and is published
//     atomically, and the previous one is removed.
//
// index/add never waits for any of this.

// Generation is one published dense index.
type Generation struct {
	n uint64
	// info describes the encoder from the start; model is the encoder
	// itself. A generation opened from disk loads its LSA model and its
	// checkpoint in the background (so Open and the first ping wait for
	// neither): model and ann are set before ready is closed, or loadErr
	// is, and are read only after ready.
	info    encoderInfo
	model   embed.Provider
	dir     string
	ann     *ann.Index
	ready   chan struct{}
	loadErr error
	// applied is the highest op seq reflected in ann (written by the
	// deriver only); saved is the seq of the newest checkpoint file.
	applied atomic.Uint64
	saved   uint64
	// fitUnits is the corpus size the LSA basis was fitted at (0 when it
	// was published before it was recorded: then the model's own document
	// count, which was the whole corpus).
	fitUnits int
	// outdated: the checkpoint was read from an older file version; the
	// deriver rewrites it (deriver only).
	outdated bool
}

// fittedAt is the corpus size g's LSA basis was fitted at; the basis is
// refitted when the corpus doubles from it.
func (g *Generation) fittedAt() int {
	if g.fitUnits > 0 {
		return g.fitUnits
	}
	return g.model.(*lsa.Model).NumDocs()
}

// encoderInfo is what descriptions and sessions know of a generation's
// encoder. For a stored LSA model it comes from engine.db (the published
// identity) and the model file's header, so it is known before the model
// has loaded.
type encoderInfo struct {
	identity        string
	dim, batchLimit int
	normalized      bool
}

func infoOf(p embed.Provider) encoderInfo {
	return encoderInfo{identity: p.Identity(), dim: p.Dimension(), batchLimit: p.BatchLimit(), normalized: p.Normalized()}
}

// newGeneration is a generation of model that needs no loading.
func newGeneration(n uint64, model embed.Provider, dir string, ix *ann.Index) *Generation {
	g := &Generation{n: n, info: infoOf(model), model: model, dir: dir, ann: ix, ready: make(chan struct{})}
	close(g.ready)
	return g
}

func genDir(root string, n uint64) string {
	return filepath.Join(root, "dense", fmt.Sprintf("g%06d", n))
}

const checkpointPrefix, checkpointExt = "hnsw-", ".ann"

func checkpointName(seq uint64) string {
	return fmt.Sprintf("%s%016x%s", checkpointPrefix, seq, checkpointExt)
}

// checkpointSeqs lists the checkpoint files of dir, newest first.
func checkpointSeqs(dir string) []uint64 {
	ents, _ := os.ReadDir(dir)
	var out []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, checkpointPrefix) || !strings.HasSuffix(name, checkpointExt) {
			continue
		}
		if seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, checkpointPrefix), checkpointExt), 16, 64); err == nil {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// openGeneration opens generation n; its model and checkpoint load in the
// background (loadGeneration). identity is the one published with it.
func (d *Dense) openGeneration(n uint64, identity string) (*Generation, error) {
	dir := genDir(d.cfg.Dir, n)
	if len(checkpointSeqs(dir)) == 0 {
		return nil, fmt.Errorf("no checkpoint in %s", dir)
	}
	g := &Generation{n: n, dir: dir, ready: make(chan struct{})}
	switch {
	case d.cfg.Dense != lsaKind:
		g.model, g.info = d.cfg.Provider, infoOf(d.cfg.Provider)
	case identity == "":
		// Published before identities were recorded: only the model
		// itself knows it.
		m, err := d.loadLSA(dir)
		if err != nil {
			return nil, err
		}
		g.model, g.info = m, infoOf(m)
	default:
		h, err := lsa.ReadHeader(filepath.Join(dir, lsaModelFile))
		if err != nil {
			return nil, err
		}
		g.info = encoderInfo{identity: identity, dim: h.Dimension, batchLimit: h.BatchLimit, normalized: true}
	}
	// (A generation published before its identity was recorded is checked
	// against its checkpoint's header when loaded.)
	if identity != "" && identity != g.info.identity {
		return nil, fmt.Errorf("stored vectors are %q, the encoder is %q", identity, g.info.identity)
	}
	return g, nil
}

// lsaModelFile is the LSA model of a generation, in its directory.
const lsaModelFile = "lsa.model"

// loadLSA loads the LSA model in dir, which must have been fitted with the
// engine's analyzer.
func (d *Dense) loadLSA(dir string) (*lsa.Model, error) {
	m, err := lsa.Load(filepath.Join(dir, lsaModelFile), d.an.Terms)
	if err != nil {
		return nil, err
	}
	if m.TokenizerID() != d.an.Fingerprint() {
		return nil, errors.New("the LSA model was fitted with another analyzer")
	}
	return m, nil
}

// loadGeneration loads g's model and newest readable checkpoint (on the
// deriver's goroutine, before anything else touches them). On failure the
// generation is withdrawn and rebuilt.
func (dv *deriver) loadGeneration(ctx context.Context, g *Generation) {
	if hold := dv.d.cfg.HoldLoad; hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return
		}
	}
	start := time.Now()
	err := dv.loadModel(g)
	modelTook := time.Since(start)
	if err == nil {
		err = dv.loadCheckpoint(g)
	}
	if err != nil {
		g.loadErr = err
		dv.d.log.Warn("engine: dense generation unusable; rebuilding it in the background", "generation", g.n, "err", err)
		dv.d.kept.Withdraw(g)
		dv.d.gen.CompareAndSwap(g, nil)
		close(g.ready)
		return
	}
	close(g.ready)
	dv.d.log.Info("engine: dense checkpoint loaded", "generation", g.n, "units", g.ann.Len(),
		"took", time.Since(start).Round(time.Millisecond), "model", modelTook.Round(time.Millisecond))
	start = time.Now()
	if err := dv.verifyGeneration(g); err != nil {
		dv.d.log.Warn("engine: dense generation damaged; rebuilding it in the background", "generation", g.n, "err", err)
		dv.d.kept.Withdraw(g)
		dv.d.gen.CompareAndSwap(g, nil)
		return
	}
	dv.d.log.Info("engine: dense generation verified", "generation", g.n, "took", time.Since(start).Round(time.Millisecond))
	dv.warmKeyNums(ctx)
}

// warmKeyNums resolves the document numbers of the loaded generation's
// keys (keyNums.warm). It is an optimisation: a failure is logged and
// recall resolves keys as it meets them.
func (dv *deriver) warmKeyNums(ctx context.Context) {
	lk, ok := dv.d.ix.(numLookup)
	if !ok {
		return
	}
	start := time.Now()
	var n int
	err := store.Protect(dv.d.cfg.Dir, func() (err error) {
		n, err = dv.d.keyNums.warm(ctx, dv.d.db, lk)
		return err
	})
	if err != nil && ctx.Err() == nil {
		dv.d.log.Warn("engine: resolving the dense keys' documents failed; recall resolves them as it meets them", "err", err)
		return
	}
	dv.d.log.Info("engine: dense keys resolved", "units", n, "took", time.Since(start).Round(time.Millisecond))
}

// verifyGeneration checks what the load left to the first reads: the
// mapped checkpoint's and model's blocks no search has checked, and the
// model's identity. Searches check what they touch meanwhile; this runs
// before the deriver changes the index. Checking the checkpoint builds the
// int8 copy of its vectors that searches walk the graph with from then on
// (ann.Index.Quantize). A model of an older format is rewritten in the
// current one.
func (dv *deriver) verifyGeneration(g *Generation) error {
	if err := g.ann.Quantize(); err != nil {
		return err
	}
	m, ok := g.model.(*lsa.Model)
	if !ok {
		return nil
	}
	if err := m.Verify(); err != nil {
		return err
	}
	if m.Outdated() {
		if err := m.Save(filepath.Join(g.dir, lsaModelFile)); err != nil {
			dv.d.log.Warn("engine: rewriting the LSA model in the current format failed; kept the old file", "err", err)
		}
	}
	return nil
}

// loadModel loads g's LSA model unless Open already has; it must be the
// one published.
func (dv *deriver) loadModel(g *Generation) error {
	if g.model != nil {
		return nil
	}
	m, err := dv.d.loadLSA(g.dir)
	if err != nil {
		return err
	}
	if m.Identity() != g.info.identity {
		return fmt.Errorf("the LSA model is %q, %q was published", m.Identity(), g.info.identity)
	}
	g.model = m
	return nil
}

// loadCheckpoint loads g's newest readable checkpoint.
func (dv *deriver) loadCheckpoint(g *Generation) error {
	var errs []error
	for _, seq := range checkpointSeqs(g.dir) {
		ix, err := ann.Load(filepath.Join(g.dir, checkpointName(seq)))
		if err == nil && ix.Config().Identity != g.info.identity {
			err = fmt.Errorf("stored vectors are %q, the encoder is %q", ix.Config().Identity, g.info.identity)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.ann, g.saved, g.outdated = ix, seq, ix.Outdated()
		g.applied.Store(seq)
		return nil
	}
	return fmt.Errorf("no readable checkpoint in %s: %w", g.dir, errors.Join(errs...))
}

// deriver keeps the dense generations up to date (see above).
type deriver struct {
	d      *Dense
	wake   chan struct{} // a write committed dense ops
	cancel context.CancelFunc
	done   chan struct{}

	next     uint64 // number of the next generation
	failedAt int    // corpus size of the last failed LSA fit
	lastSave time.Time
	saveCost time.Duration
	// refitSince is when the pending LSA refit became due (zero: none is
	// pending); refitIn is how long it still waits for writes to pause.
	refitSince time.Time
	refitIn    time.Duration
	// backfill is the backfill of the dense log in progress (nil: none;
	// backfill.go): it runs before any build or apply.
	backfill *backfill

	// progress describes the build in progress (nil: none), for
	// Dense.Build and the build's progress log.
	progress atomic.Pointer[buildProgress]
	// state is what is due, for readiness (readiness.go).
	state deriveState

	mu       sync.Mutex
	idleSeq  uint64        // every op up to it is applied and nothing is due
	idle     bool          // nothing to do
	failed   error         // the last step failed (cleared by the next success)
	idleCond chan struct{} // closed and replaced when idle or failed change
}

// Tunables of the deriver.
const (
	// applyBatch bounds the ops applied (and the units a build inserts)
	// per step: each step is not interruptible, and Close waits for it.
	applyBatch      = 128
	checkpointEvery = 5 * time.Second // minimum spacing of checkpoints
	maxRetryDelay   = time.Minute
	// A refit of the LSA basis (the corpus doubled since the fit) is a
	// whole-corpus fit and re-embedding, seconds to minutes of a core: it
	// waits until writes have paused for refitQuiet, or at most
	// refitMaxLag under steady writes, so that it does not take the CPU
	// from the adds being acknowledged. Meanwhile new units are embedded
	// with the published basis as usual. The first fit does not wait: it
	// is what makes dense retrieval available.
	refitQuiet  = 2 * time.Second
	refitMaxLag = 5 * time.Minute
)

func (d *Dense) startDeriver(next uint64, bf *backfill) {
	ctx, cancel := context.WithCancel(context.Background())
	d.deriver = &deriver{d: d, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		next: next, idleCond: make(chan struct{}), lastSave: time.Now(), backfill: bf}
	go d.deriver.run(ctx)
}

// notify wakes the deriver after a write.
func (dv *deriver) notify() {
	select {
	case dv.wake <- struct{}{}:
	default:
	}
}

// drainFor bounds how long Close keeps embedding pending writes.
const drainFor = 3 * time.Second

// stop ends the deriver: a build in progress is abandoned, pending writes
// are still applied for up to drainFor (so a clean restart replays
// nothing), and a last checkpoint is written.
func (dv *deriver) stop() error {
	dv.cancel()
	<-dv.done
	g := dv.d.gen.Load()
	if g == nil || g.ann == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainFor)
	defer cancel()
	for g.applied.Load() < dv.d.opSeq.Load() && ctx.Err() == nil {
		if err := dv.apply(ctx, g); err != nil {
			dv.d.log.Warn("engine: pending dense writes left for the next start", "err", err)
			break
		}
	}
	if g.applied.Load() > g.saved {
		return dv.checkpoint(g)
	}
	return nil
}

func (dv *deriver) setIdle(idle bool, seq uint64, failed error) {
	dv.mu.Lock()
	defer dv.mu.Unlock()
	if dv.idle == idle && dv.idleSeq == seq && dv.failed == failed {
		return
	}
	dv.idle, dv.idleSeq, dv.failed = idle, seq, failed
	close(dv.idleCond)
	dv.idleCond = make(chan struct{})
}

// waitIdle waits until every dense op committed before the call is applied
// and no build is due; it returns the deriver's error if a step fails
// meanwhile.
func (dv *deriver) waitIdle(ctx context.Context) error {
	want := dv.d.opSeq.Load()
	dv.mu.Lock()
	dv.failed = nil
	dv.mu.Unlock()
	dv.notify()
	for {
		dv.mu.Lock()
		ok, failed, ch := dv.idle && dv.idleSeq >= want, dv.failed, dv.idleCond
		dv.mu.Unlock()
		if ok {
			return nil
		}
		if failed != nil {
			return failed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (dv *deriver) run(ctx context.Context) {
	defer close(dv.done)
	if g := dv.d.gen.Load(); g != nil && g.ann == nil {
		dv.loadGeneration(ctx, g)
	}
	delay := time.Second
	for {
		// A step reads engine.db and the record store, possibly before the
		// page walks after Open have reached a damaged page: that fails the
		// step (Protect), not the process; the checks after Open report the
		// damage.
		var did bool
		err := store.Protect(dv.d.cfg.Dir, func() (err error) {
			did, err = dv.step(ctx)
			return err
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			dv.d.log.Warn("engine: dense upkeep failed; retrying", "err", err, "in", delay)
			dv.setIdle(false, 0, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, maxRetryDelay)
			continue
		}
		delay = time.Second
		if did {
			continue
		}
		wait := dv.saveSpacing()
		if dv.refitIn > 0 {
			wait = dv.refitIn // a refit waits for writes to pause: not idle
		} else {
			dv.setIdle(true, dv.d.opSeq.Load(), nil)
		}
		if g := dv.d.gen.Load(); g != nil && (g.applied.Load() > g.saved || g.outdated) {
			wait = min(wait, max(time.Until(dv.lastSave.Add(dv.saveSpacing())), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-dv.wake:
			dv.setIdle(false, 0, nil)
		case <-time.After(wait):
		}
	}
}

// saveSpacing keeps checkpoints to a small share of the deriver's time.
func (dv *deriver) saveSpacing() time.Duration {
	every := checkpointEvery
	if dv.d.cfg.CheckpointEvery > 0 {
		every = dv.d.cfg.CheckpointEvery
	}
	return max(every, 20*dv.saveCost)
}

// step does the next piece of work; it reports whether there was any.
func (dv *deriver) step(ctx context.Context) (bool, error) {
	g := dv.d.gen.Load()
	dv.refitIn = 0
	dv.note(g)
	if dv.backfill != nil {
		done, err := dv.backfillStep(ctx)
		if done {
			dv.backfill, dv.failedAt = nil, 0
		}
		return true, err
	}
	if dv.buildDue(g) {
		if dv.refitIn = dv.refitWait(g, time.Now()); dv.refitIn == 0 {
			dv.refitSince = time.Time{}
			return true, dv.build(ctx, g)
		}
	}
	if g != nil && g.applied.Load() < dv.d.opSeq.Load() {
		return true, dv.apply(ctx, g)
	}
	dv.d.sweepKept()
	if did, err := dv.applyKept(ctx); did || err != nil {
		return true, err
	}
	if g != nil && (g.applied.Load() > g.saved || g.outdated) && time.Since(dv.lastSave) >= dv.saveSpacing() {
		return true, dv.checkpoint(g)
	}
	return false, nil
}

// buildDue says whether a new generation must be built.
func (dv *deriver) buildDue(g *Generation) bool {
	if dv.d.cfg.Dense != lsaKind {
		return g == nil
	}
	units := dv.d.ix.Stats().Docs
	if units < dv.d.cfg.MinFitDocs || (dv.failedAt > 0 && units < 2*dv.failedAt) {
		return false
	}
	return g == nil || units >= 2*g.fittedAt()
}

// refitWait returns how long the due build of a new generation still
// waits: 0 for a first fit or any build of an external encoder's
// generation; for a refit of the published LSA basis, until writes have
// paused for refitQuiet, and at most refitMaxLag after it became due. A
// write still queued counts as a write now: commits that stall (behind a
// slow disk or a starved CPU) are not a pause, and a refit started then
// would take the CPU from them for seconds.
func (dv *deriver) refitWait(g *Generation, now time.Time) time.Duration {
	if g == nil || dv.d.cfg.Dense != lsaKind {
		return 0
	}
	if dv.refitSince.IsZero() {
		dv.refitSince = now
	}
	last := time.Unix(0, dv.d.lastWrite.Load())
	if dv.d.gate.Queued() > 0 {
		last = now
	}
	quiet := last.Add(dv.d.cfg.RefitQuiet).Sub(now)
	lag := dv.refitSince.Add(refitMaxLag).Sub(now)
	return max(min(quiet, lag), 0)
}

// apply embeds the units of the next batch of ops into g.
func (dv *deriver) apply(ctx context.Context, g *Generation) error {
	var ops []denseOp
	var adds []uint64
	var texts []string
	upTo := dv.d.opSeq.Load()
	err := dv.d.db.View(func(tx *bolt.Tx) error {
		var err error
		if ops, err = readOps(tx, g.applied.Load(), applyBatch); err != nil {
			return err
		}
		// A unit is embedded with its current text, so an add superseded by
		// a later add or delete in the batch is skipped.
		last := map[uint64]int{}
		for i, op := range ops {
			last[op.key] = i
		}
		for i, op := range ops {
			if op.kind != opAdd || last[op.key] != i {
				continue
			}
			if text, ok := unitText(tx, op.key); ok {
				adds, texts = append(adds, op.key), append(texts, text)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		g.applied.Store(max(g.applied.Load(), upTo)) // nothing logged after applied
		return nil
	}
	vecs, err := dv.embed(ctx, g.model, texts)
	if err != nil {
		return err
	}
	for _, op := range ops {
		if op.kind == opDelete {
			g.ann.Delete(op.key)
		}
	}
	if err := insertVectors(g.ann, adds, vecs); err != nil {
		return err
	}
	g.applied.Store(ops[len(ops)-1].seq)
	return nil
}

// embedWorkers bounds concurrent embedding calls of an external encoder.
const embedWorkers = 4

// embed embeds texts in batches of the encoder's limit, up to embedWorkers
// batches at a time (LSA runs in one: it is CPU-bound and cheap).
func (dv *deriver) embed(ctx context.Context, model embed.Provider, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	limit := model.BatchLimit()
	if limit <= 0 {
		limit = 64
	}
	workers := embedWorkers
	if dv.d.cfg.Dense == lsaKind {
		workers = 1
	}
	out := make([][]float32, len(texts))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for lo := 0; lo < len(texts); lo += limit {
		hi := min(lo+limit, len(texts))
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			vs, err := model.Embed(ctx, texts[lo:hi], embed.KindDocument)
			if err == nil && len(vs) != hi-lo {
				err = fmt.Errorf("%d vectors for %d texts", len(vs), hi-lo)
			}
			for i := 0; err == nil && i < len(vs); i++ {
				if len(vs[i]) != model.Dimension() {
					err = fmt.Errorf("vector of dimension %d, want %d (%s)", len(vs[i]), model.Dimension(), model.Identity())
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = cmpErr(first, err)
				return
			}
			copy(out[lo:hi], vs)
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("engine: embedding: %w", first)
	}
	return out, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// insertVectors adds embedded units to ix; a zero vector (no vocabulary
// term) is removed instead: it can match nothing.
func insertVectors(ix *ann.Index, keys []uint64, vecs [][]float32) error {
	var ks []uint64
	var vs [][]float32
	for i, v := range vecs {
		if zero(v) {
			ix.Delete(keys[i])
			continue
		}
		ks, vs = append(ks, keys[i]), append(vs, v)
	}
	if err := ix.AddBatch(ks, vs); err != nil {
		return fmt.Errorf("engine: dense index: %w", err)
	}
	return nil
}

func zero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// units iterates the live units of the dense log with keys up to maxKey
// that keep accepts (nil: all), in pages of short read transactions (a long
// one would stall writers when bbolt grows its map). A unit keep rejects is
// not decoded.
func (dv *deriver) units(ctx context.Context, maxKey uint64, keep func(uint64) bool, fail *error) iter.Seq2[uint64, string] {
	return func(yield func(uint64, string) bool) {
		var after []byte
		for {
			type unit struct {
				key  uint64
				text string
			}
			var page []unit
			err := dv.d.db.View(func(tx *bolt.Tx) error {
				ids := tx.Bucket(bucketDenseIDs)
				c := tx.Bucket(bucketDense).Cursor()
				k, v := c.First()
				if after != nil {
					if k, v = c.Seek(after); k != nil && string(k) == string(after) {
						k, v = c.Next()
					}
				}
				for ; k != nil && len(page) < 1024; k, v = c.Next() {
					after = append(after[:0], k...)
					kb := ids.Get(k)
					if len(kb) != 8 || binary.BigEndian.Uint64(kb) > maxKey {
						continue
					}
					key := binary.BigEndian.Uint64(kb)
					if keep != nil && !keep(key) {
						continue
					}
					r, err := decodeDenseRecord(v, true)
					if err != nil {
						continue
					}
					page = append(page, unit{key, r.Text})
				}
				return nil
			})
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				*fail = err
				return
			}
			if len(page) == 0 {
				return
			}
			for _, u := range page {
				if !yield(u.key, u.text) {
					return
				}
			}
		}
	}
}

// build builds and publishes a new generation (see above). old is the
// published one or nil.
func (dv *deriver) build(ctx context.Context, old *Generation) error {
	d := dv.d
	start := time.Now()
	// The build covers the units that exist now (keys up to maxKey) and
	// every op up to from; later ones are replayed like any new write, so
	// a build under a steady ingest does not chase it.
	var from, maxKey uint64
	if err := d.db.View(func(tx *bolt.Tx) error {
		from, maxKey = tx.Bucket(bucketDenseOps).Sequence(), tx.Bucket(bucketDenseKeys).Sequence()
		return nil
	}); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	var fail error
	var model embed.Provider
	var fitUnits int
	p := &buildProgress{generation: dv.next, started: start, total: d.ix.Stats().Docs}
	dv.progress.Store(p)
	defer dv.progress.Store(nil)
	if d.cfg.Dense == lsaKind {
		p.phase.Store(phaseFit)
		fitUnits = d.ix.Stats().Docs
		keep := fitSample(fitUnits, d.cfg.LSAFitSample)
		texts := func(yield func(string) bool) {
			for _, t := range dv.units(ctx, maxKey, keep, &fail) {
				if !yield(t) {
					return
				}
			}
		}
		m, err := lsa.Fit(ctx, texts, d.an.Terms, lsa.Options{Dimension: d.cfg.LSADimension,
			TokenizerID: d.an.Fingerprint(), Snapshot: d.ix.Version(), Logger: d.log, Workers: 1})
		if err = cmpErr(fail, err); err != nil {
			if ctx.Err() == nil {
				dv.failedAt = max(d.ix.Stats().Docs, 1)
				d.log.Warn("engine: LSA fit failed; retrying when the corpus doubles", "err", err, "units", dv.failedAt)
				return nil
			}
			return err
		}
		model = m
	} else {
		model = d.cfg.Provider
	}
	ix, err := ann.New(ann.Config{Dim: model.Dimension(), Metric: ann.Cosine, Workers: 1, Identity: model.Identity()})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	g := newGeneration(dv.next, model, genDir(d.cfg.Dir, dv.next), ix)
	g.fitUnits = fitUnits
	p.embedding()
	var keys []uint64
	var texts []string
	lastLog := time.Now()
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		vecs, err := dv.embed(ctx, model, texts)
		if err == nil {
			err = insertVectors(ix, keys, vecs)
		}
		p.done.Add(int64(len(texts)))
		keys, texts = keys[:0], texts[:0]
		if time.Since(lastLog) >= progressLogEvery {
			lastLog = time.Now()
			d.log.Info("engine: building dense generation", p.logAttrs()...)
		}
		return err
	}
	for k, t := range dv.units(ctx, maxKey, nil, &fail) {
		keys, texts = append(keys, k), append(texts, t)
		if len(texts) == applyBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := cmpErr(fail, flush()); err != nil {
		return err
	}
	g.applied.Store(from)
	// Catch up with a few batches of the writes made while building, then
	// publish: the rest is applied like any new write (a long catch-up
	// under a steady ingest would delay the switch indefinitely).
	for range 4 {
		if g.applied.Load() >= d.opSeq.Load() {
			break
		}
		if err := dv.apply(ctx, g); err != nil {
			return err
		}
	}
	if err := ix.Quantize(); err != nil { // searches walk int8 codes
		return fmt.Errorf("engine: %w", err)
	}
	if err := dv.publish(g, old); err != nil {
		return err
	}
	d.log.Info("engine: published dense generation", "generation", g.n, "identity", model.Identity(),
		"units", ix.Len(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// publish makes g durable and current, then removes every other
// generation. Sessions that negotiated the previous identity get -32010 on
// dense calls from now on (dense.go).
func (dv *deriver) publish(g, old *Generation) error {
	d := dv.d
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if m, ok := g.model.(*lsa.Model); ok {
		if err := m.Save(filepath.Join(g.dir, lsaModelFile)); err != nil {
			return fmt.Errorf("engine: saving LSA model: %w", err)
		}
	}
	if err := dv.writeCheckpoint(g); err != nil {
		return err
	}
	if err := d.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketDenseMeta)
		if err := meta.Put(keyIdentity, []byte(g.info.identity)); err != nil {
			return err
		}
		if err := meta.Put(keyFitUnits, be64(uint64(g.fitUnits))); err != nil {
			return err
		}
		return meta.Put(keyGen, be64(g.n))
	}); err != nil {
		return fmt.Errorf("engine: publishing dense generation: %w", err)
	}
	d.gen.Store(g)
	d.keep(g)
	dv.next = g.n + 1
	dv.failedAt = 0
	removeOtherGenerations(d.cfg.Dir, g.n)
	return dv.trim(g)
}

func removeOtherGenerations(root string, keep uint64) {
	ents, _ := os.ReadDir(filepath.Join(root, "dense"))
	for _, ent := range ents {
		if ent.Name() != filepath.Base(genDir(root, keep)) {
			_ = os.RemoveAll(filepath.Join(root, "dense", ent.Name()))
		}
	}
}

// checkpoint writes g's index and trims the ops it covers.
func (dv *deriver) checkpoint(g *Generation) error {
	if err := dv.writeCheckpoint(g); err != nil {
		return err
	}
	return dv.trim(g)
}

// writeCheckpoint saves g's index as a new checkpoint file (temp, fsync,
// rename, fsync dir) and removes the older ones.
func (dv *deriver) writeCheckpoint(g *Generation) error {
	start := time.Now()
	seq := g.applied.Load()
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if err := g.ann.Save(filepath.Join(g.dir, checkpointName(seq))); err != nil {
		return fmt.Errorf("engine: dense checkpoint: %w", err)
	}
	for _, old := range checkpointSeqs(g.dir) {
		if old != seq {
			_ = os.Remove(filepath.Join(g.dir, checkpointName(old)))
		}
	}
	g.saved, g.outdated = seq, false
	dv.lastSave, dv.saveCost = time.Now(), time.Since(start)
	return nil
}

// trim deletes the ops covered by g's newest checkpoint.
func (dv *deriver) trim(g *Generation) error {
	if err := dv.d.db.Update(func(tx *bolt.Tx) error { return trimOps(tx, dv.d.trimBound(g)) }); err != nil {
		return fmt.Errorf("engine: trimming dense ops: %w", err)
	}
	return nil
}

// openDense loads the published generation and starts the deriver; with
// waitPreload it waits until the preload is embedded.
func (d *Dense) openDense(ctx context.Context, waitPreload bool) error {
	var n, fitUnits uint64
	var identity string
	empty, behind := true, false
	if err := d.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketDenseMeta)
		if v := meta.Get(keyGen); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get(keyFitUnits); len(v) == 8 {
			fitUnits = binary.BigEndian.Uint64(v)
		}
		identity = string(meta.Get(keyIdentity))
		k, _ := tx.Bucket(bucketDense).Cursor().First()
		empty = k == nil
		behind = denseBehind(tx, empty, d.ix.Stats().Docs)
		return nil
	}); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if n > 0 {
		g, err := d.openGeneration(n, identity)
		if err != nil {
			d.log.Warn("engine: dense generation unusable; rebuilding it in the background", "generation", n, "err", err)
		} else {
			g.fitUnits = int(fitUnits)
			d.gen.Store(g)
			d.keep(g)
		}
	}
	var bf *backfill
	switch {
	case behind && d.cfg.ReadOnly:
		d.log.Warn("engine: the dense log lacks units of the index (written with dense off) and the directory is read-only: dense covers the logged units only")
	case behind:
		bf = &backfill{started: time.Now(), logged: time.Now()}
		d.log.Info("engine: the dense log lacks units of the index (written with dense off); backfilling it in the background",
			"units", d.ix.Stats().Docs)
	}
	d.startDeriver(n+1, bf)
	// An external encoder over an empty corpus publishes an empty
	// generation at once, so the first sessions are offered dense.
	if waitPreload || (d.gen.Load() == nil && d.cfg.Dense != lsaKind && empty && bf == nil) {
		if err := d.deriver.waitIdle(ctx); err != nil {
			return fmt.Errorf("engine: dense: %w", err)
		}
	}
	return nil
}

// fitSample is the LSA fit's sample of a corpus of units units: nil (every
// unit) up to limit, else a deterministic uniform sample of about limit
// units (each kept with probability limit/units, decided by a hash of its
// key, so a refit over the same units draws the same sample). The fit's cost
// — tokenised texts held in memory, the rows × (k+16) float64 range of the
// randomized SVD, the QR factorisations — grows with the units it reads;
// the basis of a few hundred dimensions does not need more than tens of
// thousands of them (docs/rcpd.md, "Dense lifecycle").
func fitSample(units, limit int) func(uint64) bool {
	if units <= limit {
		return nil
	}
	threshold := uint64(float64(limit) / float64(units) * (1 << 64))
	return func(key uint64) bool { return mix64(key) < threshold }
}

// mix64 is SplitMix64's finaliser: a bijection of uint64 whose output bits
// look uniform for sequential inputs.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
