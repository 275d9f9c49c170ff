package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/store"
)

// background flushes buffered documents and merges segments until Close.
func (ix *Index) background() {
	defer close(ix.bgDone)
	t := time.NewTicker(ix.opts.FlushAfter / 2)
	defer t.Stop()
	for {
		select {
		case <-ix.stop:
			return
		case <-ix.kick:
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-ix.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		ix.backgroundStep(ctx)
		cancel()
	}
}

// backgroundStep flushes, merges and compacts once. Close marks the index
// closed before it stops this loop, so a step can meet ErrClosed before its
// context is cancelled: that is a shutdown, not a failure worth an error log.
func (ix *Index) backgroundStep(ctx context.Context) {
	report := func(what string, err error) {
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			ix.log.Error("index: background "+what+" failed", "err", err)
		}
	}
	report("flush", ix.flush(ctx, false))
	report("merge", ix.Merge(ctx))
	if ix.compactDue(time.Now()) {
		report("store compaction", ix.CompactStore(ctx))
	}
}

// compactMaxLag bounds how long steady writes defer store compaction.
const compactMaxLag = 5 * time.Minute

// compactDue says whether the background loop compacts the record store
// now: once writes have been quiet for Options.CompactQuiet, or at most
// compactMaxLag after the last compaction. Training a dictionary and
// rewriting the records stored without one is seconds of CPU at every
// 8-fold growth, and the adds being acknowledged come first: under the
// soak mix it took a third of rcpd's CPU while adds waited. Records written
// meanwhile are stored compressed alone (format 2) and rewritten later.
func (ix *Index) compactDue(now time.Time) bool {
	if ix.compactedAt.IsZero() {
		ix.compactedAt = now // a start is not a compaction, but the lag counts from it
	}
	if now.Sub(ix.cur.Load().at) < ix.opts.CompactQuiet && now.Sub(ix.compactedAt) < compactMaxLag {
		return false
	}
	ix.compactedAt = now
	return true
}

func (ix *Index) maybeKick(segs []segView) {
	if ix.opts.NoBackground {
		return
	}
	mem, docs := memStats(segs)
	if mem >= ix.opts.MaxMemSegments || docs >= ix.opts.FlushDocs {
		select {
		case ix.kick <- struct{}{}:
		default:
		}
	}
}

func memStats(segs []segView) (n, docs int) {
	for _, v := range segs {
		if v.seg.name == "" {
			n++
			docs += v.seg.n
		}
	}
	return n, docs
}

// Flush writes all buffered documents to a segment file now.
func (ix *Index) Flush(ctx context.Context) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	return ix.flush(ctx, true)
}

// flush merges the in-memory segments into one segment file and commits it
// to the manifest. Unless force, it waits for the flush thresholds.
//
// A flush only persists: deleted documents are written too (Open rebuilds
// their deletion from the store's live-id map), so the scoring statistics
// and the index version stay what they were, and a clean restart serves
// the version it closed with.
func (ix *Index) flush(ctx context.Context, force bool) error {
	ix.bgmu.Lock()
	defer ix.bgmu.Unlock()
	snap := ix.cur.Load()
	var mem []segView
	for _, v := range snap.segs {
		if v.seg.name == "" {
			mem = append(mem, v)
		}
	}
	if len(mem) == 0 {
		return nil
	}
	if !force {
		_, docs := memStats(snap.segs)
		if len(mem) < ix.opts.MaxMemSegments && docs < ix.opts.FlushDocs && time.Since(snap.at) < ix.opts.FlushAfter {
			return nil
		}
	}
	return ix.rewrite(ctx, mem, true)
}

// Merge merges adjacent disk segments while there are more than
// MergeFactor of them, choosing the cheapest window each time; then, once
// writes have been quiet for Options.IdleMerge, all of them into one when
// that is worth it (idleMergeDue). Readers are never blocked.
func (ix *Index) Merge(ctx context.Context) error {
	ix.bgmu.Lock()
	defer ix.bgmu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		snap := ix.cur.Load()
		var disk []segView
		for _, v := range snap.segs {
			if v.seg.name != "" {
				disk = append(disk, v)
			}
		}
		if len(disk) <= ix.opts.MergeFactor {
			if ix.idleMergeDue(snap) {
				return ix.rewrite(ctx, disk, false)
			}
			return nil
		}
		w := ix.opts.MergeFactor
		best, bestCost := 0, -1
		for i := 0; i+w <= len(disk); i++ {
			cost := 0
			for _, v := range disk[i : i+w] {
				cost += v.seg.n - v.ndel
			}
			if bestCost < 0 || cost < bestCost {
				best, bestCost = i, cost
			}
		}
		if err := ix.rewrite(ctx, disk[best:best+w], false); err != nil {
			return err
		}
	}
}

// idleMergeDue reports whether the segments of snap should become one:
// writes have been quiet for Options.IdleMerge, nothing is buffered, and
// the documents outside the largest segment (plus the deleted ones a merge
// drops) amount to at least a quarter of its live documents. Each
// segment's term dictionary and tables repeat what the others hold (at
// 300 k passages, 8 segments take 113 MB where one takes 92), and one
// segment answers with one lookup per term; the quarter bounds the
// rewriting: each full merge is at least one-fifth new documents.
func (ix *Index) idleMergeDue(snap *snapshot) bool {
	if ix.opts.IdleMerge < 0 || len(snap.segs) < 2 || time.Since(snap.at) < ix.opts.IdleMerge {
		return false
	}
	largest, rest := 0, 0
	for _, v := range snap.segs {
		if v.seg.name == "" {
			return false
		}
		live := v.seg.n - v.ndel
		rest += v.ndel
		if live > largest {
			largest, live = live, largest
		}
		rest += live
	}
	return 4*rest >= largest
}

// CompactStore trains the record store's next compression dictionary when
// it is due (store.TrainDict: from Options.DictAfter documents, again at
// every 8-fold growth) and rewrites the records stored without a dictionary with it.
// The background loop calls it; bulk loads with NoBackground call it
// after loading. Records keep reading throughout (each names its
// dictionary) and the documents do not change, so neither the version nor
// the decoded-record cache does.
func (ix *Index) CompactStore(ctx context.Context) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	if err := ix.WaitVerified(ctx); err != nil { // it reads every record
		return err
	}
	ix.bgmu.Lock()
	defer ix.bgmu.Unlock()
	start := time.Now()
	id, err := ix.st.TrainDict(ctx, ix.opts.DictAfter)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if id == 0 && ix.recompressed {
		return nil
	}
	n, err := ix.st.Recompress(ctx)
	if err != nil {
		return fmt.Errorf("index: recompressing records: %w", err)
	}
	ix.recompressed = true
	if id != 0 || n > 0 {
		ix.log.Info("index: compressed document records with a dictionary", "dictionary", id, "records", n,
			"took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// ForceMerge merges all segments (flushing buffered ones) into one.
func (ix *Index) ForceMerge(ctx context.Context) error {
	if err := ix.Flush(ctx); err != nil {
		return err
	}
	ix.bgmu.Lock()
	defer ix.bgmu.Unlock()
	snap := ix.cur.Load()
	if len(snap.segs) <= 1 && (len(snap.segs) == 0 || snap.segs[0].ndel == 0) {
		return nil
	}
	return ix.rewrite(ctx, snap.segs, false)
}

// rewrite replaces the adjacent segments src (as seen by the current
// snapshot) with one merged segment file and publishes it. A merge drops
// the documents deleted in src, which changes BM25's document count and
// frequencies, so it publishes a new version; a flush (isFlush) keeps them
// and a merge of segments without deletions drops nothing: both serve
// exactly the results of the current version and publish under it.
// Documents deleted while the rewrite ran stay deleted. Caller holds bgmu.
func (ix *Index) rewrite(ctx context.Context, src []segView, isFlush bool) error {
	for _, v := range src {
		if v.seg.name == "" {
			continue
		}
		// A merge must not copy a segment whose checksum is unverified
		// into a new file with a valid one.
		if err := ix.WaitVerified(ctx); err != nil {
			return err
		}
		break
	}
	seg, ref, ndocs, err := ix.writeMerged(ctx, src, isFlush)
	if err != nil {
		return err
	}

	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	cur := ix.cur.Load()
	// Locate src in the current snapshot (by segment identity).
	first := slices.IndexFunc(cur.segs, func(v segView) bool { return v.seg == src[0].seg })
	if first < 0 || first+len(src) > len(cur.segs) {
		return fmt.Errorf("index: merge sources vanished")
	}
	nv, err := carryDeletes(cur.segs[first:first+len(src)], src, seg, isFlush)
	if err != nil {
		return err
	}
	m := ix.man
	var maxSeq uint64
	dropped := 0
	for _, v := range src {
		maxSeq = max(maxSeq, v.seg.maxSeq)
		dropped += v.ndel
	}
	if !isFlush && dropped > 0 {
		m.Version++
	}
	m.Segments = replaceRefs(m.Segments, src, ref, seg != nil)
	if isFlush {
		m.FlushedSeq = max(m.FlushedSeq, maxSeq)
	}
	var gone []uint64 // killed documents no segment holds from now on
	if !isFlush {
		gone = deletedSeqs(src)
	}
	oldest := ix.oldestRetained()
	var purged []uint64
	err = ix.st.Update(ctx, func(tx *store.Tx) error {
		var err error
		if purged, err = tx.PurgeDead(oldest); err != nil {
			return err
		}
		if err := tx.Unkill(gone); err != nil {
			return err
		}
		return tx.PutManifest(m)
	})
	if err != nil {
		if seg != nil {
			os.Remove(filepath.Join(ix.dir, segDir, ref.Name))
		}
		return fmt.Errorf("index: commit merge: %w", err)
	}
	ix.docs.purge(purged)
	ix.man = m
	segs := make([]segView, 0, len(cur.segs)-len(src)+1)
	segs = append(segs, cur.segs[:first]...)
	if seg != nil {
		segs = append(segs, nv)
	}
	segs = append(segs, cur.segs[first+len(src):]...)
	ix.publish(segs, m.Version)
	// Old files are no longer referenced by the manifest; retained
	// snapshots keep their bytes in memory.
	for _, v := range src {
		if v.seg.name != "" {
			if err := os.Remove(filepath.Join(ix.dir, segDir, v.seg.name)); err != nil && !os.IsNotExist(err) {
				ix.log.Warn("index: removing merged segment", "file", v.seg.name, "err", err)
			}
		}
	}
	ix.log.Debug("index: rewrote segments", "sources", len(src), "docs", ndocs, "flush", isFlush, "version", m.Version)
	return nil
}

// writeMerged writes the segment merging src (none when it keeps no
// document) and opens it from its mapped file.
func (ix *Index) writeMerged(ctx context.Context, src []segView, isFlush bool) (*segment, store.Segment, int, error) {
	data, ndocs, err := mergeViews(ctx, src, isFlush)
	if err != nil || ndocs == 0 {
		return nil, store.Segment{}, 0, err
	}
	ix.wmu.Lock()
	id := ix.man.NextSegID
	ix.man.NextSegID++ // burnt even if the commit fails: names never repeat
	ix.wmu.Unlock()
	name := fmt.Sprintf("seg-%010d%s", id, segExt)
	if err := writeFileAtomic(filepath.Join(ix.dir, segDir), name, data); err != nil {
		return nil, store.Segment{}, 0, fmt.Errorf("index: write segment: %w", err)
	}
	// Served from the mapped file: the heap copy is garbage from here.
	seg, err := openSegmentFile(filepath.Join(ix.dir, segDir), name, int64(len(data)), true)
	if err != nil {
		return nil, store.Segment{}, 0, err
	}
	ref := store.Segment{Name: name, MinSeq: seg.minSeq, MaxSeq: seg.maxSeq, Docs: seg.n, Size: int64(len(data)), CRC: seg.crc}
	return seg, ref, ndocs, nil
}

// carryDeletes is the merged segment seg's view: the documents deleted in
// the current snapshot's views of src (now) since the merge read them —
// and with isFlush all of them, which a flush keeps — stay deleted in it.
func carryDeletes(now, src []segView, seg *segment, isFlush bool) (segView, error) {
	var nv segView
	if seg == nil {
		return nv, nil
	}
	nv.seg = seg
	for k, old := range now {
		if old.seg != src[k].seg {
			return nv, fmt.Errorf("index: merge sources changed")
		}
		if old.del == nil {
			continue
		}
		for i := 0; i < old.seg.n; i++ {
			if old.del.Has(uint32(i)) && (isFlush || !src[k].deleted(uint32(i))) {
				if l, ok := seg.findSeq(old.seg.seq(uint32(i))); ok {
					if nv.del == nil {
						nv.del = NewBitset(seg.n)
					}
					nv.del.Set(l)
					nv.ndel++
				}
			}
		}
	}
	return nv, nil
}

// replaceRefs is the manifest's segment list with the segments of src
// replaced, where the first of them stood, by ref (when add).
func replaceRefs(refs []store.Segment, src []segView, ref store.Segment, add bool) []store.Segment {
	replaced := map[string]bool{}
	for _, v := range src {
		replaced[v.seg.name] = true
	}
	var out []store.Segment
	inserted := false
	for _, r := range refs {
		if replaced[r.Name] {
			if !inserted && add {
				out = append(out, ref)
			}
			inserted = true
			continue
		}
		out = append(out, r)
	}
	if !inserted && add {
		out = append(out, ref)
	}
	return out
}

// mergeViews writes one segment image holding the live documents of views
// (in ascending seq order), and the deleted ones too with keepDeleted.
// Dictionaries are merged k-way, streaming one term's postings at a time,
// so memory stays proportional to the output — except that the positions
// of a format 2 source (kept per document) are first inverted per term,
// 4 bytes per token of that source.
func mergeViews(ctx context.Context, views []segView, keepDeleted bool) (data []byte, n int, err error) {
	m := &merger{views: views, maps: make([][]uint32, len(views)), invs: make([]*invertedForward, len(views))}
	w, n, err := m.mapDocs(ctx, keepDeleted)
	if err != nil || n == 0 {
		return nil, 0, err
	}
	if err := m.terms(ctx, w); err != nil {
		return nil, 0, err
	}
	if err := m.keywords(ctx, w); err != nil {
		return nil, 0, err
	}
	return w.finish(m.numbers()), n, nil
}

// merger is a merge of views into one segment: maps[k] takes view k's
// local document numbers to the merged segment's (noDoc if dropped), and
// invs[k] holds the positions of a format 2 view, inverted per term.
type merger struct {
	views []segView
	maps  [][]uint32
	invs  []*invertedForward
}

// mapDocs numbers the documents the merged segment keeps and returns its
// writer and their count.
func (m *merger) mapDocs(ctx context.Context, keepDeleted bool) (*segWriter, int, error) {
	var seqs []uint64
	var ids []string
	var lens []uint32
	var noPos []uint32 // merged docs without positions
	for k, v := range m.views {
		if v.seg.format == 2 {
			var err error
			if m.invs[k], err = invertForward(ctx, v.seg); err != nil {
				return nil, 0, err
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		mk := make([]uint32, v.seg.n)
		for i := 0; i < v.seg.n; i++ {
			if !keepDeleted && v.deleted(uint32(i)) {
				mk[i] = noDoc
				continue
			}
			mk[i] = uint32(len(seqs))
			if !hasPositions(v.seg, m.invs[k], uint32(i)) {
				noPos = append(noPos, mk[i])
			}
			seqs = append(seqs, v.seg.seq(uint32(i)))
			ids = append(ids, v.seg.id(uint32(i)))
			for f := 0; f < numFields; f++ {
				lens = append(lens, v.seg.fieldLen(uint32(i), f))
			}
		}
		m.maps[k] = mk
	}
	if len(seqs) == 0 {
		return nil, 0, nil
	}
	var noPosSet *Bitset
	if len(noPos) > 0 {
		noPosSet = NewBitset(len(seqs))
		for _, d := range noPos {
			noPosSet.Set(d)
		}
	}
	return newSegWriter(seqs, ids, lens, noPosSet), len(seqs), nil
}

// terms merges the term dictionaries k-way, one term's postings at a time.
func (m *merger) terms(ctx context.Context, w *segWriter) error {
	var docs, tfs, pos []uint32
	var sc mergeScratch
	views := m.views
	cur := make([]int, len(views))
	key := func(k int) []byte {
		return strAt(views[k].seg.sec[secTermOff], views[k].seg.sec[secTermBlob], cur[k])
	}
	for step := 0; ; step++ {
		if step%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var minKey []byte
		for k, v := range views {
			if cur[k] < v.seg.nTerms {
				if kk := key(k); minKey == nil || bytes.Compare(kk, minKey) < 0 {
					minKey = kk
				}
			}
		}
		if minKey == nil {
			return nil
		}
		term := string(minKey)
		docs, tfs, pos = docs[:0], tfs[:0], pos[:0]
		for k, v := range views {
			if cur[k] >= v.seg.nTerms || string(key(k)) != term {
				continue
			}
			src := termSource{seg: v.seg, ord: cur[k], inv: m.invs[k], m: m.maps[k], sc: &sc}
			cur[k]++
			var err error
			if docs, tfs, pos, err = src.appendTo(docs, tfs, pos); err != nil {
				return fmt.Errorf("%w: term %q", err, term)
			}
		}
		if len(docs) > 0 {
			w.addTerm(term, docs, tfs, pos)
		}
	}
}

// keywords merges the metadata keyword dictionaries k-way: the current key
// of each view (nil when done), decoded into its own buffer.
func (m *merger) keywords(ctx context.Context, w *segWriter) error {
	views := m.views
	cur := make([]int, len(views))
	keys, bufs := make([][]byte, len(views)), make([][]byte, len(views))
	load := func(k int) {
		keys[k] = nil
		if seg := views[k].seg; cur[k] < seg.nKw {
			keys[k] = seg.kwKey(cur[k], bufs[k])
			if seg.format >= 4 {
				bufs[k] = keys[k]
			}
		}
	}
	for k := range views {
		load(k)
	}
	var docs []uint32
	for step := 0; ; step++ {
		if step%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var minKey []byte
		for _, kk := range keys {
			if kk != nil && (minKey == nil || bytes.Compare(kk, minKey) < 0) {
				minKey = kk
			}
		}
		if minKey == nil {
			return nil
		}
		key := string(minKey)
		docs = docs[:0]
		for k, v := range views {
			if keys[k] == nil || string(keys[k]) != key {
				continue
			}
			cnt, list, ok := v.seg.kwList(cur[k])
			cur[k]++
			load(k)
			mk := m.maps[k]
			ok = ok && decodeDocList(list, int(cnt), v.seg.n, func(d uint32) {
				if nd := mk[d]; nd != noDoc {
					docs = append(docs, nd)
				}
			})
			if !ok {
				return fmt.Errorf("%w %s: keyword %q", ErrCorruptSegment, v.seg.name, key)
			}
		}
		if len(docs) > 0 {
			w.addKeyword(key, docs)
		}
	}
}

// numbers merges the numeric columns.
func (m *merger) numbers() map[string]*numCol {
	nums := map[string]*numCol{}
	for k, v := range m.views {
		for field, c := range v.seg.nums {
			for i, d := range c.docs {
				if nd := m.maps[k][d]; nd != noDoc {
					nc := nums[field]
					if nc == nil {
						nc = &numCol{}
						nums[field] = nc
					}
					nc.docs = append(nc.docs, nd)
					nc.vals = append(nc.vals, c.vals[i])
				}
			}
		}
	}
	return nums
}

// termSource is one source segment's postings of the term being merged.
type termSource struct {
	seg *segment
	ord int              // the term's ordinal in seg
	inv *invertedForward // format 2: seg's positions per term
	m   []uint32         // seg's local → merged doc numbers (noDoc: dropped)
	sc  *mergeScratch
}

// mergeScratch is the working memory of termSource.appendTo, reused from
// term to term.
type mergeScratch struct {
	pi  posIter
	it  postIter
	buf [numFields][]uint32
}

// appendTo appends the merged doc numbers, tfs and known positions of the
// term's postings that survive the merge.
func (t termSource) appendTo(docs, tfs, pos []uint32) ([]uint32, []uint32, []uint32, error) {
	seg := t.seg
	ti := seg.termInfo(t.ord)
	bad := func() error { return fmt.Errorf("%w %s", ErrCorruptSegment, seg.name) }
	if seg.format >= 3 {
		pi, buf := &t.sc.pi, &t.sc.buf
		for pi.init(seg, ti); pi.doc() != noDoc; pi.next() {
			nd := t.m[pi.doc()]
			if nd == noDoc {
				continue
			}
			docs = append(docs, nd)
			tfs = append(tfs, pi.it.tf[:]...)
			ok, err := pi.positions(buf)
			if err != nil {
				return docs, tfs, pos, fmt.Errorf("%w %s", err, seg.name)
			}
			if ok {
				for _, b := range buf {
					pos = append(pos, b...)
				}
			}
		}
		if pi.err != nil || pi.it.err != nil {
			return docs, tfs, pos, bad()
		}
		return docs, tfs, pos, nil
	}
	var c, end int
	if t.inv != nil {
		c, end = t.inv.start[t.ord], t.inv.start[t.ord+1]
	}
	it := &t.sc.it
	for it.reset(seg.postingsBytes(ti), int(ti.df), seg.n, seg.format); it.doc != noDoc; it.next() {
		var run []uint32
		if t.inv != nil && t.inv.has.Has(it.doc) {
			n := int(it.tf[fieldTitle]) + int(it.tf[fieldBody])
			if n > end-c {
				return docs, tfs, pos, bad()
			}
			run, c = t.inv.pos[c:c+n], c+n
		}
		if nd := t.m[it.doc]; nd != noDoc {
			docs = append(docs, nd)
			tfs = append(tfs, it.tf[:]...)
			pos = append(pos, run...)
		}
	}
	if it.err != nil || c != end {
		return docs, tfs, pos, bad()
	}
	return docs, tfs, pos, nil
}

// hasPositions reports whether doc i of seg has known positions (inv: the
// inverted forward index of a format 2 seg).
func hasPositions(seg *segment, inv *invertedForward, i uint32) bool {
	switch seg.format {
	case 1:
		return false
	case 2:
		return inv.has.Has(i)
	}
	return seg.noPos == nil || !seg.noPos.Has(i)
}

// invertedForward holds a format 2 segment's positions per term: term
// ordinal o's are pos[start[o]:start[o+1]], per document (ascending) the
// title's then the body's — the layout format 3 writes.
type invertedForward struct {
	start []int
	pos   []uint32
	has   *Bitset // documents with a forward entry
}

// invertCheckEvery is how many documents invertForward decodes between
// two looks at its context: at 1 M documents the inversion is tens of
// seconds of CPU, and a shutdown must not wait for it.
const invertCheckEvery = 64

// testHookInvert, when set (tests only), is called for every document
// invertForward reads.
var testHookInvert func()

// invertForward inverts the forward entries of seg (format 2) in two
// passes: count per term, then fill. It stops with ctx's error.
func invertForward(ctx context.Context, seg *segment) (*invertedForward, error) {
	inv := &invertedForward{start: make([]int, seg.nTerms+1), has: NewBitset(seg.n)}
	var toks []uint32
	walk := func(fn func(ord, p uint32)) error {
		for i := 0; i < seg.n; i++ {
			if i%invertCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if testHookInvert != nil {
				testHookInvert()
			}
			enc := strAt(seg.sec[secFwdOff], seg.sec[secFwd], i)
			if len(enc) == 0 {
				continue
			}
			inv.has.Set(uint32(i))
			var ok bool
			if toks, ok = decodeForward(toks[:0], enc, seg.nTerms); !ok {
				return fmt.Errorf("%w %s: positions of document %d", ErrCorruptSegment, seg.name, i)
			}
			for j := 0; j < len(toks); {
				n := int(toks[j])
				for k := j + 1; k < j+1+2*n; k += 2 {
					fn(toks[k], toks[k+1])
				}
				j += 1 + 2*n
			}
		}
		return nil
	}
	if err := walk(func(ord, _ uint32) { inv.start[ord+1]++ }); err != nil {
		return nil, err
	}
	for o := 1; o <= seg.nTerms; o++ {
		inv.start[o] += inv.start[o-1]
	}
	inv.pos = make([]uint32, inv.start[seg.nTerms])
	fill := slices.Clone(inv.start[:seg.nTerms])
	if err := walk(func(ord, p uint32) { inv.pos[fill[ord]] = p; fill[ord]++ }); err != nil {
		return nil, err
	}
	return inv, nil
}

// writeFileAtomic publishes data as dir/name: temp file, fsync, rename,
// fsync of the directory.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
