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
	n := flag.Int("n", 200000, "number of vectors")
	dim := flag.Int("dim", 256, "dimension")
	nq := flag.Int("queries", 500, "number of queries")
	k := flag.Int("k", 10, "neighbours per query")
	clusters := flag.Int("clusters", 1000, "number of clusters")
	intrinsic := flag.Int("intrinsic", 24, "per-cluster subspace dimension")
	m := flag.Int("m", 16, "HNSW M")
	efc := flag.Int("efc", 200, "HNSW efConstruction")
	efs := flag.String("ef", "64,128,256", "comma-separated efSearch values")
	coderN := flag.Int("coder-n", 0, "also build github.com/coder/hnsw on the first N vectors (0: skip)")
	chromemOn := flag.Bool("chromem", true, "run chromem-go exact search")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx := context.Background()

	fmt.Printf("annbench: n=%d dim=%d queries=%d k=%d clusters=%d intrinsic=%d GOMAXPROCS=%d\n",
		*n, *dim, *nq, *k, *clusters, *intrinsic, runtime.GOMAXPROCS(0))
	t0 := time.Now()
	data := generate(*n+*nq, *dim, *clusters, *intrinsic, 42)
	base, queries := data[:*n], data[*n:]
	fmt.Printf("generated in %v (raw vectors %.1f MiB)\n", time.Since(t0).Round(time.Millisecond), float64(*n**dim*4)/(1<<20))

	// engine/ann HNSW
	before := heap()
	ix, err := ann.New(ann.Config{Dim: *dim, M: *m, EfConstruction: *efc, ExactThreshold: -1})
	if err != nil {
		log.Error("new", "err", err)
		os.Exit(1)
	}
	ids := make([]uint64, *n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	t0 = time.Now()
	cpu0 := cpuTime()
	if err := ix.AddBatch(ids, base); err != nil {
		log.Error("build", "err", err)
		os.Exit(1)
	}
	build := time.Since(t0)
	buildCPU := cpuTime() - cpu0
	mem := heap() - before
	fmt.Printf("rcpgo/ann HNSW (M=%d efC=%d): build %v wall, %v CPU (user+sys), heap %.1f MiB\n",
		*m, *efc, build.Round(time.Millisecond), buildCPU.Round(time.Millisecond), mem/(1<<20))

	// Exact ground truth (engine/ann exhaustive scan).
	truth := make([][]uint64, len(queries))
	t0 = time.Now()
	for i, q := range queries {
		rs, _ := ix.Search(q, *k, ann.SearchOptions{Exact: true})
		truth[i] = idsOf(rs)
	}
	exactQPS := float64(len(queries)) / time.Since(t0).Seconds()
	fmt.Printf("rcpgo/ann exact scan: %.1f QPS (1 goroutine)\n", exactQPS)

	var hnswQPS []float64
	var efList []int
	for _, f := range splitInts(*efs) {
		t0 = time.Now()
		c0 := cpuTime()
		var hit int
		for i, q := range queries {
			rs, _ := ix.Search(q, *k, ann.SearchOptions{Ef: f})
			hit += overlap(truth[i], idsOf(rs))
		}
		qps := float64(len(queries)) / time.Since(t0).Seconds()
		cpuPerQ := (cpuTime() - c0) / time.Duration(len(queries))
		recall := float64(hit) / float64(len(queries)**k)
		hnswQPS = append(hnswQPS, qps)
		efList = append(efList, f)
		fmt.Printf("rcpgo/ann HNSW ef=%d: recall@%d %.4f, %.1f QPS (1 goroutine), %v CPU/query\n", f, *k, recall, qps, cpuPerQ.Round(time.Microsecond))
	}

	if *chromemOn {
		runtime.GC()
		before = heap()
		db := chromem.NewDB()
		col, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
			return nil, fmt.Errorf("no embedding function")
		})
		if err != nil {
			log.Error("chromem", "err", err)
			os.Exit(1)
		}
		docs := make([]chromem.Document, *n)
		for i, v := range base {
			docs[i] = chromem.Document{ID: strconv.Itoa(i), Embedding: normalized(v), Content: " "}
		}
		t0 = time.Now()
		if err := col.AddDocuments(ctx, docs, runtime.GOMAXPROCS(0)); err != nil {
			log.Error("chromem add", "err", err)
			os.Exit(1)
		}
		cBuild := time.Since(t0)
		docs = nil
		cMem := heap() - before
		fmt.Printf("chromem-go: add %v, heap %.1f MiB\n", cBuild.Round(time.Millisecond), cMem/(1<<20))
		t0 = time.Now()
		c0 := cpuTime()
		var hit int
		for i, q := range queries {
			rs, err := col.QueryEmbedding(ctx, normalized(q), *k, nil, nil)
			if err != nil {
				log.Error("chromem query", "err", err)
				os.Exit(1)
			}
			got := make([]uint64, len(rs))
			for j, r := range rs {
				id, _ := strconv.ParseUint(r.ID, 10, 64)
				got[j] = id
			}
			hit += overlap(truth[i], got)
		}
		cQPS := float64(len(queries)) / time.Since(t0).Seconds()
		cCPU := (cpuTime() - c0) / time.Duration(len(queries))
		fmt.Printf("chromem-go exact (parallel over GOMAXPROCS): recall@%d vs rcpgo exact %.4f, %.1f QPS, %v CPU/query\n",
			*k, float64(hit)/float64(len(queries)**k), cQPS, cCPU.Round(time.Microsecond))
		for i, f := range efList {
			fmt.Printf("ratio rcpgo/ann HNSW ef=%d QPS / chromem-go QPS = %.1fx\n", f, hnswQPS[i]/cQPS)
		}
		fmt.Printf("ratio rcpgo/ann exact QPS / chromem-go QPS = %.2fx\n", exactQPS/cQPS)
		runtime.KeepAlive(col)
	}

	if *coderN > 0 {
		cn := min(*coderN, *n)
		runtime.GC()
		g := hnsw.NewGraph[uint64]()
		g.M = *m
		g.EfSearch = *efc
		g.Rng = mrand.New(mrand.NewSource(1))
		g.Distance = hnsw.CosineDistance
		nodes := make([]hnsw.Node[uint64], cn)
		for i := range nodes {
			nodes[i] = hnsw.MakeNode(uint64(i), normalized(base[i]))
		}
		t0 = time.Now()
		g.Add(nodes...)
		gBuild := time.Since(t0)
		// Our index on the same prefix, for a like-for-like comparison.
		sub, _ := ann.New(ann.Config{Dim: *dim, M: *m, EfConstruction: *efc, ExactThreshold: -1})
		t0 = time.Now()
		sub.AddBatch(ids[:cn], base[:cn])
		sBuild := time.Since(t0)
		for _, f := range splitInts(*efs) {
			g.EfSearch = f
			var gHit, sHit int
			var gDur, sDur time.Duration
			for _, q := range queries {
				want, _ := sub.Search(q, *k, ann.SearchOptions{Exact: true})
				t1 := time.Now()
				gr := g.Search(normalized(q), *k)
				gDur += time.Since(t1)
				t1 = time.Now()
				sr, _ := sub.Search(q, *k, ann.SearchOptions{Ef: f})
				sDur += time.Since(t1)
				got := make([]uint64, len(gr))
				for j, r := range gr {
					got[j] = r.Key
				}
				gHit += overlap(idsOf(want), got)
				sHit += overlap(idsOf(want), idsOf(sr))
			}
			den := float64(len(queries) * *k)
			fmt.Printf("n=%d ef=%d: coder/hnsw build %v recall %.4f %.1f QPS | rcpgo/ann build %v recall %.4f %.1f QPS\n",
				cn, f, gBuild.Round(time.Millisecond), float64(gHit)/den, float64(len(queries))/gDur.Seconds(),
				sBuild.Round(time.Millisecond), float64(sHit)/den, float64(len(queries))/sDur.Seconds())
		}
	}
	runtime.KeepAlive(ix)
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
