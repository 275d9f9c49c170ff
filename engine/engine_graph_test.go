package engine

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

var (
	mhDocs      = flag.Int("multihop.docs", 1200, "documents of the multihop quality test")
	mhQuestions = flag.Int("multihop.questions", 100, "questions of the multihop quality test")
)

// multihopEngine ingests a generated multihop corpus through index/add,
// reopens the engine (so LSA is fitted on the whole corpus: hybrid is
// real) and waits for the graph.
func multihopEngine(t testing.TB, m *gen.Multihop, dir string, graphOn bool) (*Engine, time.Duration) {
	t.Helper()
	ctx := context.Background()
	cfg := Config{Dir: dir, Graph: graphOn, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ingest := cfg
	ingest.MinFitDocs = 1 << 30 // fit once, after the reopen
	e, err := Open(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for lo := 0; lo < len(m.Docs); lo += 500 {
		var docs []map[string]any
		for _, d := range m.Docs[lo:min(lo+500, len(m.Docs))] {
			docs = append(docs, map[string]any{"id": d.ID, "text": d.Title + "\n" + d.Text})
		}
		if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": docs}); rerr != nil {
			t.Fatal(rerr)
		}
	}
	if graphOn {
		if err := e.SyncGraph(ctx); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	settle(t, e) // the LSA fit runs in the background
	if graphOn {
		if err := e.SyncGraph(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return e, took
}

type mhScore struct{ both, ndcg float64 }

// scoreMultihop: Recall@10 counts a question when both supports are in
// the top 10; nDCG@10 uses binary gains over the two supports.
func scoreMultihop(m *gen.Multihop, run func(q gen.MultihopQuestion) []string) mhScore {
	var s mhScore
	idcg := 1 + 1/math.Log2(3)
	for _, q := range m.Questions {
		top := run(q)
		top = top[:min(10, len(top))]
		found, dcg := 0, 0.0
		for i, id := range top {
			if id == q.Supports[0] || id == q.Supports[1] {
				found++
				dcg += 1 / math.Log2(float64(i+2))
			}
		}
		if found == 2 {
			s.both++
		}
		s.ndcg += dcg / idcg
	}
	n := float64(len(m.Questions))
	return mhScore{s.both / n, s.ndcg / n}
}

func hitIDs(t testing.TB, raw json.RawMessage) []string {
	var r struct {
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.ID
	}
	return out
}

func mustCall(t testing.TB, e *Engine, method string, params any) json.RawMessage {
	t.Helper()
	b, rerr := call(t, e, method, params)
	if rerr != nil {
		t.Fatalf("%s %v: %v", method, params, rerr)
	}
	return b
}

// multihopSystems runs every compared system on m.
func multihopSystems(t testing.TB, e *Engine, m *gen.Multihop) map[string]mhScore {
	retrieveIDs := func(q, mode string) []string {
		return hitIDs(t, mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": q, "k": 10, "mode": mode}))
	}
	out := map[string]mhScore{
		"retrieve sparse": scoreMultihop(m, func(q gen.MultihopQuestion) []string { return retrieveIDs(q.Text, "sparse") }),
		"retrieve hybrid": scoreMultihop(m, func(q gen.MultihopQuestion) []string { return retrieveIDs(q.Text, "hybrid") }),
		"graph local": scoreMultihop(m, func(q gen.MultihopQuestion) []string {
			return hitIDs(t, mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "local", "query": q.Text, "k": 10}))
		}),
		"graph drift": scoreMultihop(m, func(q gen.MultihopQuestion) []string {
			return hitIDs(t, mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "drift", "query": q.Text, "k": 10}))
		}),
		// The client loop of §7.17: recall clues, retrieve the question and
		// every clue's surrogate query, fuse by weighted RRF.
		"retrieve + memory/recall clues": scoreMultihop(m, func(q gen.MultihopQuestion) []string {
			var rec rcp.MemoryRecallResult
			if err := json.Unmarshal(mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": q.Text, "n": 1}), &rec); err != nil {
				t.Fatal(err)
			}
			lists := []fusion.List{{Engine: "q", Hits: idsToHits(retrieveIDs(q.Text, "sparse"))}}
			for _, c := range rec.Clues {
				lists = append(lists, fusion.List{Engine: "clue", Hits: idsToHits(retrieveIDs(c.Query, "sparse")), Weight: c.Weight})
			}
			k := 10
			fused, err := fusion.Fuse(lists, fusion.Options{K: &k})
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(fused))
			for i, f := range fused {
				ids[i] = f.ID
			}
			return ids
		}),
	}
	return out
}

func idsToHits(ids []string) []rcp.Hit {
	out := make([]rcp.Hit, len(ids))
	for i, id := range ids {
		out[i] = rcp.Hit{ID: rcp.StringID(id), Score: float64(len(ids) - i)}
	}
	return out
}

// TestGraphMultihopFloors: on a generated two-hop corpus the graph and
// memory paths find both supporting documents far more often than plain
// retrieval (which finds the document naming A but rarely the bridge's).
// go test ./engine -run TestGraphMultihopFloors -v -multihop.docs 5000 -multihop.questions 300
// reproduces the figures in docs/rcpd.md.
func TestGraphMultihopFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the graph of a synthetic multi-hop corpus; skipped with -short")
	}
	m, err := gen.NewMultihop(gen.MultihopConfig{Seed: 1, Docs: *mhDocs, Questions: *mhQuestions})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := multihopEngine(t, m, t.TempDir(), true)
	scores := multihopSystems(t, e, m)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range scores {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		t.Logf("%-32s Recall@10(both)=%.3f nDCG@10=%.3f", n, scores[n].both, scores[n].ndcg)
	}
	// How often the top summary of a level covers both supporting
	// documents (its provenance.leaves name both): reported, no floor.
	if err := e.SyncTree(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		unit  string
		level int
	}{{rcp.UnitTreeNode, 1}, {rcp.UnitTreeNode, 2}, {rcp.UnitCommunity, 0}, {rcp.UnitCommunity, 1}} {
		t.Logf("%-9s level %d: top-1 summary covers both supports in %.3f of questions", u.unit, u.level, summaryCoverage(t, e, m, u.unit, u.level))
	}
	base := math.Max(scores["retrieve sparse"].both, scores["retrieve hybrid"].both)
	for name, margin := range map[string]float64{"graph local": 0.3, "graph drift": 0.3, "retrieve + memory/recall clues": 0.2} {
		if got := scores[name].both; got < base+margin {
			t.Errorf("%s Recall@10(both) = %.3f, want ≥ plain retrieve %.3f + %.2f", name, got, base, margin)
		}
	}
}

// summaryCoverage is the share of m's questions whose top hit of unit at
// level names both supporting documents among its provenance.leaves.
func summaryCoverage(t testing.TB, e *Engine, m *gen.Multihop, unit string, level int) float64 {
	covered := 0
	for _, q := range m.Questions {
		var r struct{ Hits []rcp.Hit }
		if err := json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": q.Text, "k": 1, "unit": unit, "level": level}), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) == 1 && r.Hits[0].Provenance != nil &&
			slices.Contains(r.Hits[0].Provenance.Leaves, q.Supports[0]) && slices.Contains(r.Hits[0].Provenance.Leaves, q.Supports[1]) {
			covered++
		}
	}
	return float64(covered) / float64(max(len(m.Questions), 1))
}

// chainDocs is a small two-hop world for the API tests.
var chainDocs = []map[string]any{
	{"id": "d1", "text": "Anna Vale was mentored by Boris Kent."},
	{"id": "d2", "text": "Boris Kent was born in Cara Town."},
	{"id": "d3", "text": "Anna Vale was born in Dova Springs."},
	{"id": "d4", "text": "Boris Kent founded Emor Works."},
	{"id": "d5", "text": "Felix Hart married Hana Sol."},
}

func graphEngine(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := Open(context.Background(), Config{Dir: dir, Graph: true, Dense: DenseNone,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestGraphOps(t *testing.T) {
	ctx := context.Background()
	e := graphEngine(t, t.TempDir())
	defer e.Close()
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": chainDocs})
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	caps := e.Describe(ctx).Capabilities
	if caps.Graph == nil || len(caps.Graph.Ops) != 5 || caps.Memory == nil || !caps.Memory.Clues {
		t.Fatalf("caps graph %+v memory %+v", caps.Graph, caps.Memory)
	}

	var local struct {
		Hits []struct {
			ID         string          `json:"id"`
			Text       string          `json:"text"`
			Provenance *rcp.Provenance `json:"provenance"`
		} `json:"hits"`
	}
	json.Unmarshal(mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "local", "query": "Where was the mentor of Anna Vale born?", "k": 3}), &local)
	got := map[string]*rcp.Provenance{}
	for _, h := range local.Hits {
		got[h.ID] = h.Provenance
	}
	if p := got["d2"]; p == nil || got["d1"] == nil || len(p.Path) < 2 || p.Path[0] != "anna vale" || len(p.Edges) != len(p.Path)-1 {
		t.Fatalf("local hits %+v", local.Hits)
	}

	var drift rcp.GraphResult
	json.Unmarshal(mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "drift", "query": "Where was the mentor of Anna Vale born?"}), &drift)
	if len(drift.Hits) == 0 || len(drift.Followups) == 0 || drift.Followups[0] != "boris kent born" {
		t.Fatalf("drift %+v", drift)
	}
	var glob rcp.GraphResult
	json.Unmarshal(mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "global", "query": "Felix Hart"}), &glob)
	if len(glob.Communities) == 0 || glob.Summary == "" || glob.Communities[0].Score == nil {
		t.Fatalf("global %+v", glob)
	}
	var comms rcp.GraphResult
	json.Unmarshal(mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "communities", "level": 0, "k": 50}), &comms)
	if len(comms.Communities) < 2 || comms.Communities[0].Level == nil || *comms.Communities[0].Level != 0 {
		t.Fatalf("communities %+v", comms)
	}
	var nb rcp.GraphResult
	json.Unmarshal(mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "neighbors", "seedIds": []string{"Boris Kent"}, "hops": 1}), &nb)
	if len(nb.Nodes) != 4 || len(nb.Edges) == 0 {
		t.Fatalf("neighbors %+v", nb)
	}
	// A query naming nothing in the graph: the op's key is present, empty.
	if b := mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "local", "query": "zzz"}); string(b) != `{"hits":[]}` {
		t.Fatalf("empty local = %s", b)
	}

	for _, tc := range []struct {
		params map[string]any
		code   rcp.Code
		field  string
	}{
		{map[string]any{"query": "x"}, rcp.CodeInvalidParams, "op"},
		{map[string]any{"op": "paths", "query": "x"}, rcp.CodeOptionUnsupported, ""},
		{map[string]any{"op": "local", "query": "x", "k": 0}, rcp.CodeInvalidParams, "k"},
		{map[string]any{"op": "local", "query": "x", "hops": 9}, rcp.CodeInvalidParams, "hops"},
		{map[string]any{"op": "communities", "level": 99}, rcp.CodeInvalidParams, "level"},
		{map[string]any{"op": "communities", "level": -1}, rcp.CodeInvalidParams, "level"},
		{map[string]any{"op": "local"}, rcp.CodeInvalidParams, "query"},
		{map[string]any{"op": "local", "query": "x", "cursor": "abc"}, rcp.CodeInvalidParams, "cursor"},
		{map[string]any{"op": "local", "query": 5}, rcp.CodeInvalidParams, "query"},
	} {
		_, rerr := call(t, e, rcp.MethodGraph, tc.params)
		if rerr == nil || rerr.Code != tc.code || (tc.field != "" && (rerr.Data == nil || rerr.Data.Field != tc.field)) {
			t.Errorf("%v: got %+v, want code %d field %q", tc.params, rerr, tc.code, tc.field)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Call(cctx, rcp.MethodGraph, json.RawMessage(`{"op":"local","query":"Anna Vale"}`)); err == nil {
		t.Fatal("cancelled graph local succeeded")
	}

	// Deletes reach the graph.
	mustCall(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"d2"}})
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := hitIDs(t, mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "local", "query": "Boris Kent", "k": 10})); slices.Contains(ids, "d2") {
		t.Fatalf("deleted d2 still a hit: %v", ids)
	}
}

func TestMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := graphEngine(t, dir)
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": chainDocs})
	var g rcp.MemoryBuildResult
	json.Unmarshal(mustCall(t, e, rcp.MethodMemoryBuild, map[string]any{}), &g)
	if g.MemoryID != GlobalMemoryID || g.Tokens == nil || *g.Tokens == 0 {
		t.Fatalf("global build %+v", g)
	}
	var rec rcp.MemoryRecallResult
	json.Unmarshal(mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": "Where was the mentor of Anna Vale born?", "n": 2}), &rec)
	if len(rec.Clues) == 0 || rec.Clues[0].Query != "boris kent born" || rec.Clues[0].SeedIDs[0] != "boris kent" || len(rec.Hits) == 0 {
		t.Fatalf("global recall %+v", rec)
	}
	// The clue's seed id feeds graph local.
	if ids := hitIDs(t, mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "local", "seedIds": rec.Clues[0].SeedIDs, "query": "born", "k": 1})); len(ids) != 1 || ids[0] != "d2" {
		t.Fatalf("local from clue seed: %v", ids)
	}

	inline := map[string]any{"documents": []map[string]any{{"id": "x1", "text": "Lena Moor was trained by Otto Pike."}, {"text": "Otto Pike lived in Rhea Bay."}}}
	var b rcp.MemoryBuildResult
	json.Unmarshal(mustCall(t, e, rcp.MethodMemoryBuild, inline), &b)
	var s rcp.MemoryBuildResult
	json.Unmarshal(mustCall(t, e, rcp.MethodMemoryBuild, map[string]any{"scope": "session", "documents": inline["documents"]}), &s)
	if b.MemoryID == "" || s.MemoryID == "" || b.MemoryID == s.MemoryID {
		t.Fatalf("inline builds %+v %+v", b, s)
	}
	recallOf := func(e *Engine, id string) rcp.MemoryRecallResult {
		var r rcp.MemoryRecallResult
		json.Unmarshal(mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": "Where did the person who trained Lena Moor live?", "memoryId": id}), &r)
		return r
	}
	if r := recallOf(e, b.MemoryID); len(r.Clues) == 0 || r.Clues[0].Query != "otto pike person live" {
		t.Fatalf("inline recall %+v", r)
	}
	if b := mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": "nothing here"}); string(b) != `{"clues":[]}` {
		t.Fatalf("empty recall = %s", b)
	}
	for _, tc := range []struct {
		method string
		params map[string]any
		code   rcp.Code
		field  string
	}{
		{rcp.MethodMemoryRecall, map[string]any{}, rcp.CodeInvalidParams, "query"},
		{rcp.MethodMemoryRecall, map[string]any{"query": "x", "n": 0}, rcp.CodeInvalidParams, "n"},
		{rcp.MethodMemoryRecall, map[string]any{"query": "x", "memoryId": "nope"}, rcp.CodeNotFound, "memoryId"},
		{rcp.MethodMemoryBuild, map[string]any{"scope": "galaxy"}, rcp.CodeOptionUnsupported, ""},
		{rcp.MethodMemoryBuild, map[string]any{"scope": "session"}, rcp.CodeInvalidParams, "documents"},
		{rcp.MethodMemoryBuild, map[string]any{"memoryId": "nope", "documents": []any{map[string]any{"text": "a"}}}, rcp.CodeNotFound, "memoryId"},
		{rcp.MethodMemoryBuild, map[string]any{"memoryId": "global", "documents": []any{map[string]any{"text": "a"}}}, rcp.CodeInvalidParams, "memoryId"},
		{rcp.MethodMemoryBuild, map[string]any{"documents": []any{map[string]any{"id": 3}}}, rcp.CodeInvalidParams, "documents[0].id"},
		{rcp.MethodMemoryBuild, map[string]any{"documents": []any{map[string]any{}}}, rcp.CodeInvalidParams, "documents[0].text"},
	} {
		_, rerr := call(t, e, tc.method, tc.params)
		if rerr == nil || rerr.Code != tc.code || (tc.field != "" && (rerr.Data == nil || rerr.Data.Field != tc.field)) {
			t.Errorf("%s %v: got %+v, want code %d field %q", tc.method, tc.params, rerr, tc.code, tc.field)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Global-scope memories persist; session ones do not.
	e = graphEngine(t, dir)
	defer e.Close()
	if r := recallOf(e, b.MemoryID); len(r.Clues) == 0 {
		t.Fatalf("persisted memory lost: %+v", r)
	}
	if _, rerr := call(t, e, rcp.MethodMemoryRecall, map[string]any{"query": "x", "memoryId": s.MemoryID}); rerr == nil || rerr.Code != rcp.CodeNotFound {
		t.Fatalf("session memory survived a restart: %v", rerr)
	}
	// The graph snapshot was loaded: no rebuild needed to answer.
	if st := e.GraphStats(); st.Units != len(chainDocs) {
		t.Fatalf("graph after reopen: %+v", st)
	}
	_ = ctx
}
