// Package index is the search core of rcpd: an inverted index of immutable,
// CRC-checked segments with compressed block postings, BM25F ranking over
// title and body with MaxScore and block-max pruning, metadata filters
// compiled to bitsets (CompileFilter takes rcp/filter trees), upserts and
// tombstone deletes, versioned snapshots and background segment merging.
//
// # Durability
//
// Documents, ids and the manifest live in a bbolt store (package store),
// which doubles as the write-ahead log: Add and Delete return after their
// store transaction is fsynced and the new state is published to searchers
// (read-your-writes). Each commit first goes to an in-memory segment; a
// background flusher later writes buffered segments to a segment file and
// records it in the manifest, and a merger folds small files together.
// Open — after a clean close or a crash alike — reloads the manifest's
// segment files, derives their deletions from the store's killed journal
// (every killed document a segment may hold, written in the killing
// transaction) and replays the live documents committed after the last
// flush: nothing it reads grows with the corpus, only with the deleted
// documents and the writes since the last flush.
//
// # On disk
//
//	dir/store.db                    bbolt: docs (seq → version + record: binary,
//	                                text zstd-compressed, with the facts derived
//	                                at Add — the injection-screen verdict and its
//	                                rules version, text length — see store.EncodeDoc),
//	                                ids (id → seq), children (parent NUL chunk id),
//	                                dead (deleted-at version ‖ seq, for retained
//	                                snapshots), killed (seq of every killed document
//	                                a segment may hold), meta/manifest (JSON)
//	dir/segments/seg-NNNNNNNNNN.rseg segment files (format in segment.go)
//
// A segment file is published by writing a temporary file, fsyncing it,
// renaming it into place and fsyncing the directory; only then does a
// manifest commit reference it (with its size and CRC). Files the manifest
// does not name are removed at Open.
//
// # Versions
//
// A version names what searches return: every change of the results
// publishes a new one, named "<epoch>.<n>" where epoch is random per index.
// Adds and deletes that change something, merges that drop deleted
// documents (BM25 statistics change) and a restart after a crash do;
// flushes, merges that drop nothing, and a restart after a clean Close do
// not, so a version (and the cursors built on it) survives a clean
// restart. A Query pinned to a version is served from that snapshot (or
// one with identical results) while it is retained (Options.RetainVersions
// / RetainFor) and fails with ErrSnapshotGone after.
package index

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/internal/outcome"
)

var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("index: closed")
	// ErrAnalyzerMismatch means the index was built with another analysis chain.
	ErrAnalyzerMismatch = errors.New("index: analyzer differs from the one the index was built with")
)

// Options configure an Index. Zero values select the defaults.
type Options struct {
	Analyzer *analysis.Analyzer   // default analysis.Default()
	BM25     BM25                 // default DefaultBM25()
	Fields   map[string]FieldType // metadata typing; unlisted fields are FieldAuto

	FlushDocs      int           // buffered docs that trigger a segment flush (default 20000)
	MaxMemSegments int           // buffered batches that trigger a flush (default 64)
	FlushAfter     time.Duration // flush buffered docs older than this (default 2s)
	MergeFactor    int           // merge when more disk segments than this (default 8)
	// IdleMerge: once writes have been quiet this long, the disk segments
	// become one when that is worth it (see Merge; default 30s, < 0: never).
	IdleMerge time.Duration

	RetainVersions int           // at most this many past versions stay pinnable (default 64)
	RetainFor      time.Duration // a past version stays pinnable this long after it was replaced (default 10m)

	// DocCacheBytes bounds the cache of decoded documents that Load
	// serves repeated hits from (default DefaultDocCacheBytes; < 0: none).
	DocCacheBytes int64

	// DictAfter is the number of documents from which the record store
	// trains its compression dictionary (default store.DictMinDocs; see
	// CompactStore).
	DictAfter int
	// CompactQuiet: the background loop compacts the record store
	// (CompactStore) once writes have been quiet this long, and under
	// steady writes at most compactMaxLag after its last compaction
	// (default 2s).
	CompactQuiet time.Duration

	// NoBackground disables the background flusher/merger; call Flush and
	// Merge explicitly. For tests and bulk loads.
	NoBackground bool
	// VerifyAfterOpen leaves the integrity checks whose cost grows with the
	// corpus — each segment's CRC-32C and the walk over every page of
	// store.db — to a goroutine that Open starts, so that Open returns in
	// time independent of the index size. Until they pass, merges and
	// store compaction wait for them, and Search for the checksums (a
	// search never reads a segment whose checksum is unverified); if they
	// fail, those calls return the failure from then on, and WaitVerified
	// reports it. Without it Open runs the checks itself.
	VerifyAfterOpen bool
	Logger          *slog.Logger
}

func (o *Options) fill() {
	if o.Analyzer == nil {
		o.Analyzer = analysis.Default()
	}
	if o.BM25 == (BM25{}) {
		o.BM25 = DefaultBM25()
	}
	if o.FlushDocs <= 0 {
		o.FlushDocs = 20000
	}
	if o.MaxMemSegments <= 0 {
		o.MaxMemSegments = 64
	}
	if o.FlushAfter <= 0 {
		o.FlushAfter = 2 * time.Second
	}
	if o.IdleMerge == 0 {
		o.IdleMerge = 30 * time.Second
	}
	if o.CompactQuiet <= 0 {
		o.CompactQuiet = 2 * time.Second
	}
	if o.MergeFactor <= 1 {
		o.MergeFactor = 8
	}
	if o.RetainVersions <= 0 {
		o.RetainVersions = 64
	}
	if o.RetainFor <= 0 {
		o.RetainFor = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DocCacheBytes == 0 {
		o.DocCacheBytes = DefaultDocCacheBytes
	}
}

// The embedded index is the engine's default backend (search.Backend) and
// prepares its adds outside the engine's write lock (search.Preparer).
var (
	_ search.Backend  = (*Index)(nil)
	_ search.Preparer = (*Index)(nil)
)

// Index is an open index directory. Safe for concurrent use.
type Index struct {
	dir  string
	opts Options
	an   *analysis.Analyzer
	st   *store.Store
	log  *slog.Logger

	wmu   sync.Mutex // serialises commits; guards man
	man   store.Manifest
	epoch string // man.Epoch, immutable after Open

	cur      atomic.Pointer[snapshot]
	rmu      sync.Mutex
	retained []*snapshot // ascending version, includes cur

	docs *docCache // decoded records for Load; nil when disabled

	bgmu   sync.Mutex // serialises flush, merge and store compaction
	kick   chan struct{}
	stop   chan struct{}
	bgDone chan struct{}
	closed atomic.Bool
	// compactedAt is when the background loop last compacted the record
	// store (compactDue; background goroutine only).
	compactedAt time.Time
	// recompressed: CompactStore has rewritten the records stored
	// without a dictionary since Open (it then does so again only after
	// training a new one). Guarded by bgmu.
	recompressed bool

	// liveScanned: Open rebuilt the deletions from the live-id map (the
	// store was written before the killed journal existed).
	liveScanned bool

	// The checks Options.VerifyAfterOpen defers, and the segments'
	// checksums alone among them, which searches wait for (the walk over
	// store.db does not change what a search reads: records are decoded
	// with their own checks).
	verified     *outcome.Outcome
	summed       *outcome.Outcome
	verifyCancel context.CancelFunc
}

const (
	storeFile = "store.db"
	segDir    = "segments"
	segExt    = ".rseg"
	// formatLevel 2: binary, text-compressed document records carrying
	// their injection-screen verdict (store.EncodeDoc). Level 1 data
	// directories (JSON records) are migrated at Open.
	formatLevel = 2
)

// Open opens or creates the index in dir.
func Open(ctx context.Context, dir string, opts Options) (*Index, error) {
	opts.fill()
	if err := os.MkdirAll(filepath.Join(dir, segDir), 0o755); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	openStore := store.Open
	if opts.VerifyAfterOpen {
		openStore = store.OpenUnverified
	}
	st, err := openStore(filepath.Join(dir, storeFile))
	if err != nil {
		return nil, err
	}
	ix := &Index{dir: dir, opts: opts, an: opts.Analyzer, st: st, log: opts.Logger, docs: newDocCache(opts.DocCacheBytes),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), bgDone: make(chan struct{})}
	var unsummed []*segment
	if err := store.Protect(filepath.Join(dir, storeFile), func() error { return ix.recover(ctx, &unsummed) }); err != nil {
		st.Close()
		return nil, err
	}
	st.ReleaseMapped() // recovery scanned every live record
	if opts.VerifyAfterOpen {
		vctx, cancel := context.WithCancel(context.Background())
		ix.verifyCancel = cancel
		ix.verified, ix.summed = outcome.New(), outcome.New()
		go ix.verifyDeferred(vctx, unsummed)
	} else {
		ix.verifyCancel = func() {}
		ix.verified, ix.summed = outcome.Finished(nil), outcome.Finished(nil)
	}
	if opts.NoBackground {
		close(ix.bgDone)
	} else {
		go ix.background()
	}
	return ix, nil
}

// verifyDeferred runs the checks Options.VerifyAfterOpen left out of
// Open: the CRC of each segment file that recovery opened (segs), then
// the walk over store.db's pages. Searches wait for it (awaitVerified).
func (ix *Index) verifyDeferred(ctx context.Context, segs []*segment) {
	start := time.Now()
	err := func() error {
		for _, s := range segs {
			if err := s.verifySum(ctx); err != nil {
				ix.summed.Finish(err)
				return err
			}
			releaseMapped(s.data) // the checksum read every page
		}
		ix.summed.Finish(nil)
		if err := ix.st.VerifyPages(ctx); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		return nil
	}()
	if err == nil {
		ix.log.Debug("index: verified", "dir", ix.dir, "segments", len(segs), "took", time.Since(start).Round(time.Millisecond))
	} else if ctx.Err() == nil {
		ix.log.Error("index: integrity check failed; searches are refused", "dir", ix.dir, "err", err)
	}
	ix.verified.Finish(err)
}

// WaitVerified waits for the integrity checks Options.VerifyAfterOpen
// deferred (at once without it) and returns their failure, or ctx's error
// if it ends first. After a failure — a segment whose checksum does not
// match, a damaged page of store.db — searches and merges return the same
// error.
func (ix *Index) WaitVerified(ctx context.Context) error {
	return ix.verified.Wait(ctx)
}

// awaitSummed waits for the segment checksums Options.VerifyAfterOpen
// deferred (searches read segments, not store.db's pages: they do not wait
// for the page walk).
func (ix *Index) awaitSummed(ctx context.Context) error {
	return ix.summed.Wait(ctx)
}

// ErrOrphanSegments reports segment files without the manifest that
// lists them: the store (store.db) was lost or replaced. Nothing is
// deleted; see Repair.
var ErrOrphanSegments = errors.New("index: segment files without a manifest")

// noOrphanSegments refuses to start a fresh manifest over existing
// segments: they would be deleted as unreferenced, and with them the
// evidence of the lost store.
func (ix *Index) noOrphanSegments() error {
	ents, err := os.ReadDir(filepath.Join(ix.dir, segDir))
	if err != nil {
		return nil
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), segExt) && !strings.HasPrefix(e.Name(), ".tmp-") {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s has %d segment files but %s holds no manifest (lost or replaced?); refusing to start so that nothing is deleted: restore %s from a backup, or run `rcpd repair` to move the segments aside and start empty",
		ErrOrphanSegments, filepath.Join(ix.dir, segDir), n, filepath.Join(ix.dir, storeFile), storeFile)
}

// recover loads the manifest and segments, takes their deletions from the
// killed journal (once, for a store written before the journal, from the
// live-id map) and prunes the journal's kills no segment holds, replays
// documents not yet in segments and publishes a new version. With
// Options.VerifyAfterOpen it adds the segment files whose checksums it
// left unverified to unsummed.
func (ix *Index) recover(ctx context.Context, unsummed *[]*segment) error {
	r, err := ix.readRecovery()
	if err != nil {
		return err
	}
	migrated, err := ix.checkManifest(ctx, &r.man)
	if err != nil {
		return err
	}
	views, stale, err := ix.openViews(&r, unsummed)
	if err != nil {
		return err
	}
	ix.removeDebris(r.man)
	views, replayed, err := ix.replay(ctx, r.man.FlushedSeq, views)
	if err != nil {
		return fmt.Errorf("index: replay: %w", err)
	}
	man := r.man
	// After a clean Close every committed document is in a segment file
	// and the rebuilt layout is the one served before: the version stays,
	// so pinned versions and cursors issued before the restart still
	// resolve. Documents committed after the last flush (a crash) were
	// replayed without the deleted ones the lost in-memory segments held,
	// and migrated records may screen differently: the statistics or the
	// results can differ, so that is a new version.
	if !r.found || man.NextSeq-1 > man.FlushedSeq || migrated {
		man.Version++
	}
	if err := ix.st.Update(ctx, func(tx *store.Tx) error { return commitRecovery(tx, &man, views, stale) }); err != nil {
		return fmt.Errorf("index: open: %w", err)
	}
	ix.man, ix.epoch = man, man.Epoch
	ix.publish(views, man.Version)
	ix.log.Debug("index: opened", "dir", ix.dir, "version", man.Version, "segments", len(man.Segments), "replayed", replayed, "liveScan", ix.liveScanned)
	return nil
}

// recovery is what recover reads from the store before it opens segments.
type recovery struct {
	man    store.Manifest
	found  bool     // the store holds a manifest (else man is a fresh one)
	live   *Bitset  // without the journal: the live document numbers, a bit each (125 KB at 1 M)
	killed []uint64 // the killed journal, ascending: no live scan
}

// readRecovery reads the manifest and the deletions: the killed journal,
// or, for a store written before it, the live document numbers. A store
// without a manifest gets a fresh one, unless it holds records or segment
// files (a lost manifest: refused, so that nothing is overwritten).
func (ix *Index) readRecovery() (recovery, error) {
	r := recovery{live: &Bitset{}}
	records := 0 // without a manifest: the records stored all the same
	err := ix.st.View(func(tx *store.ReadTx) error {
		var err error
		if r.man, r.found, records, err = manifestOf(tx); err != nil || records > 0 {
			return err // records without a manifest: refused below
		}
		if r.found && r.man.Killed {
			return tx.ForEachKilled(func(seq uint64) error { r.killed = append(r.killed, seq); return nil })
		}
		limit := uint64(math.MaxUint32) // document numbers are below the manifest's next one
		if r.found {
			limit = r.man.NextSeq
			r.live = NewBitset(int(limit))
		}
		return tx.ForEachLiveSeq(func(seq uint64) error {
			if seq >= limit {
				return fmt.Errorf("%w: live document number %d, the manifest's next is %d", store.ErrCorrupt, seq, limit)
			}
			r.live.grow(int(seq) + 1)
			r.live.Set(uint32(seq))
			return nil
		})
	})
	if err != nil {
		return r, fmt.Errorf("index: open: %w", err)
	}
	if r.found {
		return r, nil
	}
	if records > 0 {
		// A fresh manifest would number new documents from 1 again,
		// over the stored ones.
		return r, fmt.Errorf("%w: %s holds %d document records (lost or damaged manifest?); refusing to start so that nothing is overwritten: restore %s from a backup, or run `rcpd repair`, which rebuilds the manifest and the segments from the records",
			ErrNoManifest, filepath.Join(ix.dir, storeFile), records, storeFile)
	}
	if err := ix.noOrphanSegments(); err != nil {
		return r, err
	}
	var e [4]byte
	rand.Read(e[:])
	r.man = store.Manifest{Format: formatLevel, Epoch: hex.EncodeToString(e[:]), NextSeq: 1, NextSegID: 1, Analyzer: ix.an.Fingerprint(),
		ScreenRules: trust.RulesVersion}
	return r, nil
}

// checkManifest refuses a format or an analyzer this build cannot serve,
// and migrates records stored in an older format or screened under other
// rules (migrated).
func (ix *Index) checkManifest(ctx context.Context, man *store.Manifest) (migrated bool, err error) {
	if man.Format != formatLevel && man.Format != 1 {
		return false, fmt.Errorf("index: unsupported index format %d", man.Format)
	}
	if man.Analyzer == "" && len(man.Segments) == 0 && man.FlushedSeq == 0 {
		// A manifest rebuilt by ResetForRebuild: nothing analysed is
		// stored, every record is replayed with the configured analyzer.
		man.Analyzer = ix.an.Fingerprint()
	}
	if man.Analyzer != ix.an.Fingerprint() {
		return false, fmt.Errorf("%w (index %s, configured %s)", ErrAnalyzerMismatch, man.Analyzer, ix.an.Fingerprint())
	}
	migrated = man.Format != formatLevel || man.ScreenRules != trust.RulesVersion
	if migrated {
		if err := ix.migrateRecords(ctx, man); err != nil {
			return false, err
		}
	}
	return migrated, nil
}

// openViews opens the manifest's segments with their deletions, and
// returns the journal's kills no segment holds (stale).
func (ix *Index) openViews(r *recovery, unsummed *[]*segment) (views []segView, stale []uint64, err error) {
	journaled := r.found && r.man.Killed
	ix.liveScanned = !journaled
	held := NewBitset(len(r.killed)) // the journal's numbers some segment holds
	isLive := func(seq uint64) bool { return seq < uint64(r.live.Len()) && r.live.Has(uint32(seq)) }
	for _, ref := range r.man.Segments {
		seg, err := openSegmentFile(filepath.Join(ix.dir, segDir), ref.Name, ref.Size, !ix.opts.VerifyAfterOpen)
		if err != nil {
			return nil, nil, err
		}
		if seg.crc != ref.CRC {
			return nil, nil, fmt.Errorf("%w %s: checksum differs from manifest", ErrCorruptSegment, ref.Name)
		}
		if ix.opts.VerifyAfterOpen {
			*unsummed = append(*unsummed, seg)
		}
		if ref.Docs > 0 && seg.n != ref.Docs {
			return nil, nil, fmt.Errorf("%w %s: %d documents, manifest says %d", ErrCorruptSegment, ref.Name, seg.n, ref.Docs)
		}
		v := segView{seg: seg}
		if journaled {
			v.del, v.ndel = killedIn(seg, r.killed, held)
		} else {
			for i := 0; i < seg.n; i++ {
				if !isLive(seg.seq(uint32(i))) {
					if v.del == nil {
						v.del = NewBitset(seg.n)
					}
					v.del.Set(uint32(i))
					v.ndel++
				}
			}
		}
		views = append(views, v)
	}
	return views, unheld(r.killed, held), nil
}

// removeDebris removes the segment files man does not name: debris from an
// interrupted flush or merge.
func (ix *Index) removeDebris(man store.Manifest) {
	keep := map[string]bool{}
	for _, ref := range man.Segments {
		keep[ref.Name] = true
	}
	ents, err := os.ReadDir(filepath.Join(ix.dir, segDir))
	if err != nil {
		return
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			ix.log.Info("index: removing unreferenced segment file", "file", e.Name())
			os.Remove(filepath.Join(ix.dir, segDir, e.Name()))
		}
	}
}

// replay indexes the documents committed after flushedSeq (after the last
// flush) that are still live, into in-memory segments appended to views.
func (ix *Index) replay(ctx context.Context, flushedSeq uint64, views []segView) (_ []segView, replayed int, _ error) {
	b := newSegBuilder()
	var sc prepScratch
	flush := func() error {
		if b.len() == 0 {
			return nil
		}
		seg, err := openSegment("", b.encode())
		if err != nil {
			return err
		}
		views = append(views, segView{seg: seg})
		b = newSegBuilder()
		return nil
	}
	err := ix.st.View(func(tx *store.ReadTx) error {
		return tx.ForEachDocFrom(flushedSeq+1, func(seq uint64, d *search.Document) error {
			if s, ok := tx.LookupID(d.ID); !ok || s != seq {
				return nil // killed (replaced or deleted)
			}
			if replayed%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			in, err := prepare(ix.an, ix.opts.Fields, d, &sc)
			if err != nil {
				return err
			}
			in.seq, in.id = seq, d.ID
			b.add(in)
			replayed++
			if b.len() >= ix.opts.FlushDocs {
				return flush()
			}
			return nil
		})
	})
	if err == nil {
		err = flush()
	}
	return views, replayed, err
}

// commitRecovery saves what recover settled: dead records purged, the
// deletions in the journal (written whole for a store from before it,
// else pruned of the stale kills) and the manifest.
func commitRecovery(tx *store.Tx, man *store.Manifest, views []segView, stale []uint64) error {
	if _, err := tx.PurgeDead(man.Version); err != nil {
		return err
	}
	if err := tx.DropSavedDeletions(); err != nil {
		return err
	}
	if !man.Killed { // a store written before the journal existed
		if err := tx.ResetKilled(deletedSeqs(views)); err != nil {
			return err
		}
		man.Killed = true
	} else if err := tx.Unkill(stale); err != nil {
		return err
	}
	return tx.PutManifest(*man)
}

// migrateRecords rewrites every stored record that is not in the current
// record format or whose injection-screen verdict was computed under other
// rules, then records the new format and rules in man (committed by the
// caller). It is restartable: records already rewritten are skipped.
func (ix *Index) migrateRecords(ctx context.Context, man *store.Manifest) error {
	start := time.Now()
	n, err := ix.st.RewriteRecords(ctx, func(_ uint64, enc []byte) ([]byte, error) {
		d, f, err := ix.st.DecodeRecord(enc, true)
		if err != nil {
			return nil, err
		}
		if f.ScreenRules == trust.RulesVersion && enc[0] != '{' {
			return nil, nil
		}
		return ix.st.EncodeDoc(d, factsOf(d))
	})
	if err != nil {
		return fmt.Errorf("index: migrating document records: %w", err)
	}
	ix.log.Info("index: rewrote document records", "from-format", man.Format, "to-format", formatLevel,
		"screen-rules", trust.RulesVersion, "records", n, "took", time.Since(start).Round(time.Millisecond))
	man.Format, man.ScreenRules = formatLevel, trust.RulesVersion
	return nil
}

// segView is a segment as seen by one snapshot: its deletions at that
// version. Both are immutable once published.
type segView struct {
	seg  *segment
	del  *Bitset // nil: none deleted
	ndel int
}

func (v segView) deleted(i uint32) bool { return v.del != nil && v.del.Has(i) }

// snapshot is one committed state of the index.
type snapshot struct {
	version uint64
	str     string
	at      time.Time
	// replaced is when a newer version was published (zero while this
	// is the current one): retention (Options.RetainFor) counts from it,
	// so a version current for an hour stays pinnable after a write.
	replaced time.Time
	segs     []segView // ascending seq ranges
	total    int       // documents in segments, deleted included (BM25 N)
	live     int
	sumLen   [numFields]uint64
	// wordMax memoises WordMax: a word's best score is a pure function
	// of the snapshot, and queries repeat words.
	wordMax sync.Map // string → float64
	nMemo   atomic.Int32
}

func (ix *Index) versionString(v uint64) string {
	return ix.epoch + "." + strconv.FormatUint(v, 10)
}

// publish installs a new current snapshot. Caller holds wmu (or is Open).
// A snapshot published under the current version (a flush, or a merge
// that dropped nothing) serves the same results in another layout: it
// replaces the current one, keeping its commit time.
func (ix *Index) publish(segs []segView, version uint64) *snapshot {
	s := &snapshot{version: version, str: ix.versionString(version), at: time.Now(), segs: segs}
	if cur := ix.cur.Load(); cur != nil && cur.version == version {
		s.at = cur.at
	}
	for _, v := range segs {
		s.total += v.seg.n
		s.live += v.seg.n - v.ndel
		for f := range s.sumLen {
			s.sumLen[f] += v.seg.sumLen[f]
		}
	}
	ix.cur.Store(s)
	ix.rmu.Lock()
	if n := len(ix.retained); n > 0 && ix.retained[n-1].version == version {
		ix.retained[n-1] = s
	} else {
		if n > 0 {
			ix.retained[n-1].replaced = s.at
		}
		ix.retained = append(ix.retained, s)
	}
	ix.trimRetainedLocked()
	ix.rmu.Unlock()
	return s
}

func (ix *Index) trimRetainedLocked() {
	now := time.Now()
	drop := 0
	for drop < len(ix.retained)-1 {
		old := ix.retained[drop]
		if len(ix.retained)-drop-1 > ix.opts.RetainVersions || now.Sub(old.replaced) > ix.opts.RetainFor {
			drop++
			continue
		}
		break
	}
	if drop > 0 {
		clear(ix.retained[:drop])
		ix.retained = ix.retained[drop:]
	}
}

// oldestRetained returns the oldest version a searcher may still pin.
func (ix *Index) oldestRetained() uint64 {
	ix.rmu.Lock()
	defer ix.rmu.Unlock()
	ix.trimRetainedLocked()
	return ix.retained[0].version
}

// snapshotFor resolves a version string ("" = current).
func (ix *Index) snapshotFor(version string) (*snapshot, error) {
	// The current snapshot (the common pin: a page of the current list, the
	// confidence normaliser's searches) is always retained: no lock.
	if cur := ix.cur.Load(); version == "" || cur != nil && version == cur.str {
		return cur, nil
	}
	epoch, num, ok := strings.Cut(version, ".")
	v, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil || epoch == "" {
		return nil, fmt.Errorf("%w: %q", search.ErrBadVersion, version)
	}
	if epoch != ix.epoch {
		return nil, fmt.Errorf("%w: %q belongs to another index", search.ErrSnapshotGone, version)
	}
	ix.rmu.Lock()
	defer ix.rmu.Unlock()
	ix.trimRetainedLocked()
	i := sort.Search(len(ix.retained), func(i int) bool { return ix.retained[i].version >= v })
	if i < len(ix.retained) && ix.retained[i].version == v {
		return ix.retained[i], nil
	}
	return nil, fmt.Errorf("%w: %s", search.ErrSnapshotGone, version)
}

// Analyzer returns the analysis chain used for documents and queries.
func (ix *Index) Analyzer() *analysis.Analyzer { return ix.an }

// Version returns the current version string.
func (ix *Index) Version() string { return ix.cur.Load().str }

var errNoChange = errors.New("no change")

// Add indexes docs and returns their ids in input order. A document with an
// id replaces the live document with that id (upsert); re-adding an
// identical document changes nothing. Documents without an id get a fresh
// one. Chunk documents (Chunk set) added together replace the previous
// chunks of their parent that are not in the batch. Add returns after the
// change is durable and visible to the next Search.
func (ix *Index) Add(ctx context.Context, docs []search.Document) ([]string, error) {
	b, err := ix.Prepare(ctx, docs)
	if err != nil {
		return nil, err
	}
	return ix.Commit(ctx, b)
}

// Batch is documents validated and analysed for Commit.
type Batch struct {
	docs   []search.Document
	inputs []*docInput
	names  []string // SetNames
}

// SetNames makes Commit record names in the store transaction that stores
// the batch (store.ReadTx.WriteNames reads the last ones back): for a
// caller that commits state derived from these documents to another file
// at the same time, and after a crash must know which documents that state
// may lag on. A commit that changes nothing records nothing.
func (b *Batch) SetNames(names []string) { b.names = names }

// Prepare validates and analyses docs (the CPU-bound part of Add) without
// taking any lock, so that a caller can do it before entering its own
// write path: a large add then does not delay small ones while it is
// analysed. It checks ctx as it goes.
func (ix *Index) Prepare(ctx context.Context, docs []search.Document) (search.Batch, error) {
	for i := range docs {
		if err := validateDoc(&docs[i]); err != nil {
			return nil, err
		}
	}
	inputs, err := prepareAll(ctx, ix.an, ix.opts.Fields, ix.st, docs)
	if err != nil {
		return nil, err
	}
	return &Batch{docs: docs, inputs: inputs}, nil
}

// JoinBatches returns one batch holding bs (batches of this index's
// Prepare) in order, for a caller that commits several prepared adds at
// once (group commit: one store transaction and one segment for all of
// them). The batches must not share ids: within one batch a later document
// replaces an earlier one.
func (ix *Index) JoinBatches(bs ...search.Batch) search.Batch {
	if len(bs) == 1 {
		return bs[0]
	}
	out := &Batch{}
	for _, sb := range bs {
		b := sb.(*Batch)
		out.docs = append(out.docs, b.docs...)
		out.inputs = append(out.inputs, b.inputs...)
	}
	return out
}

// batch is sb as this index prepared it.
func batch(sb search.Batch) (*Batch, error) {
	b, ok := sb.(*Batch)
	if !ok {
		return nil, fmt.Errorf("index: batch %T was not prepared by an index", sb)
	}
	return b, nil
}

// Unchanged reports whether committing b would change nothing: every
// document of b names an id whose live record holds it exactly (Commit's
// test for an identical re-add), and none is a chunk (a chunk batch also
// replaces its parent's other chunks). It reads the current snapshot of
// the store and takes no lock: a caller that answers a write from it must
// itself exclude concurrent writes to those ids.
func (ix *Index) Unchanged(sb search.Batch) (bool, error) {
	if ix.closed.Load() {
		return false, ErrClosed
	}
	b, err := batch(sb)
	if err != nil {
		return false, err
	}
	same := true
	err = ix.st.View(func(tx *store.ReadTx) error {
		for i := range b.docs {
			d := &b.docs[i]
			if d.ID == "" || d.Chunk != nil || b.inputs[i].enc == nil {
				same = false
				return nil
			}
			seq, ok := tx.LookupID(d.ID)
			if !ok {
				same = false
				return nil
			}
			if old, _ := tx.DocBytes(seq); !ix.st.SameRecord(old, b.inputs[i].enc) {
				same = false
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("index: %w", err)
	}
	return same, nil
}

// Commit writes a prepared batch: Add after Prepare.
func (ix *Index) Commit(ctx context.Context, sb search.Batch) ([]string, error) {
	b, err := batch(sb)
	if err != nil {
		return nil, err
	}
	docs, inputs := b.docs, b.inputs
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	m := ix.man
	ver := m.Version + 1
	ids := make([]string, len(docs))
	var added []*docInput
	var kills, purged []uint64
	oldest := ix.oldestRetained()
	err = ix.st.Update(ctx, func(tx *store.Tx) error {
		added, kills = added[:0], kills[:0]
		m = ix.man
		inBatch := map[string]bool{}
		parents := map[string]bool{}
		for i := range docs {
			d := docs[i]
			if d.ID == "" {
				d.ID = "_" + m.Epoch + "-" + strconv.FormatUint(m.NextSeq, 36)
			}
			ids[i] = d.ID
			inBatch[d.ID] = true
			if d.Chunk != nil && d.Chunk.DocID != "" {
				parents[d.Chunk.DocID] = true
			}
			enc := inputs[i].enc
			if enc == nil { // the id was minted here
				var err error
				if enc, err = ix.st.EncodeDoc(&d, inputs[i].facts); err != nil {
					return err
				}
			}
			if old, ok := tx.LookupID(d.ID); ok {
				if oldEnc, _ := tx.DocBytes(old); ix.st.SameRecord(oldEnc, enc) {
					continue
				}
				if err := tx.Kill(d.ID, old, ver, true); err != nil {
					return err
				}
				kills = append(kills, old)
			}
			seq := m.NextSeq
			m.NextSeq++
			if err := tx.PutDoc(seq, ver, &d, enc); err != nil {
				return err
			}
			in := inputs[i]
			in.seq, in.id = seq, d.ID
			added = append(added, in)
		}
		for p := range parents {
			for _, c := range tx.Children(p) {
				if inBatch[c] {
					continue
				}
				if seq, ok := tx.LookupID(c); ok {
					if err := tx.Kill(c, seq, ver, false); err != nil {
						return err
					}
					kills = append(kills, seq)
				}
			}
		}
		if len(added) == 0 && len(kills) == 0 {
			return errNoChange
		}
		m.Version = ver
		if b.names != nil {
			if err := tx.PutWriteNames(b.names); err != nil {
				return err
			}
		}
		var err error
		if purged, err = tx.PurgeDead(oldest); err != nil {
			return err
		}
		return tx.PutManifest(m)
	})
	if errors.Is(err, errNoChange) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("index: add: %w", err)
	}
	ix.docs.purge(purged)
	ix.man = m
	segs := slices.Clone(ix.cur.Load().segs)
	if len(added) > 0 {
		b := newSegBuilder()
		for _, in := range added {
			b.add(in)
		}
		seg, err := openSegment("", b.encode())
		if err != nil {
			// Committed but not publishable: the store replays it on restart.
			return nil, fmt.Errorf("index: add: %w", err)
		}
		segs = append(segs, segView{seg: seg})
	}
	applyKills(segs, kills)
	ix.publish(segs, ver)
	ix.maybeKick(segs)
	return ids, nil
}

// Delete removes the documents with the given ids (and, for a chunked
// document's id, all its chunks). It returns how many ids named something
// live; deleting absent ids is not an error.
func (ix *Index) Delete(ctx context.Context, ids []string) (int, error) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.closed.Load() {
		return 0, ErrClosed
	}
	m := ix.man
	ver := m.Version + 1
	var kills, purged []uint64
	deleted := 0
	oldest := ix.oldestRetained()
	err := ix.st.Update(ctx, func(tx *store.Tx) error {
		kills, deleted = kills[:0], 0
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			hit := false
			if seq, ok := tx.LookupID(id); ok {
				if err := tx.Kill(id, seq, ver, false); err != nil {
					return err
				}
				kills = append(kills, seq)
				hit = true
			}
			for _, c := range tx.Children(id) {
				if seq, ok := tx.LookupID(c); ok {
					if err := tx.Kill(c, seq, ver, false); err != nil {
						return err
					}
					kills = append(kills, seq)
					hit = true
				}
			}
			if hit {
				deleted++
			}
		}
		if len(kills) == 0 {
			return errNoChange
		}
		m.Version = ver
		var err error
		if purged, err = tx.PurgeDead(oldest); err != nil {
			return err
		}
		return tx.PutManifest(m)
	})
	if errors.Is(err, errNoChange) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("index: delete: %w", err)
	}
	ix.docs.purge(purged)
	ix.man = m
	segs := slices.Clone(ix.cur.Load().segs)
	applyKills(segs, kills)
	ix.publish(segs, ver)
	return deleted, nil
}

// applyKills marks the documents numbered kills deleted in segs, copying
// each touched deletion set (segs is a fresh slice; the views are shared).
func applyKills(segs []segView, kills []uint64) {
	cloned := map[int]bool{}
	for _, seq := range kills {
		i := sort.Search(len(segs), func(i int) bool { return segs[i].seg.maxSeq >= seq })
		if i == len(segs) {
			continue
		}
		local, ok := segs[i].seg.findSeq(seq)
		if !ok {
			continue
		}
		v := &segs[i]
		if !cloned[i] {
			if v.del == nil {
				v.del = NewBitset(v.seg.n)
			} else {
				v.del = v.del.Clone()
			}
			cloned[i] = true
		}
		if !v.del.Has(local) {
			v.del.Set(local)
			v.ndel++
		}
	}
}

// Stats returns statistics of the current snapshot.
func (ix *Index) Stats() search.Stats {
	s := ix.cur.Load()
	st := search.Stats{Version: s.str, Docs: s.live, Segments: len(s.segs)}
	for _, v := range s.segs {
		st.Deleted += v.ndel
		st.SegmentBytes += int64(len(v.seg.data))
		v.seg.addParts(&st.SegmentParts)
		st.Terms += v.seg.nTerms
		if v.seg.name == "" {
			st.MemSegments++
		}
	}
	st.PositionBytes = st.SegmentParts.Positions
	ix.rmu.Lock()
	st.RetainedVersions = len(ix.retained)
	ix.rmu.Unlock()
	return st
}

// Get returns the live stored document with id, or nil.
func (ix *Index) Get(ctx context.Context, id string) (*search.Document, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var d *search.Document
	err := ix.st.View(func(tx *store.ReadTx) error {
		seq, ok := tx.LookupID(id)
		if !ok {
			return nil
		}
		var err error
		d, err = tx.Doc(seq)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("index: get: %w", err)
	}
	return d, nil
}

// Close flushes buffered documents to a segment, stops background work
// and closes the store.
func (ix *Index) Close() error {
	if ix.closed.Swap(true) {
		return nil
	}
	if !ix.opts.NoBackground {
		close(ix.stop)
	}
	ix.verifyCancel()
	<-ix.verified.Done()
	<-ix.bgDone
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ferr := ix.flush(ctx, true)
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if err := ix.st.Close(); err != nil {
		return fmt.Errorf("index: close: %w", err)
	}
	if ferr != nil {
		return fmt.Errorf("index: close: flush: %w", ferr)
	}
	return nil
}
