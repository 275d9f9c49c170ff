package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/engine/store"
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
		if err := ix.flush(ctx, false); err != nil && ctx.Err() == nil {
			ix.log.Error("index: background flush failed", "err", err)
		}
		if err := ix.Merge(ctx); err != nil && ctx.Err() == nil {
			ix.log.Error("index: background merge failed", "err", err)
		}
		cancel()
	}
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
// MergeFactor of them, choosing the cheapest window each time. Readers are
// never blocked.
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
// snapshot) with one merged segment file and publishes a new version.
// Documents deleted while the merge ran stay deleted. Caller holds bgmu.
func (ix *Index) rewrite(ctx context.Context, src []segView, isFlush bool) error {
	b, err := mergeViews(ctx, src)
	if err != nil {
		return err
	}
	var seg *segment
	var ref store.Segment
	if b.len() > 0 {
		ix.wmu.Lock()
		id := ix.man.NextSegID
		ix.man.NextSegID++ // burnt even if the commit fails: names never repeat
		ix.wmu.Unlock()
		name := fmt.Sprintf("seg-%010d%s", id, segExt)
		data := b.encode()
		if err := writeFileAtomic(filepath.Join(ix.dir, segDir), name, data); err != nil {
			return fmt.Errorf("index: write segment: %w", err)
		}
		if seg, err = openSegment(name, data); err != nil {
			return err
		}
		ref = store.Segment{Name: name, MinSeq: seg.minSeq, MaxSeq: seg.maxSeq, Docs: seg.n, Size: int64(len(data)), CRC: seg.crc}
	}

	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	cur := ix.cur.Load()
	// Locate src in the current snapshot (by segment identity).
	first := slices.IndexFunc(cur.segs, func(v segView) bool { return v.seg == src[0].seg })
	if first < 0 || first+len(src) > len(cur.segs) {
		return fmt.Errorf("index: merge sources vanished")
	}
	var nv segView
	if seg != nil {
		nv.seg = seg
		for k, old := range cur.segs[first : first+len(src)] {
			if old.seg != src[k].seg {
				return fmt.Errorf("index: merge sources changed")
			}
			if old.del == nil {
				continue
			}
			for i := 0; i < old.seg.n; i++ {
				if old.del.Has(uint32(i)) && !src[k].deleted(uint32(i)) {
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
	}
	m := ix.man
	m.Version++
	replaced := map[string]bool{}
	var maxSeq uint64
	for _, v := range src {
		replaced[v.seg.name] = true
		maxSeq = max(maxSeq, v.seg.maxSeq)
	}
	var refs []store.Segment
	inserted := false
	for _, r := range m.Segments {
		if replaced[r.Name] {
			if !inserted && seg != nil {
				refs = append(refs, ref)
			}
			inserted = true
			continue
		}
		refs = append(refs, r)
	}
	if !inserted && seg != nil {
		refs = append(refs, ref)
	}
	m.Segments = refs
	if isFlush {
		m.FlushedSeq = max(m.FlushedSeq, maxSeq)
	}
	oldest := ix.oldestRetained()
	err = ix.st.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.PurgeDead(oldest); err != nil {
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
	ix.log.Debug("index: rewrote segments", "sources", len(src), "docs", b.len(), "flush", isFlush, "version", m.Version)
	return nil
}

// mergeViews builds one segment from the live documents of views, which
// are in ascending seq order.
func mergeViews(ctx context.Context, views []segView) (*segBuilder, error) {
	b := newSegBuilder()
	maps := make([][]uint32, len(views)) // old local → new local, noDoc if dropped
	for k, v := range views {
		m := make([]uint32, v.seg.n)
		for i := 0; i < v.seg.n; i++ {
			if v.deleted(uint32(i)) {
				m[i] = noDoc
				continue
			}
			m[i] = uint32(len(b.seqs))
			b.seqs = append(b.seqs, v.seg.seq(uint32(i)))
			b.ids = append(b.ids, v.seg.id(uint32(i)))
			for f := 0; f < numFields; f++ {
				b.lens = append(b.lens, v.seg.fieldLen(uint32(i), f))
			}
		}
		maps[k] = m
	}
	for k, v := range views {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, m := v.seg, maps[k]
		for t := 0; t < s.nTerms; t++ {
			ti := s.termInfo(t)
			it := newPostIter(s.postingsBytes(ti), int(ti.df), s.n)
			var p *postAcc
			for ; it.doc != noDoc; it.next() {
				nd := m[it.doc]
				if nd == noDoc {
					continue
				}
				if p == nil {
					term := s.term(t)
					if p = b.terms[term]; p == nil {
						p = &postAcc{}
						b.terms[term] = p
					}
				}
				p.docs = append(p.docs, nd)
				p.tfs = append(p.tfs, it.tf[:]...)
			}
			if it.err != nil {
				return nil, fmt.Errorf("%w %s: term %d", ErrCorruptSegment, s.name, t)
			}
		}
		for i := 0; i < s.nKw; i++ {
			key := s.kwKey(i)
			cnt, off, n := s.kwInfo(i)
			ok := decodeDocList(s.sec[secKwPost][off:off+uint64(n)], int(cnt), s.n, func(d uint32) {
				if nd := m[d]; nd != noDoc {
					b.kw[key] = append(b.kw[key], nd)
				}
			})
			if !ok {
				return nil, fmt.Errorf("%w %s: keyword %d", ErrCorruptSegment, s.name, i)
			}
		}
		for field, c := range s.nums {
			for i, d := range c.docs {
				if nd := m[d]; nd != noDoc {
					nc := b.nums[field]
					if nc == nil {
						nc = &numCol{}
						b.nums[field] = nc
					}
					nc.docs = append(nc.docs, nd)
					nc.vals = append(nc.vals, c.vals[i])
				}
			}
		}
	}
	return b, nil
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
