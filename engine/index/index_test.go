package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/rcpgo/rcpgo/engine/search"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/store"
	"github.com/rcpgo/rcpgo/internal/testutil/bolttest"
)

func openTest(t testing.TB, dir string, opts Options) *Index {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ix, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func mustAdd(t testing.TB, ix *Index, docs ...search.Document) []string {
	t.Helper()
	ids, err := ix.Add(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func mustSearch(t testing.TB, ix *Index, q search.Query) *search.Result {
	t.Helper()
	res, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func hitIDs(r *search.Result) []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.ID
	}
	return out
}

func TestAddSearch(t *testing.T) {
	ix := openTest(t, "", Options{NoBackground: true})
	ids := mustAdd(t, ix,
		search.Document{ID: "b", Title: "Supersonic flow", Text: "shock waves in supersonic flow over wings"},
		search.Document{ID: "a", Title: "Heat transfer", Text: "heat transfer in laminar boundary layers"},
		search.Document{ID: "c", Text: "the boundary layer of a flat plate"},
		search.Document{Text: "no id given: the engine mints one"},
	)
	if ids[0] != "b" || ids[1] != "a" || ids[2] != "c" || ids[3] == "" {
		t.Fatalf("ids = %q", ids)
	}
	res := mustSearch(t, ix, search.Query{Text: "boundary layer", K: 10, Highlight: true})
	if got := hitIDs(res); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("hits %q", got)
	}
	if res.Hits[0].Doc == nil || res.Hits[0].Doc.Text != "the boundary layer of a flat plate" {
		t.Fatalf("stored doc %+v", res.Hits[0].Doc)
	}
	for _, m := range res.Hits[0].Matches {
		if got := strings.ToLower(res.Hits[0].Doc.Text[m.Start:m.End]); !strings.HasPrefix(got, m.Term[:4]) {
			t.Fatalf("match %+v covers %q", m, got)
		}
	}
	if len(res.Hits[0].Matches) != 2 || res.Version != ix.Version() {
		t.Fatalf("matches %+v version %s/%s", res.Hits[0].Matches, res.Version, ix.Version())
	}
	if got := hitIDs(mustSearch(t, ix, search.Query{Text: "minted"})); len(got) != 1 || got[0] != ids[3] {
		t.Fatalf("minted id search %q", got)
	}
	if r := mustSearch(t, ix, search.Query{Text: "the of a"}); len(r.Hits) != 0 {
		t.Fatalf("stop-word query matched %q", hitIDs(r))
	}
	if st := ix.Stats(); st.Docs != 4 || st.Segments != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTiesBrokenByID(t *testing.T) {
	ix := openTest(t, "", Options{NoBackground: true})
	for _, id := range []string{"m", "z", "a", "k"} {
		mustAdd(t, ix, search.Document{ID: id, Text: "identical text about turbulence"})
	}
	mustAdd(t, ix, search.Document{ID: "0", Text: "other"})
	for k := 1; k <= 4; k++ {
		got := hitIDs(mustSearch(t, ix, search.Query{Text: "turbulence", K: k}))
		if want := []string{"a", "k", "m", "z"}[:k]; !slices.Equal(got, want) {
			t.Fatalf("k=%d: %q, want %q", k, got, want)
		}
	}
}

func TestUpsertAndIdempotentAdd(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	d := search.Document{ID: "x", Title: "Wing", Text: "flutter of a swept wing", Meta: map[string]any{"year": 1962, "tags": []any{"a", "b"}}}
	mustAdd(t, ix, d)
	v1 := ix.Version()
	mustAdd(t, ix, d) // identical: observationally a no-op
	if ix.Version() != v1 || ix.Stats().Docs != 1 || ix.Stats().Segments != 1 {
		t.Fatalf("identical re-add changed state: %s→%s %+v", v1, ix.Version(), ix.Stats())
	}
	d.Text = "buckling of a cylindrical shell"
	mustAdd(t, ix, d)
	if ix.Version() == v1 || ix.Stats().Docs != 1 {
		t.Fatalf("upsert: %+v", ix.Stats())
	}
	if r := mustSearch(t, ix, search.Query{Text: "flutter"}); len(r.Hits) != 0 {
		t.Fatalf("old version still found: %q", hitIDs(r))
	}
	if r := mustSearch(t, ix, search.Query{Text: "buckling"}); !slices.Equal(hitIDs(r), []string{"x"}) {
		t.Fatalf("new version not found: %q", hitIDs(r))
	}
	got, err := ix.Get(ctx, "x")
	if err != nil || got == nil || got.Text != d.Text {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	// Duplicate ids inside one batch: the last wins.
	mustAdd(t, ix, search.Document{ID: "y", Text: "first"}, search.Document{ID: "y", Text: "second"})
	if r := mustSearch(t, ix, search.Query{Text: "first"}); len(r.Hits) != 0 {
		t.Fatalf("in-batch duplicate kept: %q", hitIDs(r))
	}
	if r := mustSearch(t, ix, search.Query{Text: "second"}); len(r.Hits) != 1 {
		t.Fatalf("in-batch last copy missing")
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix, search.Document{ID: "a", Text: "alpha"}, search.Document{ID: "b", Text: "alpha beta"})
	tests := []struct {
		ids  []string
		want int
	}{
		{[]string{"a", "missing"}, 1},
		{[]string{"a"}, 0},
		{[]string{"b", "b"}, 1},
		{nil, 0},
	}
	for _, tt := range tests {
		n, err := ix.Delete(ctx, tt.ids)
		if err != nil || n != tt.want {
			t.Fatalf("Delete(%q) = %d, %v; want %d", tt.ids, n, err, tt.want)
		}
	}
	if r := mustSearch(t, ix, search.Query{Text: "alpha"}); len(r.Hits) != 0 {
		t.Fatalf("deleted docs found: %q", hitIDs(r))
	}
	if st := ix.Stats(); st.Docs != 0 {
		t.Fatalf("stats after delete %+v", st)
	}
}

func TestChunks(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true})
	chunk := func(parent string, i int, text string) search.Document {
		return search.Document{ID: fmt.Sprintf("%s#%d", parent, i), Text: text, Chunk: &search.ChunkRef{DocID: parent, Index: i, Start: 10 * i, End: 10*i + len(text)}}
	}
	mustAdd(t, ix, chunk("P", 0, "rotor blades"), chunk("P", 1, "helicopter rotor noise"), chunk("P", 2, "rotor wake"), chunk("Q", 0, "rotor hub"))
	r := mustSearch(t, ix, search.Query{Text: "rotor", K: 10, Filter: Eq(ParentField, "P")})
	if len(r.Hits) != 3 || r.Hits[0].Doc.Chunk == nil || r.Hits[0].Doc.Chunk.DocID != "P" {
		t.Fatalf("chunk filter: %q", hitIDs(r))
	}
	// Re-chunking P into two chunks drops the stale third one.
	mustAdd(t, ix, chunk("P", 0, "rotor blades"), chunk("P", 1, "helicopter rotor noise and vibration"))
	if got := hitIDs(mustSearch(t, ix, search.Query{Text: "wake"})); len(got) != 0 {
		t.Fatalf("stale chunk still found: %q", got)
	}
	if n, err := ix.Delete(ctx, []string{"P"}); err != nil || n != 1 {
		t.Fatalf("Delete(P) = %d, %v", n, err)
	}
	if got := hitIDs(mustSearch(t, ix, search.Query{Text: "rotor"})); !slices.Equal(got, []string{"Q#0"}) {
		t.Fatalf("after parent delete: %q", got)
	}
}

func TestSnapshots(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true, RetainVersions: 3})
	mustAdd(t, ix, search.Document{ID: "a", Text: "laminar flow"})
	v1 := ix.Version()
	mustAdd(t, ix, search.Document{ID: "a", Text: "turbulent flow"}, search.Document{ID: "b", Text: "laminar jets"})
	if _, err := ix.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if err := ix.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	// Pinned: the old state, old stored text included.
	r := mustSearch(t, ix, search.Query{Text: "laminar", Version: v1})
	if r.Version != v1 || !slices.Equal(hitIDs(r), []string{"a"}) || r.Hits[0].Doc.Text != "laminar flow" {
		t.Fatalf("pinned search: %+v", r)
	}
	if got := hitIDs(mustSearch(t, ix, search.Query{Text: "laminar"})); len(got) != 0 {
		t.Fatalf("current search sees old state: %q", got)
	}
	for i := 0; i < 4; i++ {
		mustAdd(t, ix, search.Document{ID: fmt.Sprint("n", i), Text: "filler"})
	}
	if _, err := ix.Search(ctx, search.Query{Text: "laminar", Version: v1}); !errors.Is(err, search.ErrSnapshotGone) {
		t.Fatalf("expired pin: err = %v", err)
	}
	for _, bad := range []string{"garbage", "x.y", "."} {
		if _, err := ix.Search(ctx, search.Query{Text: "flow", Version: bad}); !errors.Is(err, search.ErrBadVersion) {
			t.Fatalf("version %q: err = %v", bad, err)
		}
	}
	if _, err := ix.Search(ctx, search.Query{Text: "flow", Version: "ffffffff.1"}); !errors.Is(err, search.ErrSnapshotGone) {
		t.Fatalf("foreign version: err = %v", err)
	}
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(ctx, dir, Options{NoBackground: true, FlushDocs: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		mustAdd(t, ix, search.Document{ID: fmt.Sprint(i), Text: fmt.Sprintf("document number %d about wings", i), Meta: map[string]any{"n": i}})
		if i%3 == 2 {
			if err := ix.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := ix.Delete(ctx, []string{"1", "7"}); err != nil {
		t.Fatal(err)
	}
	before := mustSearch(t, ix, search.Query{Text: "wings", K: 20, Filter: Gte("n", 3)})
	v := ix.Version()
	// Simulate a crash: drop the Index without Close (the store lock is
	// released by closing the bbolt file directly).
	ix.closed.Store(true)
	ix.st.Close()

	ix2 := openTest(t, dir, Options{NoBackground: true, MergeFactor: 2})
	after := mustSearch(t, ix2, search.Query{Text: "wings", K: 20, Filter: Gte("n", 3)})
	if !slices.Equal(hitIDs(before), hitIDs(after)) {
		t.Fatalf("after reopen %q, before %q", hitIDs(after), hitIDs(before))
	}
	if _, err := ix2.Search(ctx, search.Query{Text: "wings", Version: v}); !errors.Is(err, search.ErrSnapshotGone) {
		t.Fatalf("pre-restart version: %v", err)
	}
	if err := ix2.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ix2.Stats(); st.Docs != 8 || st.Segments > 3 {
		t.Fatalf("stats after merge %+v", st)
	}
	if got := hitIDs(mustSearch(t, ix2, search.Query{Text: "wings", K: 20, Filter: Gte("n", 3)})); !slices.Equal(got, hitIDs(before)) {
		t.Fatalf("after merge %q", got)
	}
	if err := ix2.Close(); err != nil {
		t.Fatal(err)
	}
	// A different analysis chain is refused.
	if _, err := Open(ctx, dir, Options{Analyzer: analysis.Must(analysis.Options{Language: "none"})}); !errors.Is(err, ErrAnalyzerMismatch) {
		t.Fatalf("analyzer mismatch: %v", err)
	}
}

func TestCorruptSegmentDetected(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(ctx, dir, Options{NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, ix, search.Document{ID: "a", Text: "some text to flush"})
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	file, data := onlySegment(t, dir)
	data[len(data)/2] ^= 0x40
	os.WriteFile(file, data, 0o644)
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrCorruptSegment) {
		t.Fatalf("corrupt segment: err = %v", err)
	}
}

func TestFilters(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true, Fields: map[string]FieldType{"published": FieldDate, "code": FieldKeyword}})
	docs := []search.Document{
		{ID: "1", Text: "jet engine", Meta: map[string]any{"lang": "en", "year": 1999, "open": true, "tags": []any{"aero", "engine"}, "published": "2020-01-02T00:00:00Z", "code": 7, "author": map[string]any{"name": "Ada"}}},
		{ID: "2", Text: "jet noise", Meta: map[string]any{"lang": "de", "year": 2005, "open": false, "tags": []any{"acoustics"}, "published": "2023-06-01T12:00:00Z"}},
		{ID: "3", Text: "jet stream", Meta: map[string]any{"lang": "en", "year": 2021.5, "summary": "about the atmosphere"}},
		{ID: "4", Text: "jet fuel"},
	}
	mustAdd(t, ix, docs[:2]...)
	mustAdd(t, ix, docs[2:]...)
	ms := func(s string) float64 { tm, _ := time.Parse(time.RFC3339, s); return float64(tm.UnixMilli()) }
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"eq keyword", Eq("lang", "en"), []string{"1", "3"}},
		{"ne via not", Not(Eq("lang", "en")), []string{"2", "4"}},
		{"in", In("lang", "de", "fr"), []string{"2"}},
		{"array element", Eq("tags", "engine"), []string{"1"}},
		{"bool", Eq("open", false), []string{"2"}},
		{"numeric eq int", Eq("year", 2005), []string{"2"}},
		{"range", Range("year", 2000, 2021.5, true, false), []string{"2"}},
		{"gte float", Gte("year", 2021.5), []string{"3"}},
		{"date", Gt("published", ms("2021-01-01T00:00:00Z")), []string{"2"}},
		{"date eq time", Eq("published", time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)), []string{"1"}},
		{"number as number", Eq("code", 7), []string{"1"}},
		{"number is not a string", Eq("code", "7"), nil},
		{"nested", Eq("author.name", "Ada"), []string{"1"}},
		{"exists", Exists("tags"), []string{"1", "2"}},
		{"not exists", Not(Exists("lang")), []string{"4"}},
		{"and/or", And(Eq("lang", "en"), Or(Lt("year", 2000), Exists("summary"))), []string{"1", "3"}},
		{"contains substring", Contains("summary", "atmo"), []string{"3"}},
		{"docnum", FilterFunc(docNumIs{}), []string{"2", "4"}},
	}
	check := func(stage string) {
		for _, tt := range tests {
			got := hitIDs(mustSearch(t, ix, search.Query{Text: "jet", K: 10, Filter: tt.f}))
			slices.Sort(got)
			if !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
				t.Errorf("%s %s: got %q, want %q", stage, tt.name, got, tt.want)
			}
		}
	}
	check("memory")
	if err := ix.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	check("merged")
}

type docNumIs struct{}

func (docNumIs) Match(n search.DocNum) bool { return n%2 == 0 }

// randomCorpus generates a deterministic corpus over a Zipf vocabulary.
func randomCorpus(seed uint64, n int) []search.Document {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 2, 5000)
	word := func() string { return fmt.Sprintf("w%d", z.Uint64()) }
	docs := make([]search.Document, n)
	for i := range docs {
		var title, body []string
		for range 1 + r.IntN(6) {
			title = append(title, word())
		}
		for range 5 + r.IntN(120) {
			body = append(body, word())
		}
		docs[i] = search.Document{ID: fmt.Sprintf("d%06d", i), Title: strings.Join(title, " "), Text: strings.Join(body, " "),
			Meta: map[string]any{"bucket": fmt.Sprint(i % 7), "n": i}}
	}
	return docs
}

// exhaustive scores every live document of the snapshot without pruning.
func exhaustive(ix *Index, text string, k int, filt Filter) []cand {
	snap := ix.cur.Load()
	var qts []qterm
	for _, t := range ix.an.Analyze(text) {
		if i := slices.IndexFunc(qts, func(x qterm) bool { return x.term == t.Term }); i >= 0 {
			qts[i].qtf++
		} else {
			qts = append(qts, qterm{term: t.Term, qtf: 1})
		}
	}
	sc := newScorer(ix.opts.BM25, snap)
	var all []cand
	for i := range qts {
		df := 0
		for _, v := range snap.segs {
			if ti, ok := v.seg.lookup(qts[i].term); ok {
				df += int(ti.df)
			}
		}
		N := float64(snap.total)
		qts[i].w = float64(qts[i].qtf) * math.Log(1+(N-float64(df)+0.5)/(float64(df)+0.5)) * (sc.k1 + 1)
	}
	for _, v := range snap.segs {
		contrib := make([][]float64, v.seg.n)
		for i, qt := range qts {
			ti, ok := v.seg.lookup(qt.term)
			if !ok {
				continue
			}
			for it := newPostIter(v.seg.postingsBytes(ti), int(ti.df), v.seg.n, v.seg.format); it.doc != noDoc; it.next() {
				if contrib[it.doc] == nil {
					contrib[it.doc] = make([]float64, len(qts))
				}
				contrib[it.doc][i] = sc.score(qt.w, it.tf, v.seg, it.doc)
			}
		}
		var fb *Bitset
		if filt != nil {
			fb, _ = filt.Compile(&segFields{seg: v.seg})
		}
		for d, c := range contrib {
			if c == nil || v.deleted(uint32(d)) || fb != nil && !fb.Has(uint32(d)) || slices.Max(c) == 0 {
				continue
			}
			s := 0.0
			for _, x := range c {
				s += x
			}
			all = append(all, cand{score: s, id: v.seg.idBytes(uint32(d))})
		}
	}
	slices.SortFunc(all, func(a, b cand) int {
		if worse(&a, &b) {
			return 1
		}
		if worse(&b, &a) {
			return -1
		}
		return 0
	})
	return all[:min(k, len(all))]
}

func TestPruningMatchesExhaustive(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{NoBackground: true, FlushDocs: 700, MergeFactor: 3})
	docs := randomCorpus(7, 3000)
	for lo := 0; lo < len(docs); lo += 500 {
		mustAdd(t, ix, docs[lo:lo+500]...)
		if lo == 1000 {
			if err := ix.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	var del []string
	for i := 0; i < len(docs); i += 11 {
		del = append(del, docs[i].ID)
	}
	if _, err := ix.Delete(ctx, del); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	z := rand.NewZipf(r, 1.1, 2, 5000)
	check := func(stage string) {
		for q := 0; q < 150; q++ {
			var words []string
			for range 1 + r.IntN(8) {
				words = append(words, fmt.Sprintf("w%d", z.Uint64()))
			}
			text := strings.Join(words, " ")
			k := []int{1, 5, 10, 100}[q%4]
			var filt Filter
			if q%5 == 0 {
				filt = Eq("bucket", "3")
			}
			got := mustSearch(t, ix, search.Query{Text: text, K: k, Filter: filt, SkipDocs: true})
			want := exhaustive(ix, text, k, filt)
			if len(got.Hits) != len(want) {
				t.Fatalf("%s %q k=%d: %d hits, want %d", stage, text, k, len(got.Hits), len(want))
			}
			for i, h := range got.Hits {
				if h.ID != string(want[i].id) || math.Abs(h.Score-want[i].score) > 1e-9 {
					t.Fatalf("%s %q k=%d hit %d: %s %.12f, want %s %.12f", stage, text, k, i, h.ID, h.Score, want[i].id, want[i].score)
				}
			}
		}
	}
	check("mixed")
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	check("merged")
}

func TestConcurrentReadersDuringWrites(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "", Options{FlushDocs: 300, MaxMemSegments: 4, MergeFactor: 3, FlushAfter: 20 * time.Millisecond})
	docs := randomCorpus(11, 2000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := ix.Search(ctx, search.Query{Text: "w2 w3 w17", K: 10})
				if err != nil {
					errs <- err
					return
				}
				// A pinned re-query of the served version returns the same
				// hits — or, when a starved reader fell more than
				// RetainVersions behind the writer, refuses it (§7.7.1):
				// never a different snapshot.
				res2, err := ix.Search(ctx, search.Query{Text: "w2 w3 w17", K: 10, Version: res.Version})
				if errors.Is(err, search.ErrSnapshotGone) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(hitIDs(res), hitIDs(res2)) {
					errs <- fmt.Errorf("pinned %s differs: %q vs %q", res.Version, hitIDs(res), hitIDs(res2))
					return
				}
			}
		})
	}
	for lo := 0; lo < len(docs); lo += 100 {
		mustAdd(t, ix, docs[lo:lo+100]...)
		if _, err := ix.Delete(ctx, []string{docs[lo].ID}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Docs != 1980 {
		t.Fatalf("stats %+v", st)
	}
}

var testAnalyzer = analysis.Default()

// Retention counts from when a version was replaced, not from when it was
// committed: a version current for longer than RetainFor stays pinnable
// right after a write replaces it (a cursor taken just before the write
// keeps working). RetainFor is a second so that a loaded machine's pauses
// between the steps stay well inside it.
func TestContextAndRetention(t *testing.T) {
	const retain = time.Second
	ix := openTest(t, "", Options{NoBackground: true, RetainFor: retain})
	mustAdd(t, ix, search.Document{ID: "a", Text: "shock tube"})
	v := ix.Version()
	time.Sleep(retain + 200*time.Millisecond) // v has been current longer than RetainFor
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Add(ctx, []search.Document{{ID: "b", Text: "never"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add with canceled ctx: %v", err)
	}
	if _, err := ix.Search(ctx, search.Query{Text: "shock"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Search with canceled ctx: %v", err)
	}
	if d, _ := ix.Get(context.Background(), "b"); d != nil {
		t.Fatal("canceled Add left a document")
	}
	mustAdd(t, ix, search.Document{ID: "c", Text: "shock wave"})
	if r := mustSearch(t, ix, search.Query{Text: "shock", Version: v}); len(r.Hits) != 1 {
		t.Fatalf("pin of the version just replaced: %q", hitIDs(r))
	}
	time.Sleep(retain + 200*time.Millisecond)
	mustAdd(t, ix, search.Document{ID: "d", Text: "expansion fan"})
	if _, err := ix.Search(context.Background(), search.Query{Text: "shock", Version: v}); !errors.Is(err, search.ErrSnapshotGone) {
		t.Fatalf("pin older than RetainFor: %v", err)
	}
	// The current version is always servable, however old.
	time.Sleep(retain + 200*time.Millisecond)
	if _, err := ix.Search(context.Background(), search.Query{Text: "shock", Version: ix.Version()}); err != nil {
		t.Fatalf("current version pinned: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(context.Background(), search.Query{Text: "shock"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
}

func TestBrowseAndBM25Override(t *testing.T) {
	ix := openTest(t, "", Options{NoBackground: true})
	mustAdd(t, ix,
		search.Document{ID: "c", Title: "flutter", Text: "wing", Meta: map[string]any{"k": "x"}},
		search.Document{ID: "a", Text: "flutter flutter wing", Meta: map[string]any{"k": "x"}},
		search.Document{ID: "b", Text: "other", Meta: map[string]any{"k": "y"}},
	)
	if got := hitIDs(mustSearch(t, ix, search.Query{Filter: Eq("k", "x"), K: 5})); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("browse: %q", got)
	}
	if r := mustSearch(t, ix, search.Query{Text: "the", Filter: Eq("k", "x")}); len(r.Hits) != 0 {
		t.Fatalf("stop-word query browsed: %q", hitIDs(r))
	}
	// Title weight decides between a title match and a doubled body match.
	titleHeavy := BM25{K1: 1.2, Title: FieldParams{Weight: 10, B: 0.75}, Body: FieldParams{Weight: 1, B: 0.75}}
	bodyOnly := BM25{K1: 1.2, Title: FieldParams{Weight: 0, B: 0.75}, Body: FieldParams{Weight: 1, B: 0.75}}
	withBM25 := func(p BM25) []string {
		r, err := ix.searchBM25(context.Background(), search.Query{Text: "flutter"}, p)
		if err != nil {
			t.Fatal(err)
		}
		return hitIDs(r)
	}
	if got := withBM25(titleHeavy); got[0] != "c" {
		t.Fatalf("title-heavy: %q", got)
	}
	if got := withBM25(bodyOnly); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("body-only: %q", got)
	}
}

// hitScores is the ranked list of r as "id:score" strings.
func hitScores(r *search.Result) []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = fmt.Sprintf("%s:%.12g", h.ID, h.Score)
	}
	return out
}

// TestVersionTracksResults: the version changes exactly when what a search
// returns can change. A flush (deleted documents included), a merge that
// drops nothing and a clean restart keep it, so a version pinned before a
// restart is served after it with the same hits and scores; a merge that
// drops deleted documents (BM25 N and df change) and a restart after a
// crash publish a new one.
func TestVersionTracksResults(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(ctx, dir, Options{NoBackground: true, MergeFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, ix, search.Document{ID: "a", Text: "shock waves over wings"}, search.Document{ID: "b", Text: "laminar flow over wings"})
	mustAdd(t, ix, search.Document{ID: "a", Text: "shock waves over swept wings"}) // upsert: a deleted doc in a memory segment
	mustAdd(t, ix, search.Document{ID: "c", Text: "wings and shock tubes"})
	v := ix.Version()
	q := search.Query{Text: "shock wings", K: 10}
	before := hitScores(mustSearch(t, ix, q))

	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Version() != v {
		t.Fatalf("flush changed the version %s → %s", v, ix.Version())
	}
	if got := hitScores(mustSearch(t, ix, q)); !slices.Equal(got, before) {
		t.Fatalf("after flush %q, before %q", got, before)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	// Clean restart: same version, and pinning it serves the same list.
	ix, err = Open(ctx, dir, Options{NoBackground: true, MergeFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Version() != v {
		t.Fatalf("clean restart changed the version %s → %s", v, ix.Version())
	}
	pinned := q
	pinned.Version = v
	if got := hitScores(mustSearch(t, ix, pinned)); !slices.Equal(got, before) {
		t.Fatalf("pinned after restart %q, before %q", got, before)
	}

	// A merge of segments without deletions changes nothing visible.
	for _, id := range []string{"d", "e"} {
		mustAdd(t, ix, search.Document{ID: id, Text: "supersonic wings " + id})
		if err := ix.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	v2 := ix.Version()
	before2 := hitScores(mustSearch(t, ix, q))
	if err := ix.Merge(ctx); err != nil { // the cheapest window: d and e
		t.Fatal(err)
	}
	if st := ix.Stats(); ix.Version() != v2 || st.Segments != 2 || st.Deleted != 1 {
		t.Fatalf("a merge that dropped nothing: version %s → %s, %+v", v2, ix.Version(), st)
	}
	if got := hitScores(mustSearch(t, ix, q)); !slices.Equal(got, before2) {
		t.Fatalf("after merge %q, before %q", got, before2)
	}
	// Merging the first segment drops the deleted "a": N and df change, so
	// a new version; the old one stays pinnable and serves the old scores.
	if err := ix.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Version() == v2 || ix.Stats().Deleted != 0 {
		t.Fatalf("a merge that dropped deleted documents kept version %s (%+v)", v2, ix.Stats())
	}
	pinned.Version = v2
	if got := hitScores(mustSearch(t, ix, pinned)); !slices.Equal(got, before2) {
		t.Fatalf("pinned to the pre-merge version %q, want %q", got, before2)
	}

	// A crash with unflushed writes: a new version.
	mustAdd(t, ix, search.Document{ID: "h", Text: "shock"})
	v5 := ix.Version()
	ix.closed.Store(true)
	ix.st.Close()
	ix = openTest(t, dir, Options{NoBackground: true})
	if ix.Version() == v5 {
		t.Fatalf("restart after a crash kept version %s", v5)
	}
	if _, err := ix.Search(ctx, search.Query{Text: "shock", Version: v5}); !errors.Is(err, search.ErrSnapshotGone) {
		t.Fatalf("pre-crash version: %v", err)
	}
}

// TestVerifyAfterOpen damages a byte of a segment's postings, which only
// the segment's checksum covers. Open checks the checksum itself by
// default; with VerifyAfterOpen it returns without reading the segment
// through, and the check after it fails: WaitVerified, searches and
// merges return ErrCorruptSegment naming the file, never results read from
// the damaged segment.
func TestVerifyAfterOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(ctx, dir, Options{NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		mustAdd(t, ix, search.Document{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("text number %d to flush", i)})
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	file, data := onlySegment(t, dir)
	seg, err := openSegment("", data)
	if err != nil {
		t.Fatal(err)
	}
	if seg.format < 3 || len(seg.sec[secPost]) == 0 {
		t.Fatalf("format %d, %d bytes of postings", seg.format, len(seg.sec[secPost]))
	}
	table := len(data) - 12 - 4 - 16*numSections // the footer's section table
	at := binary.LittleEndian.Uint64(data[table+16*secPost:]) + uint64(len(seg.sec[secPost])/2)
	data[at] ^= 0x40
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(file)

	if _, err := Open(ctx, dir, Options{NoBackground: true}); !errors.Is(err, ErrCorruptSegment) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open without VerifyAfterOpen: %v", err)
	}
	ix, err = Open(ctx, dir, Options{NoBackground: true, VerifyAfterOpen: true})
	if err != nil {
		t.Fatalf("Open with VerifyAfterOpen checked the checksum itself: %v", err)
	}
	defer ix.Close()
	if err := ix.WaitVerified(ctx); !errors.Is(err, ErrCorruptSegment) || !strings.Contains(err.Error(), name) {
		t.Fatalf("WaitVerified: %v", err)
	}
	if _, err := ix.Search(ctx, search.Query{Text: "text", K: 10}); !errors.Is(err, ErrCorruptSegment) {
		t.Fatalf("Search over the damaged segment: %v", err)
	}
	mustAdd(t, ix, search.Document{ID: "new", Text: "one more"})
	if err := ix.ForceMerge(ctx); !errors.Is(err, ErrCorruptSegment) {
		t.Fatalf("ForceMerge of the damaged segment: %v", err)
	}
}

// TestDeletionsFromTheJournal: Open derives the segments' deletion sets
// from the killed journal — after a clean close and after a crash (a copy
// taken while the index is open) — equal to what the live-id map gives,
// after deletes, upserts and a merge; the live-id map is read only once,
// for a store whose manifest does not say its journal is complete (written
// by an older version). Kills of documents no segment file holds (deleted
// before a flush wrote them) are pruned from the journal at the next Open:
// before, they stayed in it for good. The deletion sets an earlier version
// saved at a clean close are not used, and are dropped.
func TestDeletionsFromTheJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(d string) *Index {
		t.Helper()
		ix, err := Open(ctx, d, Options{NoBackground: true, MergeFactor: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	check := func(ix *Index, wantScan bool) {
		t.Helper()
		if ix.liveScanned != wantScan {
			t.Fatalf("live-id map read at open: %v, want %v", ix.liveScanned, wantScan)
		}
		live := map[uint64]bool{}
		var killed []uint64
		if err := ix.st.View(func(tx *store.ReadTx) error {
			if err := tx.ForEachKilled(func(seq uint64) error { killed = append(killed, seq); return nil }); err != nil {
				return err
			}
			return tx.ForEachLiveSeq(func(seq uint64) error { live[seq] = true; return nil })
		}); err != nil {
			t.Fatal(err)
		}
		var files []segView
		for _, v := range ix.cur.Load().segs {
			if v.seg.name != "" {
				files = append(files, v)
			}
			n := 0
			for i := 0; i < v.seg.n; i++ {
				if v.deleted(uint32(i)) == live[v.seg.seq(uint32(i))] {
					t.Fatalf("%s doc %d: deleted %v, live %v", v.seg.name, i, v.deleted(uint32(i)), live[v.seg.seq(uint32(i))])
				}
				if v.deleted(uint32(i)) {
					n++
				}
			}
			if n != v.ndel {
				t.Fatalf("%s: %d deleted, ndel %d", v.seg.name, n, v.ndel)
			}
		}
		held := NewBitset(len(killed))
		for _, v := range files {
			killedIn(v.seg, killed, held)
		}
		if u := unheld(killed, held); len(u) != 0 {
			t.Fatalf("the killed journal holds %v, which no segment file holds", u)
		}
	}
	// killedBeforeFlush adds documents and deletes or replaces them before
	// any flush writes them.
	killedBeforeFlush := func(ix *Index, tag string) {
		t.Helper()
		mustAdd(t, ix, search.Document{ID: tag + "-gone", Text: "deleted before a flush"}, search.Document{ID: tag + "-twice", Text: "replaced before a flush"})
		mustAdd(t, ix, search.Document{ID: tag + "-twice", Text: "the second version"})
		if _, err := ix.Delete(ctx, []string{tag + "-gone"}); err != nil {
			t.Fatal(err)
		}
	}
	ix := open(dir)
	for round := range 3 {
		for i := range 40 {
			mustAdd(t, ix, search.Document{ID: fmt.Sprintf("d%d", i+20*round), Text: fmt.Sprintf("round %d text %d", round, i)})
		}
		if err := ix.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Delete(ctx, []string{fmt.Sprintf("d%d", 3+round), fmt.Sprintf("d%d", 30+round)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Delete(ctx, []string{"d50"}); err != nil {
		t.Fatal(err)
	}
	check(ix, true)
	killedBeforeFlush(ix, "close")
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = open(dir)
	check(ix, false)
	killedBeforeFlush(ix, "crash")
	crashed := crashCopy(t, dir)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(crashed)
	check(c, false)
	mustAdd(t, c, search.Document{ID: "d7", Text: "replaced after the crash"}) // killed in the journal
	if _, err := c.Delete(ctx, []string{"d8"}); err != nil {
		t.Fatal(err)
	}
	again := crashCopy(t, crashed)
	c.Close()
	c = open(again)
	check(c, false)
	c.Close()

	// Deletion sets an earlier version saved (here, ones that disagree
	// with the journal) are dropped, not used.
	legacy := func(put bool) (found bool) {
		t.Helper()
		bolttest.Update(t, filepath.Join(dir, storeFile), func(tx *bolt.Tx) error {
			if put {
				return tx.Bucket([]byte("meta")).Put([]byte("deletions"), []byte("saved by an earlier version"))
			}
			found = tx.Bucket([]byte("meta")).Get([]byte("deletions")) != nil
			return nil
		})
		return found
	}
	legacy(true)
	ix = open(dir)
	check(ix, false)
	ix.Close()
	if legacy(false) {
		t.Fatal("the deletion sets saved by an earlier version are still there")
	}

	// A manifest without the journal's mark (an older version wrote it,
	// then crashed): the live-id map is read once, and the journal serves
	// from then on.
	st, err := store.Open(filepath.Join(dir, storeFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(ctx, func(tx *store.Tx) error {
		m, _, err := tx.Manifest()
		m.Killed = false
		if err == nil {
			err = tx.ResetKilled(nil)
		}
		if err != nil {
			return err
		}
		return tx.PutManifest(m)
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ix = open(dir)
	check(ix, true)
	crashed = crashCopy(t, dir)
	ix.Close()
	c = open(crashed)
	check(c, false)
	c.Close()
}

// crashCopy copies the directory of an open index: the state a crash
// leaves (every commit is in the files).
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(out, "LOCK"))
	return out
}

// onlySegment returns the path and bytes of the one segment file in dir.
func onlySegment(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, segDir, "*"+segExt))
	if len(files) != 1 {
		t.Fatalf("segment files %q", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return files[0], data
}
