package index

import (
	"bytes"
	"context"
	"fmt"
	"github.com/rcpgo/rcpgo/engine/query"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/engine/search"
)

// BM25 parameterises BM25F scoring over the title and body fields:
//
//	tfn   = Σ_f w_f·tf_f / (1 − b_f + b_f·len_f/avglen_f)
//	score = Σ_terms qtf · idf · tfn·(k1+1) / (k1 + tfn)
//	idf   = ln(1 + (N − df + 0.5)/(df + 0.5))
type BM25 struct {
	K1    float64
	Title FieldParams
	Body  FieldParams
}

// FieldParams weight one field and set its length normalisation.
type FieldParams struct {
	Weight float64 // 0 disables matching in the field
	B      float64
}

// DefaultBM25 returns the defaults: the classic k1=1.2, b=0.75 with titles
// counted twice. Chosen from a sweep on Cranfield and SciFact (see
// TestTuneBEIR) for being good on both without sitting at a grid corner;
// title weight 2 adds ~+0.006 nDCG@10 on Cranfield and ~+0.004 on SciFact
// over weight 1.
func DefaultBM25() BM25 {
	return BM25{K1: 1.2, Title: FieldParams{Weight: 2, B: 0.75}, Body: FieldParams{Weight: 1, B: 0.75}}
}

type qterm struct {
	term string
	qtf  int
	df   int     // document frequency over the snapshot's segments
	w    float64 // qtf·idf·(k1+1)
}

// Search runs q against the current snapshot or the pinned q.Version.
// Hits are ordered by descending score, ties by ascending id.
func (ix *Index) Search(ctx context.Context, q search.Query) (*search.Result, error) {
	return ix.searchBM25(ctx, q, ix.opts.BM25)
}

// searchBM25 is Search scoring with p (experiments: TestTuneBEIR).
func (ix *Index) searchBM25(ctx context.Context, q search.Query, p BM25) (*search.Result, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	if err := ix.awaitSummed(ctx); err != nil {
		return nil, err
	}
	snap, err := ix.snapshotFor(q.Version)
	if err != nil {
		return nil, err
	}
	var qf Filter
	if q.Filter != nil {
		if qf, _ = q.Filter.(Filter); qf == nil {
			return nil, fmt.Errorf("index: filter %T was not compiled by an index", q.Filter)
		}
	}
	k := q.K
	if k <= 0 {
		k = 10
	}
	res := &search.Result{Version: snap.str}
	qts, err := ix.queryTerms(ctx, q)
	if err != nil {
		return nil, err
	}
	res.Terms = make([]string, len(qts))
	for i, qt := range qts {
		res.Terms[i] = qt.term
	}
	browse := q.Text == "" && qf != nil
	phrases := query.Phrases(ix.an, q.Text)
	if len(qts) == 0 && !browse || snap.total == 0 {
		return res, nil
	}
	st := getSearchState(len(qts), len(snap.segs))
	defer putSearchState(st)
	r := segmentSearch{ix: ix, snap: snap, qts: qts, filter: qf, phrases: phrases, browse: browse, sc: newScorer(p, snap), st: st}
	r.lookupTerms(p)
	r.st.rd.st = ix.st
	defer r.st.rd.close()
	top := &topK{k: k, h: st.cands[:0:min(k, len(st.cands))]}
	order := make([]int, len(snap.segs))
	for i := range order {
		order[i] = i
	}
	// Big segments first: they raise the threshold fastest.
	slices.SortStableFunc(order, func(a, b int) int { return snap.segs[b].seg.n - snap.segs[a].seg.n })
	for _, s := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		scored, err := r.segment(ctx, s, top)
		if err != nil {
			return nil, err
		}
		res.Scored += scored
	}
	if res.Hits, err = r.hits(q, top.sorted()); err != nil {
		return nil, err
	}
	return res, nil
}

// segmentSearch is one Search on its way through the snapshot's segments.
type segmentSearch struct {
	ix      *Index
	snap    *snapshot
	qts     []qterm
	filter  Filter // nil: none
	phrases []query.Phrase
	browse  bool // no terms, a filter: its matches in id order
	sc      scorer
	st      *searchState
}

// lookupTerms looks the query terms up in every segment's dictionary
// (st.infos[s*nq+i]: term i in segment s) and sets their global document
// frequencies and weights.
func (r *segmentSearch) lookupTerms(p BM25) {
	nq, qts := len(r.qts), r.qts
	for s, v := range r.snap.segs {
		for i, qt := range qts {
			if ti, ok := v.seg.lookup(qt.term); ok {
				r.st.infos[s*nq+i], r.st.found[s*nq+i] = ti, true
				qts[i].df += int(ti.df)
			}
		}
	}
	N := float64(r.snap.total)
	for i := range qts {
		df := float64(qts[i].df)
		idf := math.Log(1 + (N-df+0.5)/(df+0.5))
		qts[i].w = float64(qts[i].qtf) * idf * (p.K1 + 1)
	}
}

// segment offers segment s's best documents to top and returns how many
// it scored.
func (r *segmentSearch) segment(ctx context.Context, s int, top *topK) (int, error) {
	v, st, nq := r.snap.segs[s], r.st, len(r.qts)
	if r.browse {
		filt, err := r.compileFilter(ctx, v)
		if err != nil {
			return 0, err
		}
		scored := 0
		for _, d := range filt.Members() {
			if !v.deleted(d) {
				top.offer(0, v.seg, d)
				scored++
			}
		}
		return scored, nil
	}
	// The iterators and scorers of one segment, reused for the next.
	ts := st.ts[:0]
	for i := range r.qts {
		if !st.found[s*nq+i] {
			continue
		}
		ti := st.infos[s*nq+i]
		it := &st.iters[len(ts)]
		it.reset(v.seg.postingsBytes(ti), int(ti.df), v.seg.n, v.seg.format)
		if it.err != nil {
			return 0, fmt.Errorf("%w %s: term %q", ErrCorruptSegment, v.seg.name, r.qts[i].term)
		}
		t := &st.scorers[len(ts)]
		*t = termScorer{it: it, idx: i, w: r.qts[i].w, ub: r.sc.bound(r.qts[i].w, ti.maxTf, ti.minLen)}
		ts = append(ts, t)
	}
	st.ts = ts
	if len(ts) == 0 {
		return 0, nil
	}
	var accept func(uint32) (bool, error)
	if len(r.phrases) > 0 {
		var none bool
		accept, none = phraseFilter(ctx, r.ix.an, v.seg, r.phrases, st.rd.full)
		if none {
			return 0, nil
		}
	}
	var filt *Bitset
	if r.filter != nil {
		var err error
		if filt, err = r.compileFilter(ctx, v); err != nil {
			return 0, err
		}
	}
	return r.sc.run(ctx, v, filt, accept, ts, nq, top, st.floats)
}

// compileFilter compiles the query's filter for segment v.
func (r *segmentSearch) compileFilter(ctx context.Context, v segView) (*Bitset, error) {
	fr := &segFields{ctx: ctx, seg: v.seg, fields: r.ix.opts.Fields, load: r.st.rd.meta}
	filt, err := r.filter.Compile(fr)
	if err == nil {
		err = fr.err
	}
	if err != nil {
		return nil, fmt.Errorf("index: filter: %w", err)
	}
	return filt, nil
}

// hits turns the best candidates into hits, reading their documents when q
// asks for them.
func (r *segmentSearch) hits(q search.Query, cands []cand) ([]search.Hit, error) {
	out := make([]search.Hit, len(cands))
	var qset map[string]bool
	if q.Highlight {
		qset = make(map[string]bool, len(r.qts))
		for _, qt := range r.qts {
			qset[qt.term] = true
		}
	}
	for i, c := range cands {
		h := search.Hit{ID: string(c.id), DocNum: search.DocNum(c.seg.seq(c.local)), Score: c.score}
		if !q.SkipDocs || q.Highlight {
			d, facts, err := r.st.rd.record(uint64(h.DocNum), q.Highlight || !q.NoText)
			if err != nil {
				return nil, fmt.Errorf("index: load hit: %w", err)
			}
			if d == nil {
				return nil, fmt.Errorf("%w: %s (documents purged)", search.ErrSnapshotGone, r.snap.str)
			}
			if q.Highlight {
				h.Matches = r.ix.highlight(d, qset)
			}
			if !q.SkipDocs {
				h.Doc, h.Facts = d, facts
				if q.NoText {
					d.Text = ""
				}
			}
		}
		out[i] = h
	}
	return out, nil
}

// searchState is the working memory of one Search, pooled: a query of up
// to smallQuery terms on up to smallSegs segments finds it all here, and a
// bigger one gets slices of its own.
type searchState struct {
	rd      recordReader
	cands   [16]cand // the top k heap, while k ≤ 16
	iters   []postIter
	scorers []termScorer
	ts      []*termScorer
	floats  []float64 // scorer.run's scratch
	infos   []termInfo
	found   []bool

	itersBuf   [smallQuery]postIter
	scorersBuf [smallQuery]termScorer
	tsBuf      [smallQuery]*termScorer
	floatsBuf  [2 * smallQuery]float64
	infosBuf   [smallQuery * smallSegs]termInfo
	foundBuf   [smallQuery * smallSegs]bool
}

const (
	smallQuery = 8
	smallSegs  = 4
)

var searchStates = sync.Pool{New: func() any { return new(searchState) }}

// getSearchState returns a cleared searchState for nq terms over segs
// segments.
func getSearchState(nq, segs int) *searchState {
	st := searchStates.Get().(*searchState)
	if nq <= smallQuery {
		st.iters, st.scorers, st.ts, st.floats = st.itersBuf[:nq], st.scorersBuf[:nq], st.tsBuf[:0], st.floatsBuf[:2*nq]
	} else {
		st.iters, st.scorers = make([]postIter, nq), make([]termScorer, nq)
		st.ts, st.floats = make([]*termScorer, 0, nq), make([]float64, 2*nq)
	}
	if n := nq * segs; nq <= smallQuery && segs <= smallSegs {
		st.infos, st.found = st.infosBuf[:n], st.foundBuf[:n]
		clear(st.infos)
		clear(st.found)
	} else {
		st.infos, st.found = make([]termInfo, n), make([]bool, n)
	}
	return st
}

// putSearchState returns st to the pool, dropping what points into
// segments and stored records so that the pool holds on to none of them.
func putSearchState(st *searchState) {
	n := min(len(st.iters), smallQuery)
	clear(st.itersBuf[:n])
	clear(st.scorersBuf[:n])
	clear(st.tsBuf[:n])
	clear(st.cands[:])
	st.rd = recordReader{}
	st.iters, st.scorers, st.ts, st.floats, st.infos, st.found = nil, nil, nil, nil, nil, nil
	searchStates.Put(st)
}

// recordReader reads stored records for one search, in one read
// transaction begun on first use.
type recordReader struct {
	st  *store.Store
	rtx *store.ReadTx
}

func (r *recordReader) record(seq uint64, withText bool) (*search.Document, search.Facts, error) {
	if r.rtx == nil {
		var err error
		if r.rtx, err = r.st.BeginRead(); err != nil {
			return nil, search.Facts{}, err
		}
	}
	return r.rtx.Record(seq, withText)
}

// meta reads a document's metadata (for filters), full its text too (for
// phrase checks).
func (r *recordReader) meta(seq uint64) (*search.Document, error) {
	d, _, err := r.record(seq, false)
	return d, err
}

func (r *recordReader) full(seq uint64) (*search.Document, error) {
	d, _, err := r.record(seq, true)
	return d, err
}

func (r *recordReader) close() {
	if r.rtx != nil {
		r.rtx.Close()
	}
}

// maxWordMemo bounds the WordMax memo of one snapshot.
const maxWordMemo = 4096

// WordMax returns the best score any document reaches for the query word
// alone at the snapshot version ("" = current), 0 when nothing matches:
// the top-1 score of Search{Text: word}. Results are memoised per
// snapshot (at most maxWordMemo words each).
func (ix *Index) WordMax(ctx context.Context, version, word string) (float64, error) {
	snap, err := ix.snapshotFor(version)
	if err != nil {
		return 0, err
	}
	if v, ok := snap.wordMax.Load(word); ok {
		return v.(float64), nil
	}
	res, err := ix.Search(ctx, search.Query{Text: word, K: 1, Version: snap.str, SkipDocs: true})
	if err != nil {
		return 0, err
	}
	best := 0.0
	if len(res.Hits) > 0 {
		best = res.Hits[0].Score
	}
	if snap.nMemo.Add(1) <= maxWordMemo {
		snap.wordMax.Store(word, best)
	}
	return best, nil
}

// Load reads the stored documents numbered nums (from the Hits of a
// Search with SkipDocs) and their facts, in one read transaction; withText
// false leaves the texts unread (a document served from the cache may
// carry its text anyway). A document purged since the Search (its
// snapshot is no longer retained) fails with ErrSnapshotGone. Documents
// come from a bounded cache of decoded records when they are in it
// (Options.DocCacheBytes) and are shared: callers must not modify them.
func (ix *Index) Load(ctx context.Context, nums []search.DocNum, withText bool) ([]*search.Document, []search.Facts, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	docs := make([]*search.Document, len(nums))
	facts := make([]search.Facts, len(nums))
	missing := false
	for i, n := range nums {
		var ok bool
		if docs[i], facts[i], ok = ix.docs.get(n, withText); !ok {
			missing = true
		}
	}
	if !missing {
		return docs, facts, nil
	}
	err := ix.st.View(func(tx *store.ReadTx) error {
		for i, n := range nums {
			if docs[i] != nil {
				continue
			}
			d, f, err := tx.Record(uint64(n), withText)
			if err != nil {
				return err
			}
			if d == nil {
				return fmt.Errorf("%w: document %d was purged", search.ErrSnapshotGone, n)
			}
			docs[i], facts[i] = d, f
			ix.docs.put(n, d, f, withText)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("index: load: %w", err)
	}
	return docs, facts, nil
}

// queryTerms analyses q.Text (its query.RankText) into distinct terms in first-occurrence order
// with their query term frequencies: one map lookup per token (linear in
// the query), the text analysed in pieces with a cancellation check
// between them, and q.MaxTerms enforced as soon as it is exceeded.
//
// A short query (at most shortQueryTerms distinct terms) is deduplicated
// by scanning its terms, its tokens in a buffer on the stack: no map and
// no allocation but the result.
func (ix *Index) queryTerms(ctx context.Context, q search.Query) ([]qterm, error) {
	var qts []qterm
	var pos map[string]int // once the query has more than shortQueryTerms terms
	var buf [shortQueryTerms]analysis.Token
	for rest := query.RankText(q.Text); rest != ""; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var piece string
		piece, rest = cutPiece(rest, 8<<10)
		for _, t := range ix.an.AppendTokens(buf[:0], piece) {
			if i, ok := termIndex(qts, pos, t.Term); ok {
				qts[i].qtf++
				continue
			}
			if q.MaxTerms > 0 && len(qts) == q.MaxTerms {
				return nil, fmt.Errorf("%w: more than %d", search.ErrTooManyTerms, q.MaxTerms)
			}
			if pos == nil && len(qts) == shortQueryTerms {
				pos = make(map[string]int, 2*shortQueryTerms)
				for i, qt := range qts {
					pos[qt.term] = i
				}
			}
			if pos != nil {
				pos[t.Term] = len(qts)
			}
			if qts == nil {
				qts = make([]qterm, 0, 8)
			}
			qts = append(qts, qterm{term: t.Term, qtf: 1})
		}
	}
	return qts, nil
}

// shortQueryTerms is the size of a query queryTerms dedupes by scanning.
const shortQueryTerms = 16

// termIndex finds term among qts: by scanning them while pos is nil, else
// in pos.
func termIndex(qts []qterm, pos map[string]int, term string) (int, bool) {
	if pos != nil {
		i, ok := pos[term]
		return i, ok
	}
	for i := range qts {
		if qts[i].term == term {
			return i, true
		}
	}
	return 0, false
}

// cutPiece splits about n bytes off the front of s, after a space or
// newline when there is one (tokens never span them), else at a rune
// boundary.
func cutPiece(s string, n int) (piece, rest string) {
	if len(s) <= n {
		return s, ""
	}
	if i := strings.LastIndexAny(s[:n], " \n\t"); i > 0 {
		return s[:i+1], s[i+1:]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n == 0 {
		_, n = utf8.DecodeRuneInString(s)
	}
	return s[:n], s[n:]
}

func (ix *Index) highlight(d *search.Document, qset map[string]bool) []search.Match {
	var out []search.Match
	for _, f := range [...]struct{ name, text string }{{"title", d.Title}, {"text", d.Text}} {
		for _, t := range ix.an.Analyze(f.text) {
			if qset[t.Term] {
				out = append(out, search.Match{Field: f.name, Term: t.Term, Position: t.Position, Start: t.Start, End: t.End})
			}
		}
	}
	return out
}

// noPruning disables dynamic pruning (for benchmarks).
var noPruning = false

type termScorer struct {
	it  *postIter
	idx int     // query term index
	w   float64 // qtf·idf·(k1+1)
	ub  float64 // score bound within the segment
}

// scorer holds the per-snapshot BM25F constants.
type scorer struct {
	k1     float64
	weight [numFields]float64
	c0, c1 [numFields]float64 // norm = c0 + c1·len
}

func newScorer(p BM25, snap *snapshot) scorer {
	s := scorer{k1: p.K1}
	for f, fp := range [numFields]FieldParams{fieldTitle: p.Title, fieldBody: p.Body} {
		s.weight[f] = fp.Weight
		s.c0[f] = 1 - fp.B
		if snap.sumLen[f] > 0 {
			s.c1[f] = fp.B * float64(snap.total) / float64(snap.sumLen[f])
		}
	}
	return s
}

func (s *scorer) score(w float64, tf [numFields]uint32, seg *segment, doc uint32) float64 {
	tfn := 0.0
	for f := 0; f < numFields; f++ {
		if tf[f] > 0 && s.weight[f] > 0 {
			tfn += s.weight[f] * float64(tf[f]) / (s.c0[f] + s.c1[f]*float64(seg.fieldLen(doc, f)))
		}
	}
	return w * tfn / (s.k1 + tfn)
}

// bound is the largest score a posting with at most maxTf and at least
// minLen per field can get.
func (s *scorer) bound(w float64, maxTf, minLen [numFields]uint32) float64 {
	tfn := 0.0
	for f := 0; f < numFields; f++ {
		if maxTf[f] > 0 && s.weight[f] > 0 {
			tfn += s.weight[f] * float64(maxTf[f]) / (s.c0[f] + s.c1[f]*float64(minLen[f]))
		}
	}
	return w * tfn / (s.k1 + tfn)
}

// run scores one segment into top with MaxScore dynamic pruning: terms
// sorted by score bound; those whose bounds together cannot reach the
// current threshold are "non-essential" and only probed (after a block-max
// check) for documents found through the essential ones.
//
// accept (nil: all) is the phrase test, asked only for documents that
// would enter the top k. scratch (at least len(ts)+nq floats) is the
// working memory of the run.
func (s *scorer) run(ctx context.Context, v segView, filt *Bitset, accept func(uint32) (bool, error), ts []*termScorer, nq int, top *topK, scratch []float64) (scored int, err error) {
	n := len(ts)
	prefix, contrib := byBound(ts, scratch, nq)
	seg := v.seg
	// Bounds are compared against the threshold less a relative margin, so
	// float rounding in partial sums never prunes a document that ties.
	var cut float64
	setCut := func() {
		theta := top.threshold()
		cut = theta - 1e-9*math.Max(1, math.Abs(theta))
		if noPruning { // benchmarks: the exhaustive baseline
			cut = math.Inf(-1)
		}
	}
	setCut()
	below := func(x float64) bool { return x < cut }
	fe := 0
	for fe < n && below(prefix[fe]) {
		fe++
	}
	windowEnd, windowOK := uint32(0), false
	for iter := 1; fe < n; iter++ {
		if iter&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return scored, err
			}
		}
		doc := uint32(noDoc)
		for i := fe; i < n; i++ {
			doc = min(doc, ts[i].it.doc)
		}
		if doc == noDoc {
			break
		}
		// Block-max window: every list has one block overlapping
		// [doc, upTo]; if their block bounds together cannot reach the
		// threshold, no document in the window can, so skip it whole.
		if !windowOK || doc > windowEnd {
			upTo, sum := s.window(ts, doc)
			if below(sum * (1 + 1e-12)) {
				for i := fe; i < n; i++ {
					ts[i].it.advance(upTo + 1)
				}
				windowOK = false
				continue
			}
			windowEnd, windowOK = upTo, true
		}
		if v.deleted(doc) || filt != nil && !filt.Has(doc) {
			for i := fe; i < n; i++ {
				if ts[i].it.doc == doc {
					ts[i].it.next()
				}
			}
			continue
		}
		partial := 0.0
		for i := fe; i < n; i++ {
			it := ts[i].it
			if it.doc == doc {
				c := s.score(ts[i].w, it.tf, seg, doc)
				contrib[ts[i].idx] = c
				partial += c
				it.next()
				seg.prefetchLens(it.doc)
			}
		}
		pruned := false
		for i := fe - 1; i >= 0; i-- {
			rest := 0.0
			if i > 0 {
				rest = prefix[i-1]
			}
			if below(partial + prefix[i]) {
				pruned = true
				break
			}
			it := ts[i].it
			if it.doc < doc {
				b := it.shallow(doc)
				if b < 0 {
					it.advance(doc)
					continue
				}
				e := &it.skips[b]
				if below(partial + s.bound(ts[i].w, e.maxTf, e.minLen)*(1+1e-12) + rest) {
					pruned = true
					break
				}
				it.advance(doc)
			}
			if it.doc == doc {
				c := s.score(ts[i].w, it.tf, seg, doc)
				contrib[ts[i].idx] = c
				partial += c
			}
		}
		if !pruned {
			scored++
			entered, err := offer(seg, doc, contrib, accept, top)
			if err != nil {
				return scored, err
			}
			if entered {
				setCut()
				for fe < n && below(prefix[fe]) {
					fe++
				}
			}
		}
		clear(contrib)
	}
	for _, t := range ts {
		if t.it.err != nil {
			return scored, fmt.Errorf("%w %s: %v", ErrCorruptSegment, seg.name, t.it.err)
		}
	}
	return scored, nil
}

// byBound sorts ts by score bound (ties by query order) and returns, in
// scratch, each one's prefix sum of bounds (slightly inflated, so rounding
// never prunes a tie) and the per-query-term contributions, cleared.
func byBound(ts []*termScorer, scratch []float64, nq int) (prefix, contrib []float64) {
	slices.SortStableFunc(ts, func(a, b *termScorer) int {
		switch {
		case a.ub < b.ub:
			return -1
		case a.ub > b.ub:
			return 1
		}
		return a.idx - b.idx
	})
	n := len(ts)
	prefix, contrib = scratch[:n:n], scratch[n:n+nq]
	clear(contrib)
	acc := 0.0
	for i, t := range ts {
		acc += t.ub
		prefix[i] = acc * (1 + 1e-12)
	}
	return prefix, contrib
}

// window is the block-max window at doc: every list has one block
// overlapping [doc, upTo], and sum bounds the score of any document in
// it.
func (s *scorer) window(ts []*termScorer, doc uint32) (upTo uint32, sum float64) {
	upTo = noDoc - 1
	for _, t := range ts {
		b := t.it.shallow(doc)
		if b < 0 {
			continue
		}
		e := &t.it.skips[b]
		upTo = min(upTo, e.last)
		sum += s.bound(t.w, e.maxTf, e.minLen)
	}
	return upTo, sum
}

// offer offers a fully scored document (its terms' contributions in query
// order) to top, after the phrase test (accept, nil: none) when it would
// enter; entered reports that it did.
func offer(seg *segment, doc uint32, contrib []float64, accept func(uint32) (bool, error), top *topK) (entered bool, err error) {
	score := 0.0
	for _, c := range contrib { // canonical order: query term order
		score += c
	}
	ok := score > 0 // a match only in zero-weight fields is no match
	if ok && accept != nil && top.admits(score) {
		if ok, err = accept(doc); err != nil {
			return false, fmt.Errorf("%w (segment %s)", err, seg.name)
		}
	}
	return ok && top.offer(score, seg, doc), nil
}

type cand struct {
	score float64
	id    []byte // in the segment's mapping: valid while the search runs
	seg   *segment
	local uint32
}

// worse orders candidates: lower score, then larger id, is worse.
func worse(a, b *cand) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return bytes.Compare(a.id, b.id) > 0
}

// topK is a bounded min-heap of the best candidates (root = worst).
type topK struct {
	k int
	h []cand
}

func (t *topK) threshold() float64 {
	if len(t.h) < t.k {
		return math.Inf(-1)
	}
	return t.h[0].score
}

// admits reports whether a candidate with score might enter (ties are
// decided by id in offer).
func (t *topK) admits(score float64) bool {
	return len(t.h) < t.k || score >= t.h[0].score
}

// offer adds a candidate if it beats the current worst; it reports whether
// the heap changed.
func (t *topK) offer(score float64, seg *segment, doc uint32) bool {
	if len(t.h) < t.k {
		t.h = append(t.h, cand{score: score, id: seg.idBytes(doc), seg: seg, local: doc})
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(&t.h[i], &t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return true
	}
	if score < t.h[0].score {
		return false
	}
	c := cand{score: score, seg: seg, local: doc}
	c.id = seg.idBytes(doc)
	if !worse(&t.h[0], &c) {
		return false
	}
	t.h[0] = c
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && worse(&t.h[l], &t.h[m]) {
			m = l
		}
		if r < len(t.h) && worse(&t.h[r], &t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
	return true
}

// sorted returns the candidates best first, sorted in place: the heap is
// done with.
func (t *topK) sorted() []cand {
	out := t.h
	t.h = nil
	slices.SortFunc(out, func(a, b cand) int {
		if worse(&a, &b) {
			return 1
		}
		if worse(&b, &a) {
			return -1
		}
		return 0
	})
	return out
}
