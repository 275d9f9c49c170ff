// Command scale compares rcpgo's search core (engine/index) with bleve v2 on
// the same synthetic corpus and queries (issue 5, acceptance 4).
//
// It is a separate module so that bleve never becomes a dependency of the
// product. The parent process generates nothing itself: it re-executes its own
// binary once per engine and phase (-child ENGINE -phase build|query), so each
// engine's resident memory is measured in a process of its own, then prints a
// table with ratios (ours ÷ bleve) and writes the raw numbers as JSON.
//
//	go run . -docs 1000000 -queries 1000 -dir /work/scratch/scale/1m
//
// See README.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rcpgo/rcpgo/bench/gen"
)

// engine is one system under test.
type engine interface {
	// add indexes a batch of documents (durably, as each engine defines it).
	add(ctx context.Context, docs []gen.Doc) error
	// finish completes the bulk load (flush, merge) before close.
	finish(ctx context.Context) error
	// search returns the ids of the top k hits.
	search(ctx context.Context, q string, k int) ([]string, error)
	// describe says how the engine is configured.
	describe() string
	close() error
}

// opener opens (create=true: creates) an engine's index in dir.
type opener func(ctx context.Context, dir string, create bool) (engine, error)

var engines = map[string]opener{
	"ours":  openOurs,
	"bleve": openBleve,
}

type flags struct {
	docs, queries, k, batch, rounds int
	seed                            uint64
	dir, engines, child, phase      string
	t0                              int64
	skipBuild, parallelBuild        bool
}

func main() {
	var f flags
	flag.IntVar(&f.docs, "docs", 1_000_000, "passages to generate and index")
	flag.IntVar(&f.queries, "queries", 1000, "queries to run (each pass)")
	flag.IntVar(&f.k, "k", 10, "hits per query")
	flag.IntVar(&f.batch, "batch", 5000, "documents per indexing call")
	flag.IntVar(&f.rounds, "rounds", 2, "query rounds per engine, in ABBA order")
	flag.Uint64Var(&f.seed, "seed", 1, "generator seed")
	flag.StringVar(&f.dir, "dir", "/work/scratch/scale/run", "working directory (indexes, results)")
	flag.StringVar(&f.engines, "engines", "ours,bleve", "engines, the first is the numerator of the ratios")
	flag.BoolVar(&f.skipBuild, "skip-build", false, "reuse the indexes (and build-ENGINE.json results) already in -dir")
	flag.BoolVar(&f.parallelBuild, "parallel-build", false, "build the engines' indexes at the same time, one process each (on a loaded machine both then see the same load; each takes a share of the cores)")
	flag.StringVar(&f.child, "child", "", "internal: run one engine's phase in this process")
	flag.StringVar(&f.phase, "phase", "", "internal: build or query")
	flag.Int64Var(&f.t0, "t0", 0, "internal: parent's clock (unix ns) just before starting the child")
	flag.Parse()
	var err error
	if f.child != "" {
		err = runChild(f)
	} else {
		err = runParent(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// ---------------------------------------------------------------- child

// mem is a /proc/self/status reading in MiB.
type mem struct {
	HWMMiB float64 `json:"hwmMiB"` // peak resident set so far
	RSSMiB float64 `json:"rssMiB"` // resident set now
}

func readMem() mem {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return mem{}
	}
	var m mem
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(fs[0], 64)
		switch k {
		case "VmHWM":
			m.HWMMiB = kb / 1024
		case "VmRSS":
			m.RSSMiB = kb / 1024
		}
	}
	return m
}

type buildResult struct {
	Engine        string  `json:"engine"`
	Config        string  `json:"config"`
	Docs          int     `json:"docs"`
	WallSec       float64 `json:"wallSeconds"`      // open → close, generation included
	GenSec        float64 `json:"genSeconds"`       // time spent generating documents
	IndexSec      float64 `json:"indexSeconds"`     // wall − generation
	FinishSec     float64 `json:"finishSeconds"`    // final flush/merge + close
	DocsPerSec    float64 `json:"docsPerSecond"`    // docs ÷ IndexSec
	CPUSec        float64 `json:"cpuSeconds"`       // user+sys of the process, document generation excluded
	DocsPerCPUSec float64 `json:"docsPerCpuSecond"` // docs ÷ CPUSec
	MemAfter      mem     `json:"memAfterBuild"`    // before close
	MemClosed     mem     `json:"memAfterClose"`    // after close
	DiskBytes     int64   `json:"diskBytes"`        // allocated blocks of the index dir
	DiskApparent  int64   `json:"diskApparentBytes"`
}

type latency struct {
	N      int     `json:"n"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MeanMs float64 `json:"meanMs"`
	MaxMs  float64 `json:"maxMs"`
	QPS    float64 `json:"qps"`
}

type queryResult struct {
	Engine      string  `json:"engine"`
	Round       int     `json:"round"`
	ColdOpenMs  float64 `json:"coldOpenMs"` // parent's exec → first query answered
	OpenMs      float64 `json:"openMs"`     // Open call alone
	FirstMs     float64 `json:"firstQueryMs"`
	MemOpen     mem     `json:"memAfterOpen"`
	Seq         latency `json:"sequential"`
	SeqCPUMs    float64 `json:"sequentialCpuMsPerQuery"` // process CPU ÷ queries, sequential pass
	MemSeq      mem     `json:"memAfterSequential"`
	Conc2       latency `json:"concurrency2"`
	MemConc2    mem     `json:"memAfterConcurrent"`
	HitAt10     float64 `json:"knownItemHitAt10"` // share of queries whose source doc is in the top k
	EmptyShare  float64 `json:"emptyShare"`
	ResultsFile string  `json:"resultsFile"`
}

func runChild(f flags) error {
	open, ok := engines[f.child]
	if !ok {
		return fmt.Errorf("unknown engine %q", f.child)
	}
	ctx := context.Background()
	g, err := gen.New(gen.Config{Seed: f.seed, Docs: f.docs, Queries: f.queries})
	if err != nil {
		return err
	}
	dir := filepath.Join(f.dir, f.child)
	var out any
	switch f.phase {
	case "build":
		out, err = build(ctx, f, g, open, dir)
	case "query":
		out, err = runQueryPhase(ctx, f, g, open, dir)
	default:
		return fmt.Errorf("-phase %q: want build or query", f.phase)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func build(ctx context.Context, f flags, g *gen.Generator, open opener, dir string) (*buildResult, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	start := time.Now()
	e, err := open(ctx, dir, true)
	if err != nil {
		return nil, err
	}
	// Generation runs on this goroutine, locked to its thread, so the thread's
	// CPU clock around it measures it and the process total can exclude it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var genDur, genCPU time.Duration
	cpu0 := cpuTime()
	batch := make([]gen.Doc, 0, f.batch)
	lastLog := time.Now()
	for i := 0; i < f.docs; {
		t, tc := time.Now(), threadCPU()
		batch = batch[:0]
		for ; i < f.docs && len(batch) < f.batch; i++ {
			batch = append(batch, g.Doc(i))
		}
		genDur += time.Since(t)
		genCPU += threadCPU() - tc
		if err := e.add(ctx, batch); err != nil {
			return nil, fmt.Errorf("add at %d: %w", i, err)
		}
		if time.Since(lastLog) > 30*time.Second {
			lastLog = time.Now()
			el := time.Since(start) - genDur
			fmt.Fprintf(os.Stderr, "%s build: %d/%d docs, %.0f docs/s, rss %.0f MiB\n",
				f.child, i, f.docs, float64(i)/el.Seconds(), readMem().RSSMiB)
		}
	}
	fstart := time.Now()
	if err := e.finish(ctx); err != nil {
		return nil, err
	}
	memAfter := readMem()
	cfg := e.describe()
	if err := e.close(); err != nil {
		return nil, err
	}
	wall := time.Since(start)
	r := &buildResult{Engine: f.child, Config: cfg, Docs: f.docs, WallSec: wall.Seconds(), GenSec: genDur.Seconds(),
		IndexSec: (wall - genDur).Seconds(), FinishSec: time.Since(fstart).Seconds(),
		MemAfter: memAfter, MemClosed: readMem()}
	r.DocsPerSec = float64(f.docs) / r.IndexSec
	r.CPUSec = (cpuTime() - cpu0 - genCPU).Seconds()
	r.DocsPerCPUSec = float64(f.docs) / r.CPUSec
	r.DiskBytes, r.DiskApparent, err = du(dir)
	return r, err
}

// du returns the allocated and apparent bytes of the files under dir.
func du(dir string) (alloc, apparent int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			alloc += st.Blocks * 512
		}
		if !d.IsDir() {
			apparent += fi.Size()
		}
		return nil
	})
	return
}

func runQueryPhase(ctx context.Context, f flags, g *gen.Generator, open opener, dir string) (*queryResult, error) {
	qs := make([]gen.Query, f.queries)
	for j := range qs {
		qs[j] = g.Query(j)
	}
	t := time.Now()
	e, err := open(ctx, dir, false)
	if err != nil {
		return nil, err
	}
	defer e.close()
	r := &queryResult{Engine: f.child, OpenMs: ms(time.Since(t))}
	t = time.Now()
	if _, err := e.search(ctx, qs[0].Text, f.k); err != nil {
		return nil, err
	}
	r.FirstMs = ms(time.Since(t))
	if f.t0 != 0 {
		r.ColdOpenMs = ms(time.Since(time.Unix(0, f.t0)))
	}
	r.MemOpen = readMem()

	hits := make([][]string, len(qs))
	c0 := cpuTime()
	r.Seq, err = runQueries(ctx, e, qs, f.k, 1, hits)
	if err != nil {
		return nil, err
	}
	r.SeqCPUMs = ms(cpuTime()-c0) / float64(len(qs))
	r.MemSeq = readMem()
	r.Conc2, err = runQueries(ctx, e, qs, f.k, 2, nil)
	if err != nil {
		return nil, err
	}
	r.MemConc2 = readMem()

	found, empty := 0, 0
	for j, h := range hits {
		if len(h) == 0 {
			empty++
		}
		for _, id := range h {
			if id == qs[j].Relevant {
				found++
				break
			}
		}
	}
	r.HitAt10 = float64(found) / float64(len(qs))
	r.EmptyShare = float64(empty) / float64(len(qs))
	r.ResultsFile = filepath.Join(f.dir, f.child+".hits.json")
	b, err := json.Marshal(hits)
	if err != nil {
		return nil, err
	}
	return r, os.WriteFile(r.ResultsFile, b, 0o644)
}

// runQueries runs every query once with conc workers and returns the
// latency distribution; when hits is non-nil it receives each query's ids.
func runQueries(ctx context.Context, e engine, qs []gen.Query, k, conc int, hits [][]string) (latency, error) {
	durs := make([]time.Duration, len(qs))
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(qs) {
					return
				}
				t := time.Now()
				ids, err := e.search(ctx, qs[j].Text, k)
				durs[j] = time.Since(t)
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("query %d: %w", j, err) })
					return
				}
				if hits != nil {
					hits[j] = ids
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if firstErr != nil {
		return latency{}, firstErr
	}
	return summarize(durs, wall), nil
}

func summarize(durs []time.Duration, wall time.Duration) latency {
	s := append([]time.Duration(nil), durs...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	pct := func(p float64) float64 {
		i := int(p*float64(len(s))+0.5) - 1 // nearest rank
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return latency{N: len(s), P50Ms: pct(0.50), P90Ms: pct(0.90), P99Ms: pct(0.99),
		MeanMs: ms(sum) / float64(len(s)), MaxMs: ms(s[len(s)-1]), QPS: float64(len(s)) / wall.Seconds()}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the calling thread's CPU time so far.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ---------------------------------------------------------------- parent

type report struct {
	Started time.Time               `json:"started"`
	Host    string                  `json:"host"`
	Flags   map[string]string       `json:"flags"`
	Builds  map[string]*buildResult `json:"builds"`
	Queries []*queryResult          `json:"queries"`
	Overlap map[string]float64      `json:"overlap,omitempty"`
	LoadAvg []string                `json:"loadAvg"`
}

// queryRounds runs the query phase of every engine, rounds times, in
// ABBA… order so drifting machine load hits both alike.
func queryRounds(rounds int, names []string, rep *report, runChildProc func(name, phase string, out any) error) error {
	for r := 0; r < rounds; r++ {
		order := append([]string(nil), names...)
		if r%2 == 1 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, n := range order {
			fmt.Fprintf(os.Stderr, "== query %s round %d\n", n, r+1)
			var qr queryResult
			if err := runChildProc(n, "query", &qr); err != nil {
				return err
			}
			qr.Round = r + 1
			rep.Queries = append(rep.Queries, &qr)
			fmt.Fprintf(os.Stderr, "   cold %.0f ms, seq p50 %.2f p99 %.2f ms, c2 p50 %.2f p99 %.2f ms\n",
				qr.ColdOpenMs, qr.Seq.P50Ms, qr.Seq.P99Ms, qr.Conc2.P50Ms, qr.Conc2.P99Ms)
		}
	}
	return nil
}

func runParent(f flags) error {
	names := strings.Split(f.engines, ",")
	for _, n := range names {
		if _, ok := engines[n]; !ok {
			return fmt.Errorf("unknown engine %q", n)
		}
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rep := &report{Started: time.Now().UTC(), Flags: map[string]string{}, Builds: map[string]*buildResult{}}
	rep.Host = fmt.Sprintf("%s/%s, GOMAXPROCS=%d, NumCPU=%d", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	flag.VisitAll(func(fl *flag.Flag) { rep.Flags[fl.Name] = fl.Value.String() })
	rep.LoadAvg = append(rep.LoadAvg, loadavg("start"))

	common := []string{"-docs", strconv.Itoa(f.docs), "-queries", strconv.Itoa(f.queries), "-k", strconv.Itoa(f.k),
		"-batch", strconv.Itoa(f.batch), "-seed", strconv.FormatUint(f.seed, 10), "-dir", f.dir}
	runChildProc := func(name, phase string, out any) error {
		args := append([]string{"-child", name, "-phase", phase}, common...)
		t0 := time.Now()
		args = append(args, "-t0", strconv.FormatInt(t0.UnixNano(), 10))
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, phase, err)
		}
		return json.Unmarshal(b, out)
	}

	saveBuild := func(br *buildResult) error {
		b, _ := json.MarshalIndent(br, "", "  ")
		return os.WriteFile(filepath.Join(f.dir, "build-"+br.Engine+".json"), b, 0o644)
	}
	switch {
	case f.skipBuild:
		for _, n := range names {
			br := &buildResult{Engine: n, Docs: f.docs}
			if raw, err := os.ReadFile(filepath.Join(f.dir, "build-"+n+".json")); err == nil {
				if err := json.Unmarshal(raw, br); err != nil {
					return err
				}
			}
			if br.DiskBytes, br.DiskApparent, err = du(filepath.Join(f.dir, n)); err != nil {
				return err
			}
			rep.Builds[n] = br
		}
	case f.parallelBuild:
		fmt.Fprintf(os.Stderr, "== build %s in parallel (%d docs)\n", strings.Join(names, ", "), f.docs)
		brs := make([]buildResult, len(names))
		errs := make([]error, len(names))
		var wg sync.WaitGroup
		for i, n := range names {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = runChildProc(n, "build", &brs[i]) }()
		}
		wg.Wait()
		for i, n := range names {
			if errs[i] != nil {
				return errs[i]
			}
			rep.Builds[n] = &brs[i]
			if err := saveBuild(&brs[i]); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "   %s: %.0f docs/s, %.1f s, disk %.0f MiB\n", n, brs[i].DocsPerSec, brs[i].IndexSec, float64(brs[i].DiskBytes)/(1<<20))
		}
		rep.LoadAvg = append(rep.LoadAvg, loadavg("after builds"))
	default:
		for _, n := range names {
			fmt.Fprintf(os.Stderr, "== build %s (%d docs)\n", n, f.docs)
			var br buildResult
			if err := runChildProc(n, "build", &br); err != nil {
				return err
			}
			rep.Builds[n] = &br
			if err := saveBuild(&br); err != nil {
				return err
			}
			rep.LoadAvg = append(rep.LoadAvg, loadavg("after build "+n))
			fmt.Fprintf(os.Stderr, "   %.0f docs/s, %.1f s, disk %.0f MiB\n", br.DocsPerSec, br.IndexSec, float64(br.DiskBytes)/(1<<20))
		}
	}
	if err := queryRounds(f.rounds, names, rep, runChildProc); err != nil {
		return err
	}
	rep.LoadAvg = append(rep.LoadAvg, loadavg("end"))
	if len(names) >= 2 {
		rep.Overlap, err = overlap(f, names[0], names[1])
		if err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(f.dir, "report.json"), b, 0o644); err != nil {
		return err
	}
	printTable(os.Stdout, f, names, rep)
	return nil
}

func loadavg(label string) string {
	b, _ := os.ReadFile("/proc/loadavg")
	return label + ": " + strings.TrimSpace(string(b))
}

// overlap compares the top-k lists of two engines' last query rounds.
func overlap(f flags, a, b string) (map[string]float64, error) {
	read := func(n string) ([][]string, error) {
		raw, err := os.ReadFile(filepath.Join(f.dir, n+".hits.json"))
		if err != nil {
			return nil, err
		}
		var h [][]string
		return h, json.Unmarshal(raw, &h)
	}
	ha, err := read(a)
	if err != nil {
		return nil, err
	}
	hb, err := read(b)
	if err != nil {
		return nil, err
	}
	var sumK, sumTop1, sumJ float64
	n := min(len(ha), len(hb))
	for j := 0; j < n; j++ {
		set := map[string]bool{}
		for _, id := range ha[j] {
			set[id] = true
		}
		inter := 0
		for _, id := range hb[j] {
			if set[id] {
				inter++
			}
		}
		if m := max(len(ha[j]), len(hb[j])); m > 0 {
			sumK += float64(inter) / float64(m) // = |A∩B|/k when both lists are full
		} else {
			sumK++
		}
		union := len(ha[j]) + len(hb[j]) - inter
		if union > 0 {
			sumJ += float64(inter) / float64(union)
		} else {
			sumJ++
		}
		if len(ha[j]) > 0 && len(hb[j]) > 0 && ha[j][0] == hb[j][0] {
			sumTop1++
		}
	}
	return map[string]float64{
		"meanOverlapAtK": sumK / float64(n),
		"meanJaccard":    sumJ / float64(n),
		"sameTop1":       sumTop1 / float64(n),
	}, nil
}

func printTable(w *os.File, f flags, names []string, rep *report) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	// Query numbers: mean over rounds.
	avg := func(n string, pick func(*queryResult) float64) float64 {
		var s float64
		var c int
		for _, q := range rep.Queries {
			if q.Engine == n {
				s += pick(q)
				c++
			}
		}
		if c == 0 {
			return 0
		}
		return s / float64(c)
	}
	type row struct {
		name string
		val  func(n string) float64
		unit string
	}
	rows := []row{
		{"bulk indexing throughput", func(n string) float64 { return rep.Builds[n].DocsPerSec }, "docs/s"},
		{"bulk indexing time", func(n string) float64 { return rep.Builds[n].IndexSec }, "s"},
		{"bulk indexing CPU (user+sys)", func(n string) float64 { return rep.Builds[n].CPUSec }, "s"},
		{"bulk indexing per CPU-second", func(n string) float64 { return rep.Builds[n].DocsPerCPUSec }, "docs/CPU·s"},
		{"peak RSS, build (VmHWM)", func(n string) float64 { return rep.Builds[n].MemAfter.HWMMiB }, "MiB"},
		{"on-disk size", func(n string) float64 { return float64(rep.Builds[n].DiskBytes) / (1 << 20) }, "MiB"},
		{"cold open → first answer", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.ColdOpenMs }) }, "ms"},
		{"top-10 p50, sequential", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.Seq.P50Ms }) }, "ms"},
		{"top-10 p99, sequential", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.Seq.P99Ms }) }, "ms"},
		{"CPU per query, sequential", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.SeqCPUMs }) }, "ms"},
		{"throughput, sequential", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.Seq.QPS }) }, "q/s"},
		{"top-10 p50, concurrency 2", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.Conc2.P50Ms }) }, "ms"},
		{"top-10 p99, concurrency 2", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.Conc2.P99Ms }) }, "ms"},
		{"throughput, concurrency 2", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.Conc2.QPS }) }, "q/s"},
		{"RSS after queries (VmRSS)", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.MemConc2.RSSMiB }) }, "MiB"},
		{"peak RSS, query process (VmHWM)", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.MemConc2.HWMMiB }) }, "MiB"},
		{"known-item hit@10", func(n string) float64 { return avg(n, func(q *queryResult) float64 { return q.HitAt10 }) }, ""},
	}
	fmt.Fprintf(bw, "\n%d passages (gen seed %d), %d queries, k=%d, batch %d; query numbers are the mean of %d round(s) per engine, ABBA order\n\n",
		f.docs, f.seed, f.queries, f.k, f.batch, f.rounds)
	fmt.Fprintf(bw, "| metric | %s |", strings.Join(names, " | "))
	if len(names) >= 2 {
		fmt.Fprintf(bw, " %s ÷ %s |", names[0], names[1])
	}
	fmt.Fprintln(bw)
	fmt.Fprint(bw, "|---|")
	for range names {
		fmt.Fprint(bw, "---:|")
	}
	if len(names) >= 2 {
		fmt.Fprint(bw, "---:|")
	}
	fmt.Fprintln(bw)
	for _, r := range rows {
		fmt.Fprintf(bw, "| %s |", r.name)
		var vals []float64
		for _, n := range names {
			if rep.Builds[n] == nil {
				fmt.Fprint(bw, " – |")
				vals = append(vals, 0)
				continue
			}
			v := r.val(n)
			vals = append(vals, v)
			fmt.Fprintf(bw, " %s %s |", fmtNum(v), r.unit)
		}
		if len(vals) >= 2 && vals[1] != 0 {
			fmt.Fprintf(bw, " %.2f |", vals[0]/vals[1])
		}
		fmt.Fprintln(bw)
	}
	if rep.Overlap != nil {
		fmt.Fprintf(bw, "\ntop-%d overlap %s vs %s: mean |A∩B|/max(|A|,|B|) = %.3f, mean Jaccard = %.3f, same top-1 = %.3f\n",
			f.k, names[0], names[1], rep.Overlap["meanOverlapAtK"], rep.Overlap["meanJaccard"], rep.Overlap["sameTop1"])
	}
	for _, n := range names {
		if b := rep.Builds[n]; b != nil && b.Config != "" {
			fmt.Fprintf(bw, "%s: %s\n", n, b.Config)
		}
	}
	fmt.Fprintf(bw, "machine: %s; load: %s\n", rep.Host, strings.Join(rep.LoadAvg, "; "))
}

func fmtNum(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
