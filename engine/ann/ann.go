// Package ann is the engine's dense vector index: an HNSW graph
// (Malkov & Yashunin 2018) over float32 vectors with cosine or dot-product
// similarity, incremental adds and deletes, exact search below a size
// threshold, filtered search evaluated inside the graph walk (with an exact
// scan over the filtered set when the filter is selective), and a versioned,
// checksummed, atomically written file format. Once Quantize has run,
// searches walk the graph scoring an int8 copy of the vectors (a quarter of
// the memory traffic) and re-score their candidates exactly. It also has
// the MMR and MaxSim helpers used by retrieval and reranking.
//
// Scores are similarities: higher is better. With Cosine, vectors are
// normalised on insert and queries on search, so the score is the cosine.
package ann

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/viterin/vek/vek32"

	"github.com/rcpgo/rcpgo/internal/prefetch"
)

// Metric is the similarity function.
type Metric uint8

const (
	// Cosine similarity: vectors are L2-normalised, score = dot product.
	Cosine Metric = 1
	// Dot is the raw inner product.
	Dot Metric = 2
)

func (m Metric) String() string {
	switch m {
	case Cosine:
		return "cosine"
	case Dot:
		return "dot"
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// Config configures an Index. Zero values take the defaults noted.
type Config struct {
	Dim    int    // vector dimension (required)
	Metric Metric // default Cosine
	// M is the number of links per node on the upper layers; layer 0 has 2M
	// (default 16).
	M int
	// EfConstruction is the candidate list size while inserting (default 200).
	EfConstruction int
	// EfSearch is the default candidate list size for Search (default 96);
	// it is raised to k when smaller.
	EfSearch int
	// ExactThreshold: with at most this many live vectors Search scans
	// exactly (default 2048).
	ExactThreshold int
	// FilterExactBelow: when a filter's estimated pass rate is below this
	// fraction, Search scans the filtered set exactly instead of walking the
	// graph (default 0.03).
	FilterExactBelow float64
	// Seed drives level assignment (default 1).
	Seed uint64
	// Workers bounds AddBatch parallelism (default GOMAXPROCS). With 1
	// worker the graph is fully deterministic.
	Workers int
	// Identity is the embedding identity of the stored vectors (see
	// embed.Provider.Identity). It is persisted, so a loaded index can be
	// checked against the provider before new vectors are mixed in.
	Identity string
}

func (c *Config) defaults() error {
	if len(c.Identity) > maxIdentity {
		return fmt.Errorf("ann: identity of %d bytes", len(c.Identity))
	}
	if c.Dim <= 0 || c.Dim > maxDim {
		return fmt.Errorf("ann: dimension %d out of range", c.Dim)
	}
	if c.Metric == 0 {
		c.Metric = Cosine
	}
	if c.Metric != Cosine && c.Metric != Dot {
		return fmt.Errorf("ann: unknown metric %d", c.Metric)
	}
	if c.M <= 0 {
		c.M = 16
	}
	if c.M < 2 || c.M > 256 {
		return fmt.Errorf("ann: M %d out of range [2,256]", c.M)
	}
	if c.EfConstruction <= 0 {
		c.EfConstruction = 200
	}
	if c.EfSearch <= 0 {
		c.EfSearch = 96
	}
	if c.ExactThreshold < 0 {
		c.ExactThreshold = 0
	} else if c.ExactThreshold == 0 {
		c.ExactThreshold = 2048
	}
	if c.FilterExactBelow <= 0 {
		c.FilterExactBelow = 0.03
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return nil
}

// Result is one search hit.
type Result struct {
	ID    uint64
	Score float32
}

// SearchOptions tune one search.
type SearchOptions struct {
	// Ef overrides Config.EfSearch.
	Ef int
	// Filter, when set, admits only ids for which it returns true. It is
	// evaluated inside the graph walk, so Search still returns k hits when k
	// admitted vectors exist. It must be safe for concurrent use.
	Filter func(id uint64) bool
	// Exact forces an exhaustive scan.
	Exact bool
}

// Errors.
var (
	ErrDimension = errors.New("ann: vector has the wrong dimension")
	ErrNotFinite = errors.New("ann: vector has a NaN or infinite component")
)

const (
	maxDim      = 1 << 16
	maxIdentity = 1 << 12
	maxLevel    = 32
	nStripes    = 1024
)

// Index is an HNSW index. Searches may run concurrently with each other;
// Add, AddBatch, Delete and Compact are serialised against searches.
type Index struct {
	mu  sync.RWMutex
	cfg Config

	// base, when set, holds the layer-0 links and vectors of the slots
	// below base.n in a mapped checkpoint (mapped.go); vecs and layer0
	// hold those of the slots from base.n on.
	base     *mapped
	outdated bool      // read from a version-1 file
	vecs     []float32 // slot-major
	ids      []uint64  // slot → id
	levels   []uint8   // slot → top layer
	// layer0 holds every slot's layer-0 links inline for locality:
	// stride0 = 2M+1 int32s per slot, a count then up to 2M slots.
	layer0  []int32
	stride0 int
	upper   [][][]int32 // slot → layers 1..level (index l-1) → neighbours
	deleted []bool
	slotOf  map[uint64]int32 // built by slots() on first use after a version-2 Load
	// slotOnce builds slotOf from ids for an index read from a version-2
	// file: opening a million-vector checkpoint does not wait for a
	// million-entry map that searches never use.
	slotOnce sync.Once
	live     int
	// q is the int8 copy of the vectors the search walk scores (quant.go;
	// built by Quantize); nil: the walk scores the float32 vectors.
	q           *quantized
	quantize    bool // Quantize was called: q is built once searches walk the graph
	compactions int  // Compact calls so far (Quantize notices one it raced)

	entry    int32 // -1 when empty
	topLevel int
	levelMul float64
	rng      *rand.Rand

	// Used only during parallel inserts.
	concurrent bool
	epMu       sync.Mutex
	stripes    [nStripes]sync.Mutex

	visitedPool sync.Pool
}

// New returns an empty index.
func New(cfg Config) (*Index, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ix := &Index{cfg: cfg, slotOf: map[uint64]int32{}, entry: -1,
		levelMul: 1 / math.Log(float64(cfg.M)), stride0: 2*cfg.M + 1}
	ix.rng = rand.New(rand.NewPCG(cfg.Seed, 0x2545f4914f6cdd1d))
	ix.visitedPool.New = func() any { return &visited{} }
	return ix, nil
}

// slots is the id → live slot map (see slotOnce).
func (ix *Index) slots() map[uint64]int32 {
	ix.slotOnce.Do(ix.indexIDs)
	return ix.slotOf
}

// indexIDs maps each live id to its slot unless that is done. An id live
// twice marks the stored index damaged.
func (ix *Index) indexIDs() {
	if ix.slotOf != nil {
		return
	}
	ix.slotOf = make(map[uint64]int32, ix.live)
	for s, id := range ix.ids {
		if ix.deleted[s] {
			continue
		}
		if _, dup := ix.slotOf[id]; dup && ix.base != nil {
			ix.base.fail(fmt.Errorf("id %d live twice", id))
		}
		ix.slotOf[id] = int32(s)
	}
}

// Config returns the index configuration (with defaults filled in).
func (ix *Index) Config() Config { return ix.cfg }

// Len is the number of live vectors.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Deleted is the number of tombstoned slots that Compact would reclaim.
func (ix *Index) Deleted() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.ids) - ix.live
}

// Contains reports whether id is live in the index.
func (ix *Index) Contains(id uint64) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.slots()[id]
	return ok
}

// Vector returns a copy of the stored vector of id (normalised under
// Cosine).
func (ix *Index) Vector(id uint64) ([]float32, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s, ok := ix.slots()[id]
	if !ok {
		return nil, false
	}
	v := slices.Clone(ix.vec(s))
	if ix.damaged() {
		return nil, false
	}
	return v, true
}

func (ix *Index) vec(s int32) []float32 {
	d := ix.cfg.Dim
	if b := ix.base; b != nil {
		if int(s) < b.n {
			return b.vec(int(s))
		}
		s -= int32(b.n)
	}
	return ix.vecs[int(s)*d : int(s)*d+d]
}

// row is the layer-0 link row of s: a count, then up to 2M slots.
func (ix *Index) row(s int32) []int32 {
	if b := ix.base; b != nil {
		if int(s) < b.n {
			return b.row(int(s))
		}
		s -= int32(b.n)
	}
	base := int(s) * ix.stride0
	return ix.layer0[base : base+ix.stride0]
}

// prefetchRow asks the cache for the layer-0 link row of s.
func (ix *Index) prefetchRow(s int32) {
	r := ix.row(s)
	prefetch.Lines(unsafe.Pointer(unsafe.SliceData(r)), (4*len(r)+63)/64)
}

func dot(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	return vek32.Dot(a, b)
}

func (ix *Index) prepare(v []float32) ([]float32, error) {
	if len(v) != ix.cfg.Dim {
		return nil, fmt.Errorf("%w: got %d, want %d", ErrDimension, len(v), ix.cfg.Dim)
	}
	out := slices.Clone(v)
	var n float64
	for _, x := range out {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, ErrNotFinite
		}
		n += float64(x) * float64(x)
	}
	if ix.cfg.Metric == Cosine && n > 0 {
		inv := float32(1 / math.Sqrt(n))
		for i := range out {
			out[i] *= inv
		}
	}
	return out, nil
}

// Add inserts or replaces the vector of id.
func (ix *Index) Add(id uint64, v []float32) error {
	return ix.AddBatch([]uint64{id}, [][]float32{v})
}

// AddBatch inserts or replaces many vectors, using up to Config.Workers
// goroutines. Either all vectors are validated and inserted, or none.
func (ix *Index) AddBatch(ids []uint64, vs [][]float32) error {
	if len(ids) != len(vs) {
		return fmt.Errorf("ann: %d ids for %d vectors", len(ids), len(vs))
	}
	prepared := make([][]float32, len(vs))
	for i, v := range vs {
		p, err := ix.prepare(v)
		if err != nil {
			return fmt.Errorf("ann: id %d: %w", ids[i], err)
		}
		prepared[i] = p
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// Inserting rewrites mapped links in place (copy on write): every
	// mapped block is verified first, so none is changed unverified.
	if err := ix.verifyBase(); err != nil {
		return err
	}
	// Resolve duplicates within the batch: the last one wins.
	last := make(map[uint64]int, len(ids))
	for i, id := range ids {
		last[id] = i
	}
	slots := make([]int32, 0, len(last))
	for i, id := range ids {
		if last[id] != i {
			continue
		}
		if old, ok := ix.slots()[id]; ok {
			ix.deleted[old] = true
			ix.live--
		}
		s := int32(len(ix.ids))
		ix.ids = append(ix.ids, id)
		ix.vecs = append(ix.vecs, prepared[i]...)
		if ix.q != nil {
			ix.q.append(prepared[i])
		}
		lvl := min(int(-math.Log(1-ix.rng.Float64())*ix.levelMul), maxLevel-1)
		ix.levels = append(ix.levels, uint8(lvl))
		ix.addSlotLinks(lvl)
		ix.deleted = append(ix.deleted, false)
		ix.slotOf[id] = s
		ix.live++
		slots = append(slots, s)
	}
	ix.insertSlots(slots)
	ix.maybeQuantize()
	return nil
}

// insertSlots links already-stored slots into the graph.
func (ix *Index) insertSlots(slots []int32) {
	if len(slots) == 0 {
		return
	}
	i := 0
	if ix.entry < 0 {
		ix.entry = slots[0]
		ix.topLevel = int(ix.levels[slots[0]])
		i = 1
	}
	rest := slots[i:]
	workers := ix.cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Insert the first few serially so the graph has a backbone.
	serial := min(len(rest), 64)
	if workers == 1 || len(rest) < 256 {
		serial = len(rest)
	}
	vis := ix.getVisited()
	for _, s := range rest[:serial] {
		ix.insert(s, vis)
	}
	ix.visitedPool.Put(vis)
	rest = rest[serial:]
	if len(rest) == 0 {
		return
	}
	ix.concurrent = true
	defer func() { ix.concurrent = false }()
	var wg sync.WaitGroup
	var next int64
	var nextMu sync.Mutex
	const chunk = 32
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vis := &visited{}
			for {
				nextMu.Lock()
				lo := int(next)
				next += chunk
				nextMu.Unlock()
				if lo >= len(rest) {
					return
				}
				for _, s := range rest[lo:min(lo+chunk, len(rest))] {
					ix.insert(s, vis)
				}
			}
		}()
	}
	wg.Wait()
}

func (ix *Index) getVisited() *visited { return ix.visitedPool.Get().(*visited) }

// addSlotLinks appends empty link storage for a new slot of the given level.
func (ix *Index) addSlotLinks(lvl int) {
	ix.layer0 = append(ix.layer0, make([]int32, ix.stride0)...)
	ix.addUpperLinks(lvl)
}

// addUpperLinks appends empty storage for a new slot's layers 1..lvl.
func (ix *Index) addUpperLinks(lvl int) {
	var up [][]int32
	if lvl > 0 {
		up = make([][]int32, lvl)
	}
	ix.upper = append(ix.upper, up)
}

// getLinks returns the stored links of s at layer l (a view, not a copy).
func (ix *Index) getLinks(s int32, l int) []int32 {
	if l == 0 {
		r := ix.row(s)
		return r[1 : 1+r[0]]
	}
	return ix.upper[s][l-1]
}

// setLinks replaces the links of s at layer l (nb may alias the storage).
func (ix *Index) setLinks(s int32, l int, nb []int32) {
	if l == 0 {
		r := ix.row(s)
		r[0] = int32(copy(r[1:], nb))
		return
	}
	cur := ix.upper[s][l-1]
	if cap(cur) < len(nb) {
		cur = make([]int32, 0, ix.cfg.M+1)
	}
	ix.upper[s][l-1] = append(cur[:0], nb...)
}

// neighbours returns the links of s at layer l (a copy while inserting
// concurrently).
func (ix *Index) neighbours(s int32, l int, buf []int32) []int32 {
	if !ix.concurrent {
		return ix.getLinks(s, l)
	}
	mu := &ix.stripes[int(s)%nStripes]
	mu.Lock()
	buf = append(buf[:0], ix.getLinks(s, l)...)
	mu.Unlock()
	return buf
}

func (ix *Index) insert(s int32, vis *visited) {
	q := ix.vec(s)
	lvl := int(ix.levels[s])
	if ix.concurrent {
		ix.epMu.Lock()
	}
	ep, top := ix.entry, ix.topLevel
	if ix.concurrent {
		ix.epMu.Unlock()
	}
	score := ix.scoreFloat(q)
	epScore := score(ep)
	var buf []int32
	for l := top; l > lvl; l-- {
		ep, epScore = ix.greedy(score, nil, ep, epScore, l, &buf)
	}
	eps := []cand{{ep, epScore}}
	for l := min(lvl, top); l >= 0; l-- {
		w := ix.searchLayer(score, nil, eps, ix.cfg.EfConstruction, l, nil, vis, &buf)
		// While inserting concurrently, another node may already have
		// linked to s (having reached it through an upper layer), so s can
		// show up in its own candidate list.
		w = slices.DeleteFunc(w, func(c cand) bool { return c.slot == s })
		maxConn := ix.cfg.M
		if l == 0 {
			maxConn = 2 * ix.cfg.M
		}
		sel := ix.selectNeighbours(w, ix.cfg.M)
		nb := make([]int32, len(sel), maxConn+1)
		for i, c := range sel {
			nb[i] = c.slot
		}
		if ix.concurrent {
			mu := &ix.stripes[int(s)%nStripes]
			mu.Lock()
			// Keep links that concurrent inserts added to s meanwhile.
			for _, x := range ix.getLinks(s, l) {
				if !slices.Contains(nb, x) {
					nb = append(nb, x)
				}
			}
			if len(nb) > maxConn {
				cs := make([]cand, len(nb))
				for i, x := range nb {
					cs[i] = cand{x, dot(q, ix.vec(x))}
				}
				sortCands(cs)
				nb = nb[:0]
				for _, c := range ix.selectNeighbours(cs, maxConn) {
					nb = append(nb, c.slot)
				}
			}
			ix.setLinks(s, l, nb)
			mu.Unlock()
		} else {
			ix.setLinks(s, l, nb)
		}
		for _, c := range sel {
			ix.link(c.slot, s, c.score, l, maxConn)
		}
		eps = w
	}
	if lvl > top {
		if ix.concurrent {
			ix.epMu.Lock()
			if lvl > ix.topLevel {
				ix.entry, ix.topLevel = s, lvl
			}
			ix.epMu.Unlock()
		} else {
			ix.entry, ix.topLevel = s, lvl
		}
	}
}

// link adds s to n's layer-l links, pruning with the heuristic on overflow.
func (ix *Index) link(n, s int32, score float32, l, maxConn int) {
	var mu *sync.Mutex
	if ix.concurrent {
		mu = &ix.stripes[int(n)%nStripes]
		mu.Lock()
		defer mu.Unlock()
	}
	cur := ix.getLinks(n, l)
	if slices.Contains(cur, s) {
		return // a concurrent insert of s's neighbour already linked it
	}
	if len(cur) < maxConn {
		if l == 0 {
			r := ix.row(n)
			r[1+len(cur)] = s
			r[0]++
		} else {
			ix.upper[n][l-1] = append(cur, s)
		}
		return
	}
	nv := ix.vec(n)
	cs := make([]cand, 0, len(cur)+1)
	for _, x := range cur {
		cs = append(cs, cand{x, dot(nv, ix.vec(x))})
	}
	cs = append(cs, cand{s, score})
	sortCands(cs)
	sel := ix.selectNeighbours(cs, maxConn)
	out := make([]int32, len(sel))
	for i, c := range sel {
		out[i] = c.slot
	}
	ix.setLinks(n, l, out)
}

func sortCands(cs []cand) {
	slices.SortFunc(cs, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.slot, b.slot)
	})
}

// selectNeighbours is the HNSW heuristic (Algorithm 4): candidates sorted
// best first; keep e only if it is more similar to the base than to every
// neighbour already kept.
func (ix *Index) selectNeighbours(cs []cand, m int) []cand {
	if len(cs) <= m {
		return cs
	}
	out := make([]cand, 0, m)
	for _, c := range cs {
		ok := true
		cv := ix.vec(c.slot)
		for _, r := range out {
			if dot(cv, ix.vec(r.slot)) > c.score {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, c)
			if len(out) == m {
				break
			}
		}
	}
	return out
}

// scoreFloat scores slots against q with their float32 vectors.
func (ix *Index) scoreFloat(q []float32) func(int32) float32 {
	return func(s int32) float32 { return dot(q, ix.vec(s)) }
}

// scoreQuantized scores slots against q with their int8 codes: an
// approximation of scoreFloat up to a positive factor (quant.go).
func (ix *Index) scoreQuantized(q []float32) func(int32) float32 {
	qq := ix.q.query(q)
	return func(s int32) float32 { return float32(dot8(qq, ix.q.code(s))) }
}

func (ix *Index) greedy(score func(int32) float32, q *quantized, ep int32, epScore float32, l int, buf *[]int32) (int32, float32) {
	for changed := true; changed; {
		changed = false
		*buf = ix.neighbours(ep, l, *buf)
		if q != nil {
			q.warm(*buf, nil)
		}
		for _, n := range *buf {
			if s := score(n); s > epScore {
				ep, epScore, changed = n, s, true
			}
		}
		if !ix.concurrent {
			*buf = nil
		}
	}
	return ep, epScore
}

// searchLayer is Algorithm 2 with an admission predicate: every reached
// node is expanded, but only admitted nodes enter the result set, so the
// walk continues until ef admitted nodes are found or the frontier is
// exhausted. Results are returned best first.
func (ix *Index) searchLayer(score func(int32) float32, q *quantized, eps []cand, ef, l int, admit func(int32) bool, vis *visited, buf *[]int32) []cand {
	vis.reset(len(ix.ids))
	frontier := vis.frontier[:0] // the walk's scratch, kept with the visited set
	defer func() { vis.frontier = frontier[:0] }()
	results := make(minHeap, 0, ef+1)
	for _, e := range eps {
		if !vis.visit(e.slot) {
			continue
		}
		frontier.push(e)
		if admit == nil || admit(e.slot) {
			results.push(e)
			if len(results) > ef {
				results.pop()
			}
		}
	}
	for len(frontier) > 0 {
		c := frontier.pop()
		if len(results) >= ef && c.score < results[0].score {
			break
		}
		if l == 0 && len(frontier) > 0 {
			// The best of the rest is most often the next expanded: its
			// links arrive while c's neighbours are scored.
			ix.prefetchRow(frontier[0].slot)
		}
		nb := ix.neighbours(c.slot, l, *buf)
		if q != nil {
			q.warm(nb, vis)
		}
		for _, n := range nb {
			if !vis.visit(n) {
				continue
			}
			s := score(n)
			if len(results) < ef || s > results[0].score {
				frontier.push(cand{n, s})
				if admit == nil || admit(n) {
					results.push(cand{n, s})
					if len(results) > ef {
						results.pop()
					}
				}
			}
		}
		if ix.concurrent {
			*buf = nb
		}
	}
	out := []cand(results)
	sortCands(out)
	return out
}

// Search returns up to k nearest live vectors to q, best first (ties by
// ascending id).
func (ix *Index) Search(q []float32, k int, opts SearchOptions) ([]Result, error) {
	if k <= 0 {
		return nil, nil
	}
	qv, err := ix.prepare(q)
	if err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	res := ix.search(qv, k, opts)
	if ix.damaged() {
		// A mapped block failed its check while this search read it.
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, ix.base.err())
	}
	return res, nil
}

func (ix *Index) search(qv []float32, k int, opts SearchOptions) []Result {
	if ix.live == 0 {
		return nil
	}
	if opts.Exact || ix.live <= ix.cfg.ExactThreshold {
		return ix.exact(qv, k, opts.Filter)
	}
	if opts.Filter != nil && ix.passRate(opts.Filter) < ix.cfg.FilterExactBelow {
		return ix.exact(qv, k, opts.Filter)
	}
	ef := opts.Ef
	if ef <= 0 {
		ef = ix.cfg.EfSearch
	}
	ef = max(ef, k)
	var admit func(int32) bool // nil: every slot is live and wanted
	switch f := opts.Filter; {
	case f != nil:
		admit = func(s int32) bool { return !ix.deleted[s] && f(ix.ids[s]) }
	case ix.live < len(ix.ids):
		admit = func(s int32) bool { return !ix.deleted[s] }
	}
	vis := ix.getVisited()
	defer ix.visitedPool.Put(vis)
	score := ix.scoreFloat(qv)
	var codes *quantized // the walk scores the int8 copy
	if ix.q != nil && fastDot8 {
		score, codes = ix.scoreQuantized(qv), ix.q
	}
	ep := ix.entry
	epScore := score(ep)
	var buf []int32
	for l := ix.topLevel; l > 0; l-- {
		ep, epScore = ix.greedy(score, codes, ep, epScore, l, &buf)
	}
	w := ix.searchLayer(score, codes, []cand{{ep, epScore}}, ef, 0, admit, vis, &buf)
	if len(w) < k && len(w) < ix.live {
		// The walk ran dry (heavy deletions or a filter that cuts the graph):
		// the exact scan still finds every admitted vector.
		return ix.exact(qv, k, opts.Filter)
	}
	if codes != nil {
		ix.rescore(qv, w)
	}
	return ix.results(w, k)
}

// rescoreAhead is how many candidates ahead rescore fetches vectors.
const rescoreAhead = 2

// rescore re-scores the walk's candidates exactly with their float32
// vectors (the walk ranked them by codes). The vectors lie scattered, one
// cache miss per line: the vector rescoreAhead places ahead is fetched
// while one is scored, so the misses overlap instead of following one
// another.
func (ix *Index) rescore(qv []float32, w []cand) {
	lines := (4*ix.cfg.Dim + 63) / 64
	fetch := func(i int) {
		if i < len(w) {
			prefetch.Lines(unsafe.Pointer(unsafe.SliceData(ix.vec(w[i].slot))), lines)
		}
	}
	for i := range rescoreAhead {
		fetch(i)
	}
	for i := range w {
		fetch(i + rescoreAhead)
		w[i].score = dot(qv, ix.vec(w[i].slot))
	}
}

func (ix *Index) results(w []cand, k int) []Result {
	out := make([]Result, len(w))
	for i, c := range w {
		out[i] = Result{ix.ids[c.slot], c.score}
	}
	sortResults(out)
	return out[:min(k, len(out))]
}

func sortResults(rs []Result) {
	slices.SortFunc(rs, func(a, b Result) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// passRate estimates the fraction of live vectors the filter admits from a
// deterministic sample of up to 512 slots.
func (ix *Index) passRate(f func(uint64) bool) float64 {
	n := len(ix.ids)
	stride := max(1, n/512)
	seen, pass := 0, 0
	for s := 0; s < n; s += stride {
		if ix.deleted[s] {
			continue
		}
		seen++
		if f(ix.ids[s]) {
			pass++
		}
	}
	if seen == 0 {
		return 0
	}
	return float64(pass) / float64(seen)
}

// exact scans every live (and admitted) vector.
func (ix *Index) exact(q []float32, k int, f func(uint64) bool) []Result {
	var h minHeap
	for s := range ix.ids {
		if ix.deleted[s] || (f != nil && !f(ix.ids[s])) {
			continue
		}
		sc := dot(q, ix.vec(int32(s)))
		if len(h) < k {
			h.push(cand{int32(s), sc})
		} else if sc > h[0].score || (sc == h[0].score && ix.ids[s] < ix.ids[h[0].slot]) {
			h.pop()
			h.push(cand{int32(s), sc})
		}
	}
	return ix.results(h, k)
}

// Delete removes id; it reports whether id was present. The slot stays in
// the graph as a routing node until Compact.
func (ix *Index) Delete(id uint64) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s, ok := ix.slots()[id]
	if !ok {
		return false
	}
	delete(ix.slotOf, id)
	ix.deleted[s] = true
	ix.live--
	return true
}

// Compact rebuilds the graph from the live vectors, dropping tombstones.
// It fails, changing nothing, when a mapped block is damaged.
func (ix *Index) Compact() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.verifyBase(); err != nil {
		return err
	}
	var vecs []float32
	var ids []uint64
	for s := range ix.ids {
		if !ix.deleted[s] {
			ids = append(ids, ix.ids[s])
			vecs = append(vecs, ix.vec(int32(s))...)
		}
	}
	ix.base, ix.vecs, ix.ids, ix.levels, ix.layer0, ix.upper, ix.deleted = nil, vecs, ids, nil, nil, nil, nil
	ix.slotOf = make(map[uint64]int32, len(ids))
	ix.entry, ix.topLevel, ix.live = -1, 0, len(ids)
	slots := make([]int32, len(ids))
	for s, id := range ids {
		lvl := min(int(-math.Log(1-ix.rng.Float64())*ix.levelMul), maxLevel-1)
		ix.levels = append(ix.levels, uint8(lvl))
		ix.addSlotLinks(lvl)
		ix.deleted = append(ix.deleted, false)
		ix.slotOf[id] = int32(s)
		slots[s] = int32(s)
	}
	ix.insertSlots(slots)
	ix.compactions++
	if ix.q != nil {
		ix.q = newQuantized(ix.cfg.Dim, len(ix.ids), ix.vec)
	}
	return nil
}

// Quantize builds the int8 copy of the vectors that searches then walk
// the graph with (a quarter of the bytes fetched per visited node; the
// candidates are re-scored exactly), on architectures with a vector
// kernel for it (amd64 with AVX2); elsewhere it does nothing. It first
// checks every mapped block, like Verify, and fails changing nothing
// when one is damaged. Searches run meanwhile; vectors added later are
// encoded as they are added. An index searched exactly (at most
// ExactThreshold vectors) gets its copy when it grows past that. It costs
// dim bytes per vector in memory.
func (ix *Index) Quantize() error {
	if !fastDot8 {
		return ix.Verify()
	}
	ix.mu.RLock()
	if err := ix.verifyBase(); err != nil {
		ix.mu.RUnlock()
		return err
	}
	var q *quantized
	if ix.live > ix.cfg.ExactThreshold {
		q = newQuantized(ix.cfg.Dim, len(ix.ids), ix.vec)
	}
	compactions := ix.compactions
	ix.mu.RUnlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.quantize = true
	if q == nil || ix.compactions != compactions { // too small yet, or every slot moved meanwhile
		ix.maybeQuantize()
		return nil
	}
	for s := len(q.codes) / q.dim; s < len(ix.ids); s++ { // added meanwhile
		q.append(ix.vec(int32(s)))
	}
	ix.q = q
	return nil
}

// maybeQuantize builds the int8 copy Quantize asked for once searches
// walk the graph (more than ExactThreshold live vectors): below that they
// scan exactly, and scales taken from a handful of vectors — or none, for
// a generation published empty — would clip every later one. The caller
// holds ix.mu for writing.
func (ix *Index) maybeQuantize() {
	if ix.quantize && ix.q == nil && ix.live > ix.cfg.ExactThreshold {
		ix.q = newQuantized(ix.cfg.Dim, len(ix.ids), ix.vec)
	}
}
