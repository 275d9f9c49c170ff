package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/demo"
	"github.com/rcpgo/rcpgo/internal/testutil/schematest"
	"github.com/rcpgo/rcpgo/rcp"
)

var demoFields = map[string]string{"topic": "keyword", "year": "int", "lang": "keyword"}

func demoPreload(t testing.TB) []Preload {
	t.Helper()
	var out []Preload
	sc := bufio.NewScanner(bytes.NewReader(demo.CorpusJSONL))
	for sc.Scan() {
		var raw struct {
			ID       string         `json:"_id"`
			Title    string         `json:"title"`
			Text     string         `json:"text"`
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, Preload{ID: raw.ID, Title: raw.Title, Text: raw.Text, Meta: raw.Metadata, Source: "demo", URI: "demo://" + raw.ID})
	}
	return out
}

// newEngine opens an engine over the demo corpus in a temporary directory.
func newEngine(t testing.TB, mutate func(*Config)) *Engine {
	t.Helper()
	cfg := Config{Dir: t.TempDir(), Fields: demoFields, Preload: demoPreload(t),
		TrustedSources: map[string]string{"demo": "trusted"}}
	cfg.IndexOpts.NoBackground = true
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// settle waits until the engine's dense upkeep has applied every write
// made so far (index/add does not wait for embedding).
func settle(t testing.TB, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := e.dense.WaitIdle(ctx); err != nil {
		t.Fatalf("dense upkeep: %v", err)
	}
}

// addSettled adds docs through a client of e and waits for the dense
// side to take them in (fitted, once MinFitDocs are there).
func addSettled(t *testing.T, e *Engine, docs []rcp.Document) {
	t.Helper()
	if _, err := connect(t, e).IndexAdd(context.Background(), &rcp.IndexAddParams{Documents: docs}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
}

// call invokes method with params (any JSON-marshallable value or a raw
// string) and validates a successful result against the schema.
func call(t testing.TB, e *Engine, method string, params any) (json.RawMessage, *rcp.Error) {
	t.Helper()
	var raw json.RawMessage
	switch p := params.(type) {
	case string:
		raw = json.RawMessage(p)
	default:
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	res, err := e.Call(context.Background(), method, raw)
	if err != nil {
		re, ok := rcp.AsError(err)
		if !ok {
			t.Fatalf("%s: non-RCP error: %v", method, err)
		}
		return nil, re
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		t.Fatal(merr)
	}
	schematest.ValidateResult(t, method, b)
	return b, nil
}

type wireHit struct {
	ID         string             `json:"id"`
	Score      float64            `json:"score"`
	Confidence *float64           `json:"confidence"`
	Text       *string            `json:"text"`
	Unit       string             `json:"unit"`
	Meta       map[string]any     `json:"meta"`
	Vector     json.RawMessage    `json:"vector"`
	Scores     map[string]float64 `json:"scores"`
	Citation   *rcp.Citation      `json:"citation"`
	Trust      *rcp.Trust         `json:"trust"`
	Chunk      *rcp.ChunkRef      `json:"chunk"`
}

type wireResult struct {
	Hits         []wireHit `json:"hits"`
	NextCursor   string    `json:"nextCursor"`
	IndexVersion string    `json:"indexVersion"`
	Usage        struct {
		Candidates *int     `json:"candidates"`
		Reranked   *int     `json:"reranked"`
		Tokens     *int     `json:"tokens"`
		Notes      []string `json:"notes"`
	} `json:"usage"`
}

func retrieve(t testing.TB, e *Engine, params map[string]any) wireResult {
	t.Helper()
	b, rerr := call(t, e, rcp.MethodRetrieve, params)
	if rerr != nil {
		t.Fatalf("retrieve %v: %v", params, rerr)
	}
	var r wireResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func ids(r wireResult) []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.ID
	}
	return out
}

func TestDescribe(t *testing.T) {
	e := newEngine(t, nil)
	d := e.Describe(context.Background())
	b, _ := json.Marshal(rcp.InitializeResult{ProtocolVersion: 1, Server: d.Server, Capabilities: d.Capabilities,
		Meta: rcp.Meta{}.Set(rcp.MetaConformance, d.Conformance)})
	schematest.ValidateResult(t, rcp.MethodInitialize, b)
	c := d.Capabilities
	if c.Retrieve == nil || !rcp.Contains(c.Retrieve.Modes, "hybrid") || c.Embed == nil || c.Filter == nil || c.Rerank != nil {
		t.Fatalf("capabilities: %s", b)
	}
	if d.Conformance != rcp.LevelL2 || !c.Index.Writable || !c.Index.Chunking || !c.Index.Contextual {
		t.Fatalf("conformance %s index %+v", d.Conformance, c.Index)
	}

	// Without a dense encoder: sparse only, scoreScale bm25, no embed.
	s := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	sc := s.Describe(context.Background()).Capabilities
	if sc.Embed != nil || len(sc.Retrieve.Modes) != 1 || sc.Retrieve.ScoreScale != "bm25" || sc.Retrieve.MMR {
		t.Fatalf("sparse-only capabilities: %+v", sc.Retrieve)
	}
	// Too small to fit: dense is not advertised.
	small := newEngine(t, func(c *Config) { c.Preload = c.Preload[:5] })
	if small.Describe(context.Background()).Capabilities.Embed != nil {
		t.Fatal("embed advertised for a 5-document corpus")
	}
	ro := newEngine(t, func(c *Config) { c.ReadOnly = true })
	if ro.Describe(context.Background()).Capabilities.Index.Writable {
		t.Fatal("read-only engine advertises writable")
	}
}

func TestRetrieveErrors(t *testing.T) {
	e := newEngine(t, nil)
	cases := []struct {
		name   string
		params string
		code   rcp.Code
		field  string
		option string
	}{
		{"k missing", `{"query":"bm25"}`, rcp.CodeInvalidParams, "k", ""},
		{"k negative", `{"query":"bm25","k":-5}`, rcp.CodeInvalidParams, "k", ""},
		{"k zero", `{"query":"bm25","k":0}`, rcp.CodeInvalidParams, "k", ""},
		{"k fractional", `{"query":"bm25","k":1.5}`, rcp.CodeInvalidParams, "k", ""},
		{"k string", `{"query":"bm25","k":"3"}`, rcp.CodeInvalidParams, "k", ""},
		{"query missing", `{"k":3}`, rcp.CodeInvalidParams, "query", ""},
		{"query wrong type", `{"query":12,"k":3}`, rcp.CodeInvalidParams, "query", ""},
		{"candidateK below k", `{"query":"bm25","k":10,"candidateK":2}`, rcp.CodeInvalidParams, "candidateK", ""},
		{"candidateK negative", `{"query":"bm25","k":1,"candidateK":-2}`, rcp.CodeInvalidParams, "candidateK", ""},
		{"topN below k", `{"query":"bm25","k":10,"rerank":{"method":"cross-encoder","topN":5}}`, rcp.CodeInvalidParams, "rerank.topN", ""},
		{"candidateK below topN", `{"query":"bm25","k":5,"candidateK":8,"rerank":{"method":"cross-encoder","topN":20}}`, rcp.CodeInvalidParams, "candidateK", ""},
		{"mode unsupported", `{"query":"bm25","k":3,"mode":"colbert"}`, rcp.CodeOptionUnsupported, "", "colbert"},
		{"fusion unsupported", `{"query":"bm25","k":3,"mode":"hybrid","fusion":{"method":"borda"}}`, rcp.CodeOptionUnsupported, "", "borda"},
		{"rerank unsupported", `{"query":"bm25","k":3,"rerank":{"method":"cross-encoder"}}`, rcp.CodeOptionUnsupported, "", "cross-encoder"},
		{"unit unsupported", `{"query":"bm25","k":3,"unit":"community"}`, rcp.CodeOptionUnsupported, "", "community"},
		{"level unsupported", `{"query":"bm25","k":3,"level":2}`, rcp.CodeOptionUnsupported, "", "level"},
		{"rewrite unsupported", `{"query":"bm25","k":3,"rewrite":"hyde"}`, rcp.CodeOptionUnsupported, "", "hyde"},
		{"image query", `{"query":[{"type":"image","mimeType":"image/png","data":"AAAA"}],"k":3}`, rcp.CodeOptionUnsupported, "", "image"},
		{"modality unsupported", `{"query":"bm25","k":3,"modality":"audio"}`, rcp.CodeOptionUnsupported, "", "audio"},
		{"bad content block", `{"query":[{"type":"image"}],"k":3}`, rcp.CodeInvalidParams, "query[0]", ""},
		{"filter unadvertised field", `{"query":"bm25","k":3,"filter":{"field":"author","op":"eq","value":"x"}}`, rcp.CodeInvalidParams, "filter.author", ""},
		{"filter ordered op on keyword", `{"query":"bm25","k":3,"filter":{"field":"topic","op":"gt","value":"a"}}`, rcp.CodeInvalidParams, "filter.op", ""},
		{"filter value type", `{"query":"bm25","k":3,"filter":{"field":"year","op":"eq","value":"1994"}}`, rcp.CodeInvalidParams, "filter.value", ""},
		{"filter empty and", `{"query":"bm25","k":3,"filter":{"and":[]}}`, rcp.CodeInvalidParams, "filter.and", ""},
		{"mmr lambda", `{"query":"bm25","k":3,"mmr":{"lambda":2}}`, rcp.CodeInvalidParams, "mmr.lambda", ""},
		{"fusion alpha", `{"query":"bm25","k":3,"mode":"hybrid","fusion":{"method":"convex","alpha":3}}`, rcp.CodeInvalidParams, "fusion.alpha", ""},
		{"fusion weight", `{"query":"bm25","k":3,"mode":"hybrid","fusion":{"method":"weighted","weights":{"dense":-1}}}`, rcp.CodeInvalidParams, "fusion.weights.dense", ""},
		{"recency field", `{"query":"bm25","k":3,"recency":{"field":"lang","halfLifeDays":30}}`, rcp.CodeInvalidParams, "recency.field", ""},
		{"recency half-life", `{"query":"bm25","k":3,"recency":{"field":"year","halfLifeDays":0}}`, rcp.CodeInvalidParams, "recency.halfLifeDays", ""},
		{"tokenBudget negative", `{"query":"bm25","k":3,"tokenBudget":-1}`, rcp.CodeInvalidParams, "tokenBudget", ""},
		{"unknown snapshot", `{"query":"bm25","k":3,"indexVersion":"no-such-snapshot"}`, rcp.CodeBackendUnavailable, "indexVersion", ""},
		{"malformed cursor", `{"query":"bm25","k":3,"cursor":"garbage"}`, rcp.CodeInvalidParams, "cursor", ""},
		{"vector encoding", `{"query":"bm25","k":3,"includeVectors":true,"encoding":"f16"}`, rcp.CodeOptionUnsupported, "", "f16"},
		{"vector encoding f32-base64", `{"query":"bm25","k":3,"includeVectors":true,"encoding":"f32-base64"}`, rcp.CodeOptionUnsupported, "", "f32-base64"},
		{"params not object", `[1]`, rcp.CodeInvalidParams, "params", ""},
		// Two faults: structure first, then the funnel, then each option
		// against the capabilities in the order planRetrieve checks them.
		{"k before mode", `{"query":"bm25","k":0,"mode":"colbert"}`, rcp.CodeInvalidParams, "k", ""},
		{"funnel before mode", `{"query":"bm25","k":10,"candidateK":2,"mode":"colbert"}`, rcp.CodeInvalidParams, "candidateK", ""},
		{"mode before fusion", `{"query":"bm25","k":3,"mode":"colbert","fusion":{"method":"borda"}}`, rcp.CodeOptionUnsupported, "", "colbert"},
		{"mmr before unit", `{"query":"bm25","k":3,"mmr":{"lambda":2},"unit":"community"}`, rcp.CodeInvalidParams, "mmr.lambda", ""},
		{"unit before cursor", `{"query":"bm25","k":3,"unit":"community","cursor":"garbage"}`, rcp.CodeOptionUnsupported, "", "community"},
		{"filter before cursor", `{"query":"bm25","k":3,"filter":{"and":[]},"cursor":"garbage"}`, rcp.CodeInvalidParams, "filter.and", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, e, rcp.MethodRetrieve, tc.params)
			if err == nil {
				t.Fatalf("want %d, got success", tc.code)
			}
			if err.Code != tc.code {
				t.Fatalf("code %d, want %d: %v", err.Code, tc.code, err)
			}
			if err.Data == nil || err.Data.Field != tc.field || err.Data.Option != tc.option {
				t.Fatalf("error.data %+v, want field %q option %q", err.Data, tc.field, tc.option)
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": err})
			schematest.Validate(t, "JsonRpcError", b)
		})
	}
}

func TestRetrieveOptions(t *testing.T) {
	e := newEngine(t, nil)
	const q = "inverted index posting lists compression"
	base := func(extra map[string]any) map[string]any {
		p := map[string]any{"query": q, "k": 5}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	t.Run("basic sparse", func(t *testing.T) {
		r := retrieve(t, e, base(nil))
		if len(r.Hits) == 0 || len(r.Hits) > 5 || r.IndexVersion == "" {
			t.Fatalf("%+v", r)
		}
		prev := 2.0
		for i, h := range r.Hits {
			if i > 0 && h.Score > r.Hits[i-1].Score {
				t.Fatal("not ordered")
			}
			if h.Confidence == nil || *h.Confidence < 0 || *h.Confidence > 1 || *h.Confidence > prev {
				t.Fatalf("confidence %v after %v", h.Confidence, prev)
			}
			prev = *h.Confidence
			if h.Citation == nil || h.Citation.Source != "demo" || h.Citation.Title == "" || h.Trust == nil || h.Trust.Level != "trusted" {
				t.Fatalf("citation/trust %+v %+v", h.Citation, h.Trust)
			}
			if h.Text == nil || *h.Citation.End != len([]rune(*h.Text)) || h.Scores["sparse"] != h.Score {
				t.Fatalf("hit %+v", h)
			}
		}
		if *r.Usage.Candidates < len(r.Hits) || r.Usage.Reranked != nil || r.Usage.Tokens == nil {
			t.Fatalf("usage %+v", r.Usage)
		}
	})
	t.Run("confidence comparable", func(t *testing.T) {
		good := retrieve(t, e, map[string]any{"query": "BM25 saturated term frequency inverse document frequency", "k": 1})
		weak := retrieve(t, e, map[string]any{"query": "frequency of the unusual zebra giraffe", "k": 1})
		if *good.Hits[0].Confidence <= *weak.Hits[0].Confidence || *good.Hits[0].Confidence < 0.7 {
			t.Fatalf("good %v weak %v", *good.Hits[0].Confidence, *weak.Hits[0].Confidence)
		}
	})
	t.Run("proximity", func(t *testing.T) {
		// "~128" lets the pair match in either order and is no ranked word
		// (128 is one in the demo corpus): every hit scores as it does for
		// the same words unquoted, with the same confidence.
		plain := retrieve(t, e, map[string]any{"query": "posting lists compression", "k": 40, "confidence": true})
		exact := retrieve(t, e, map[string]any{"query": `"lists posting" compression`, "k": 40})
		near := retrieve(t, e, map[string]any{"query": `"lists posting"~128 compression`, "k": 40, "confidence": true})
		if len(exact.Hits) != 0 || len(near.Hits) == 0 || len(near.Hits) >= len(plain.Hits) {
			t.Fatalf("exact %d, near %d, plain %d hits", len(exact.Hits), len(near.Hits), len(plain.Hits))
		}
		byID := map[string]wireHit{}
		for _, h := range plain.Hits {
			byID[h.ID] = h
		}
		for _, h := range near.Hits {
			p, ok := byID[h.ID]
			if !ok || p.Score != h.Score || *p.Confidence != *h.Confidence {
				t.Fatalf("%s: near %v, plain %+v", h.ID, h.Score, p)
			}
		}
	})
	t.Run("clamp k", func(t *testing.T) {
		r := retrieve(t, e, map[string]any{"query": "retrieval", "k": 100000, "candidateK": 100000})
		if len(r.Hits) > e.cfg.MaxK {
			t.Fatal(len(r.Hits))
		}
	})
	t.Run("minScore", func(t *testing.T) {
		all := retrieve(t, e, base(map[string]any{"k": 20}))
		cut := all.Hits[len(all.Hits)/2].Score
		r := retrieve(t, e, base(map[string]any{"k": 20, "minScore": cut}))
		if len(r.Hits) >= len(all.Hits) || len(r.Hits) == 0 {
			t.Fatalf("%d of %d", len(r.Hits), len(all.Hits))
		}
		for _, h := range r.Hits {
			if h.Score < cut {
				t.Fatal(h.Score)
			}
		}
	})
	t.Run("includeText false", func(t *testing.T) {
		for _, h := range retrieve(t, e, base(map[string]any{"includeText": false})).Hits {
			if h.Text != nil {
				t.Fatal("text included")
			}
		}
	})
	t.Run("null as absent", func(t *testing.T) {
		retrieve(t, e, base(map[string]any{"mode": nil, "filter": nil, "cursor": nil, "candidateK": nil}))
	})
	t.Run("filters", func(t *testing.T) {
		for _, f := range []struct {
			filter any
			ok     func(map[string]any) bool
		}{
			{map[string]any{"field": "topic", "op": "eq", "value": "indexing"}, func(m map[string]any) bool { return m["topic"] == "indexing" }},
			{map[string]any{"field": "topic", "op": "ne", "value": "indexing"}, func(m map[string]any) bool { return m["topic"] != "indexing" }},
			{map[string]any{"and": []any{map[string]any{"field": "year", "op": "gte", "value": 2000}, map[string]any{"field": "lang", "op": "eq", "value": "en"}}},
				func(m map[string]any) bool { return m["year"].(float64) >= 2000 }},
			{map[string]any{"field": "topic", "op": "in", "value": []any{"ranking", "indexing"}}, func(m map[string]any) bool { return m["topic"] == "ranking" || m["topic"] == "indexing" }},
			{map[string]any{"field": "topic", "op": "nin", "value": []any{"ranking", "indexing"}}, func(m map[string]any) bool { return m["topic"] != "ranking" && m["topic"] != "indexing" }},
			{map[string]any{"not": map[string]any{"field": "year", "op": "lt", "value": 1990}}, func(m map[string]any) bool { return m["year"].(float64) >= 1990 }},
			{map[string]any{"field": "topic", "op": "contains", "value": "index"}, func(m map[string]any) bool { return strings.Contains(m["topic"].(string), "index") }},
			{map[string]any{"field": "year", "op": "exists", "value": true}, func(m map[string]any) bool { return m["year"] != nil }},
		} {
			for _, mode := range []string{"sparse", "dense", "hybrid"} {
				r := retrieve(t, e, map[string]any{"query": "retrieval index ranking documents", "k": 40, "mode": mode, "filter": f.filter})
				if len(r.Hits) == 0 && mode == "sparse" {
					t.Fatalf("filter %v: no hits", f.filter)
				}
				for _, h := range r.Hits {
					if !f.ok(h.Meta) {
						t.Fatalf("filter %v mode %s: hit %s meta %v", f.filter, mode, h.ID, h.Meta)
					}
				}
			}
		}
	})
	t.Run("unit document", func(t *testing.T) {
		r := retrieve(t, e, base(map[string]any{"unit": "document"}))
		for _, h := range r.Hits {
			if h.Unit != "document" {
				t.Fatal(h.Unit)
			}
		}
	})
	t.Run("token budget", func(t *testing.T) {
		all := retrieve(t, e, base(map[string]any{"k": 10}))
		r := retrieve(t, e, base(map[string]any{"k": 10, "tokenBudget": 120}))
		if len(r.Hits) >= len(all.Hits) || *r.Usage.Tokens > 120 || *r.Usage.Tokens == 0 {
			t.Fatalf("%d hits, %d tokens (of %d)", len(r.Hits), *r.Usage.Tokens, len(all.Hits))
		}
		if one := retrieve(t, e, base(map[string]any{"tokenBudget": 1})); len(one.Hits) != 0 || len(one.Usage.Notes) == 0 {
			t.Fatalf("%+v", one)
		}
	})
	t.Run("recency", func(t *testing.T) {
		r := retrieve(t, e, base(map[string]any{"k": 10, "recency": map[string]any{"field": "year", "halfLifeDays": 3650}}))
		if len(r.Hits) == 0 || len(r.Usage.Notes) == 0 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("modes and fusion", func(t *testing.T) {
		for _, p := range []map[string]any{
			{"mode": "dense"},
			{"mode": "hybrid"},
			{"mode": "hybrid", "fusion": map[string]any{"method": "rrf", "rrfK": 10}},
			{"mode": "hybrid", "fusion": map[string]any{"method": "weighted", "weights": map[string]any{"dense": 0.3, "sparse": 0.7}}},
			{"mode": "hybrid", "fusion": map[string]any{"method": "convex", "alpha": 0.25}},
		} {
			r := retrieve(t, e, base(p))
			if len(r.Hits) == 0 {
				t.Fatalf("%v: no hits", p)
			}
			for _, h := range r.Hits {
				if h.Score < 0 {
					t.Fatalf("%v: score %v below scoreFloor 0", p, h.Score)
				}
				if p["mode"] == "hybrid" && h.Scores["fused"] != h.Score {
					t.Fatalf("%v: scores %v", p, h.Scores)
				}
			}
		}
	})
	t.Run("mmr", func(t *testing.T) {
		plain := retrieve(t, e, base(map[string]any{"k": 8}))
		div := retrieve(t, e, base(map[string]any{"k": 8, "mmr": map[string]any{"lambda": 0.3}}))
		if len(div.Hits) != len(plain.Hits) || div.Hits[0].ID != plain.Hits[0].ID {
			t.Fatalf("%v vs %v", ids(div), ids(plain))
		}
	})
	t.Run("vectors", func(t *testing.T) {
		dim := e.Describe(context.Background()).Capabilities.Embed.Dimension
		r := retrieve(t, e, base(map[string]any{"includeVectors": true}))
		var v []float64
		if err := json.Unmarshal(r.Hits[0].Vector, &v); err != nil || len(v) != dim {
			t.Fatalf("%s", r.Hits[0].Vector)
		}
	})
	t.Run("strict false falls back", func(t *testing.T) {
		r := retrieve(t, e, base(map[string]any{"strict": false, "mode": "colbert", "rerank": map[string]any{"method": "llm"}, "unit": "subgraph"}))
		if len(r.Hits) == 0 || len(r.Usage.Notes) < 3 {
			t.Fatalf("%+v", r.Usage)
		}
	})
	t.Run("deterministic with seed", func(t *testing.T) {
		a := retrieve(t, e, base(map[string]any{"seed": 7, "mode": "hybrid", "mmr": map[string]any{"lambda": 0.5}}))
		b := retrieve(t, e, base(map[string]any{"seed": 7, "mode": "hybrid", "mmr": map[string]any{"lambda": 0.5}}))
		ja, _ := json.Marshal(a.Hits)
		jb, _ := json.Marshal(b.Hits)
		if !bytes.Equal(ja, jb) {
			t.Fatal("results differ")
		}
	})
}

func TestPaginationAndSnapshots(t *testing.T) {
	e := newEngine(t, nil)
	for _, mode := range []string{"sparse", "hybrid"} {
		single := retrieve(t, e, map[string]any{"query": "retrieval ranking index", "k": 12, "mode": mode})
		var paged []string
		p := map[string]any{"query": "retrieval ranking index", "k": 3, "mode": mode}
		for i := 0; i < 10; i++ {
			r := retrieve(t, e, p)
			paged = append(paged, ids(r)...)
			if r.NextCursor == "" {
				break
			}
			p["cursor"] = r.NextCursor
		}
		seen := map[string]bool{}
		for _, id := range paged {
			if seen[id] {
				t.Fatalf("%s: duplicate %s in %v", mode, id, paged)
			}
			seen[id] = true
		}
		if len(paged) < len(ids(single)) || fmt.Sprint(paged[:len(single.Hits)]) != fmt.Sprint(ids(single)) {
			t.Fatalf("%s: pages %v vs single %v", mode, paged, ids(single))
		}
	}
	// A cursor for other options is rejected.
	r := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2})
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "other", "k": 2, "cursor": r.NextCursor}); err == nil || err.Code != rcp.CodeInvalidParams {
		t.Fatalf("foreign cursor: %v", err)
	}
	// Snapshot pinning survives a write for sparse and fails cleanly for dense.
	before := retrieve(t, e, map[string]any{"query": "zanzibar retrieval", "k": 3})
	if _, err := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "zz", "text": "zanzibar zanzibar retrieval"}}}); err != nil {
		t.Fatal(err)
	}
	pinned := retrieve(t, e, map[string]any{"query": "zanzibar retrieval", "k": 3, "indexVersion": before.IndexVersion})
	if pinned.IndexVersion != before.IndexVersion || fmt.Sprint(ids(pinned)) != fmt.Sprint(ids(before)) {
		t.Fatalf("pinned %v %v vs %v", pinned.IndexVersion, ids(pinned), ids(before))
	}
	if now := retrieve(t, e, map[string]any{"query": "zanzibar retrieval", "k": 3}); now.Hits[0].ID != "zz" {
		t.Fatalf("new doc not visible: %v", ids(now))
	}
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "zanzibar", "k": 3, "mode": "hybrid", "indexVersion": before.IndexVersion}); err == nil || err.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("dense pin of an old snapshot: %v", err)
	}
	// A sparse cursor keeps paging the snapshot it was issued for.
	page1 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2})
	call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "zz2", "text": "retrieval retrieval retrieval"}}})
	page2 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "cursor": page1.NextCursor})
	if page2.IndexVersion != page1.IndexVersion {
		t.Fatalf("cursor served %s, issued for %s", page2.IndexVersion, page1.IndexVersion)
	}
	// A hybrid cursor pages the list its first page kept, across writes
	// (issue 31; TestDenseAndHybridPaging); once the list is no longer kept
	// the cursor has expired.
	hy := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "mode": "hybrid"})
	call(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"zz2"}})
	next := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "mode": "hybrid", "cursor": hy.NextCursor})
	if next.IndexVersion != hy.IndexVersion || len(next.Hits) == 0 || slices.Contains(ids(next), ids(hy)[0]) {
		t.Fatalf("hybrid page 2 after a write: %s %v, page 1 %s %v", next.IndexVersion, ids(next), hy.IndexVersion, ids(hy))
	}
	e.retriever.DropLists() // every list expires at once
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "retrieval", "k": 2, "mode": "hybrid", "cursor": hy.NextCursor}); err == nil || err.Code != rcp.CodeNotFound {
		t.Fatalf("expired dense cursor: %v", err)
	}
}
