// Command annbench measures engine/ann (HNSW) against exact search with
// github.com/philippgille/chromem-go on the same deterministic, clustered
// synthetic vectors, and optionally against github.com/coder/hnsw. It lives
// in its own module so chromem-go stays out of the main module.
//
//	cd bench/annbench && go run . -n 200000 -dim 256
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/coder/hnsw"
	"github.com/philippgille/chromem-go"

	"github.com/rcpgo/rcpgo/engine/ann"
)

func main() {
	var p params
	flag.IntVar(&p.n, "n", 200000, "number of vectors")
	flag.IntVar(&p.dim, "dim", 256, "dimension")
	flag.IntVar(&p.nq, "queries", 500, "number of queries")
	flag.IntVar(&p.k, "k", 10, "neighbours per query")
	flag.IntVar(&p.clusters, "clusters", 1000, "number of clusters")
	flag.IntVar(&p.intrinsic, "intrinsic", 24, "per-cluster subspace dimension")
	flag.IntVar(&p.m, "m", 16, "HNSW M")
	flag.IntVar(&p.efc, "efc", 200, "HNSW efConstruction")
	flag.StringVar(&p.efs, "ef", "64,128,256", "comma-separated efSearch values")
	flag.IntVar(&p.coderN, "coder-n", 0, "also build github.com/coder/hnsw on the first N vectors (0: skip)")
	flag.BoolVar(&p.chromem, "chromem", true, "run chromem-go exact search")
	flag.Parse()
	p.log = slog.New(slog.NewTextHandler(os.Stderr, nil))

	fmt.Printf("annbench: n=%d dim=%d queries=%d k=%d clusters=%d intrinsic=%d GOMAXPROCS=%d\n",
		p.n, p.dim, p.nq, p.k, p.clusters, p.intrinsic, runtime.GOMAXPROCS(0))
	t0 := time.Now()
	data := generate(p.n+p.nq, p.dim, p.clusters, p.intrinsic, 42)
	base, queries := data[:p.n], data[p.n:]
	fmt.Printf("generated in %v (raw vectors %.1f MiB)\n", time.Since(t0).Round(time.Millisecond), float64(p.n*p.dim*4)/(1<<20))

	ix, ids := p.build(base)
	ours := p.benchOurs(ix, queries)
	if p.chromem {
		p.benchChromem(context.Background(), base, queries, ours)
	}
	if p.coderN > 0 {
		p.benchCoder(base, queries, ids)
	}
	runtime.KeepAlive(ix)
}

// params are the command line.
type params struct {
	n, dim, nq, k, clusters, intrinsic, m, efc, coderN int
	efs                                                string
	chromem                                            bool
	log                                                *slog.Logger
}

// die logs err and exits 1.
func (p *params) die(msg string, err error) {
	p.log.Error(msg, "err", err)
	os.Exit(1)
}

// build builds engine/ann's HNSW index over base (ids 0…n−1).
func (p *params) build(base [][]float32) (*ann.Index, []uint64) {
	before := heap()
	ix, err := ann.New(ann.Config{Dim: p.dim, M: p.m, EfConstruction: p.efc, ExactThreshold: -1})
	if err != nil {
		p.die("new", err)
	}
	ids := make([]uint64, p.n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	t0 := time.Now()
	cpu0 := cpuTime()
	if err := ix.AddBatch(ids, base); err != nil {
		p.die("build", err)
	}
	build := time.Since(t0)
	buildCPU := cpuTime() - cpu0
	mem := heap() - before
	fmt.Printf("rcpgo/ann HNSW (M=%d efC=%d): build %v wall, %v CPU (user+sys), heap %.1f MiB\n",
		p.m, p.efc, build.Round(time.Millisecond), buildCPU.Round(time.Millisecond), mem/(1<<20))
	return ix, ids
}

// oursResult is what engine/ann measured: the exact top k of every query
// (the ground truth), the exact scan's QPS and the HNSW QPS per ef.
type oursResult struct {
	truth    [][]uint64
	exactQPS float64
	efList   []int
	hnswQPS  []float64
}

// benchOurs measures engine/ann's exact scan, which gives the ground
// truth, and its HNSW search at every ef.
func (p *params) benchOurs(ix *ann.Index, queries [][]float32) *oursResult {
	r := &oursResult{truth: make([][]uint64, len(queries))}
	t0 := time.Now()
	for i, q := range queries {
		rs, _ := ix.Search(q, p.k, ann.SearchOptions{Exact: true})
		r.truth[i] = idsOf(rs)
	}
	r.exactQPS = float64(len(queries)) / time.Since(t0).Seconds()
	fmt.Printf("rcpgo/ann exact scan: %.1f QPS (1 goroutine)\n", r.exactQPS)
	for _, f := range splitInts(p.efs) {
		t0 = time.Now()
		c0 := cpuTime()
		var hit int
		for i, q := range queries {
			rs, _ := ix.Search(q, p.k, ann.SearchOptions{Ef: f})
			hit += overlap(r.truth[i], idsOf(rs))
		}
		qps := float64(len(queries)) / time.Since(t0).Seconds()
		cpuPerQ := (cpuTime() - c0) / time.Duration(len(queries))
		recall := float64(hit) / float64(len(queries)*p.k)
		r.hnswQPS = append(r.hnswQPS, qps)
		r.efList = append(r.efList, f)
		fmt.Printf("rcpgo/ann HNSW ef=%d: recall@%d %.4f, %.1f QPS (1 goroutine), %v CPU/query\n", f, p.k, recall, qps, cpuPerQ.Round(time.Microsecond))
	}
	return r
}

// benchChromem measures chromem-go's exact search (parallel) on the same
// vectors, and the ratios of ours to it.
func (p *params) benchChromem(ctx context.Context, base, queries [][]float32, ours *oursResult) {
	runtime.GC()
	before := heap()
	db := chromem.NewDB()
	col, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
		return nil, fmt.Errorf("no embedding function")
	})
	if err != nil {
		p.die("chromem", err)
	}
	docs := make([]chromem.Document, p.n)
	for i, v := range base {
		docs[i] = chromem.Document{ID: strconv.Itoa(i), Embedding: normalized(v), Content: " "}
	}
	t0 := time.Now()
	if err := col.AddDocuments(ctx, docs, runtime.GOMAXPROCS(0)); err != nil {
		p.die("chromem add", err)
	}
	cBuild := time.Since(t0)
	docs = nil
	cMem := heap() - before
	fmt.Printf("chromem-go: add %v, heap %.1f MiB\n", cBuild.Round(time.Millisecond), cMem/(1<<20))
	t0 = time.Now()
	c0 := cpuTime()
	var hit int
	for i, q := range queries {
		rs, err := col.QueryEmbedding(ctx, normalized(q), p.k, nil, nil)
		if err != nil {
			p.die("chromem query", err)
		}
		got := make([]uint64, len(rs))
		for j, r := range rs {
			id, _ := strconv.ParseUint(r.ID, 10, 64)
			got[j] = id
		}
		hit += overlap(ours.truth[i], got)
	}
	cQPS := float64(len(queries)) / time.Since(t0).Seconds()
	cCPU := (cpuTime() - c0) / time.Duration(len(queries))
	fmt.Printf("chromem-go exact (parallel over GOMAXPROCS): recall@%d vs rcpgo exact %.4f, %.1f QPS, %v CPU/query\n",
		p.k, float64(hit)/float64(len(queries)*p.k), cQPS, cCPU.Round(time.Microsecond))
	for i, f := range ours.efList {
		fmt.Printf("ratio rcpgo/ann HNSW ef=%d QPS / chromem-go QPS = %.1fx\n", f, ours.hnswQPS[i]/cQPS)
	}
	fmt.Printf("ratio rcpgo/ann exact QPS / chromem-go QPS = %.2fx\n", ours.exactQPS/cQPS)
	runtime.KeepAlive(col)
}

// benchCoder compares github.com/coder/hnsw with engine/ann on the first
// coderN vectors.
func (p *params) benchCoder(base, queries [][]float32, ids []uint64) {
	cn := min(p.coderN, p.n)
	runtime.GC()
	g := hnsw.NewGraph[uint64]()
	g.M = p.m
	g.EfSearch = p.efc
	g.Rng = mrand.New(mrand.NewSource(1))
	g.Distance = hnsw.CosineDistance
	nodes := make([]hnsw.Node[uint64], cn)
	for i := range nodes {
		nodes[i] = hnsw.MakeNode(uint64(i), normalized(base[i]))
	}
	t0 := time.Now()
	g.Add(nodes...)
	gBuild := time.Since(t0)
	// Our index on the same prefix, for a like-for-like comparison.
	sub, _ := ann.New(ann.Config{Dim: p.dim, M: p.m, EfConstruction: p.efc, ExactThreshold: -1})
	t0 = time.Now()
	sub.AddBatch(ids[:cn], base[:cn])
	sBuild := time.Since(t0)
	for _, f := range splitInts(p.efs) {
		g.EfSearch = f
		var gHit, sHit int
		var gDur, sDur time.Duration
		for _, q := range queries {
			want, _ := sub.Search(q, p.k, ann.SearchOptions{Exact: true})
			t1 := time.Now()
			gr := g.Search(normalized(q), p.k)
			gDur += time.Since(t1)
			t1 = time.Now()
			sr, _ := sub.Search(q, p.k, ann.SearchOptions{Ef: f})
			sDur += time.Since(t1)
			got := make([]uint64, len(gr))
			for j, r := range gr {
				got[j] = r.Key
			}
			gHit += overlap(idsOf(want), got)
			sHit += overlap(idsOf(want), idsOf(sr))
		}
		den := float64(len(queries) * p.k)
		fmt.Printf("n=%d ef=%d: coder/hnsw build %v recall %.4f %.1f QPS | rcpgo/ann build %v recall %.4f %.1f QPS\n",
			cn, f, gBuild.Round(time.Millisecond), float64(gHit)/den, float64(len(queries))/gDur.Seconds(),
			sBuild.Round(time.Millisecond), float64(sHit)/den, float64(len(queries))/sDur.Seconds())
	}
}

// generate draws n vectors around `clusters` random centres; each cluster
// spreads along its own random `intrinsic`-dimensional subspace, plus a
// little isotropic noise (real embeddings have low intrinsic dimension).
func generate(n, dim, clusters, intrinsic int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 99))
	type cl struct{ centre, basis []float64 }
	cs := make([]cl, clusters)
	for c := range cs {
		cs[c].centre = make([]float64, dim)
		for j := range cs[c].centre {
			cs[c].centre[j] = rng.NormFloat64()
		}
		cs[c].basis = make([]float64, intrinsic*dim)
		for j := range cs[c].basis {
			cs[c].basis[j] = rng.NormFloat64() * 0.35 / math.Sqrt(float64(intrinsic))
		}
	}
	out := make([][]float32, n)
	slab := make([]float32, n*dim)
	coef := make([]float64, intrinsic)
	for i := range out {
		c := &cs[rng.IntN(clusters)]
		for j := range coef {
			coef[j] = rng.NormFloat64()
		}
		v := slab[i*dim : (i+1)*dim : (i+1)*dim]
		for d := range v {
			x := c.centre[d] + 0.05*rng.NormFloat64()
			for j, a := range coef {
				x += a * c.basis[j*dim+d]
			}
			v[d] = float32(x)
		}
		out[i] = v
	}
	return out
}

// cpuTime is this process's user+system CPU time, which stays meaningful on
// a machine shared with other jobs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func normalized(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(s))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

func heap() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}

func idsOf(rs []ann.Result) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func overlap(want, got []uint64) int {
	set := make(map[uint64]bool, len(want))
	for _, id := range want {
		set[id] = true
	}
	n := 0
	for _, id := range got {
		if set[id] {
			n++
		}
	}
	return n
}

func splitInts(s string) []int {
	var out []int
	cur := ""
	for _, r := range s + "," {
		if r == ',' {
			if v, err := strconv.Atoi(cur); err == nil && v > 0 {
				out = append(out, v)
			}
			cur = ""
			continue
		}
		cur += string(r)
	}
	return out
}
