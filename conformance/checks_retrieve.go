package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

type hitView struct {
	key   string // idKey of the id
	id    json.RawMessage
	score float64
	hasSc bool
	raw   map[string]json.RawMessage
}

type retrieveView struct {
	hits         []hitView
	nextCursor   string
	indexVersion string
	usage        map[string]any
	raw          json.RawMessage
}

func decodeRetrieve(result json.RawMessage) (*retrieveView, error) {
	var w struct {
		Hits         []map[string]json.RawMessage `json:"hits"`
		NextCursor   any                          `json:"nextCursor"`
		IndexVersion any                          `json:"indexVersion"`
		Usage        map[string]any               `json:"usage"`
	}
	if err := json.Unmarshal(result, &w); err != nil {
		return nil, err
	}
	if w.Hits == nil {
		return nil, fmt.Errorf("no hits array")
	}
	v := &retrieveView{usage: w.Usage, raw: result}
	v.nextCursor, _ = w.NextCursor.(string)
	v.indexVersion, _ = w.IndexVersion.(string)
	for _, h := range w.Hits {
		hv := hitView{raw: h, id: h["id"], key: idKey(h["id"])}
		var f float64
		if json.Unmarshal(h["score"], &f) == nil && len(h["score"]) > 0 && string(h["score"]) != "null" {
			hv.score, hv.hasSc = f, true
		}
		v.hits = append(v.hits, hv)
	}
	return v, nil
}

func (v *retrieveView) ids() []string {
	out := make([]string, len(v.hits))
	for i, h := range v.hits {
		out[i] = h.key
	}
	return out
}

func (v *retrieveView) usageInt(key string) (int, bool) {
	f, ok := v.usage[key].(float64)
	if !ok || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// retrieve runs a retrieve and decodes it; a non-nil outcome reports failure.
func (s *suite) retrieve(ctx context.Context, params map[string]any) (*retrieveView, *response, *outcome) {
	r := s.call(ctx, "retrieve", params)
	if !r.ok() {
		o := fail("retrieve %s: %s", truncate(string(mustJSON(params)), 160), r)
		return nil, r, &o
	}
	v, err := decodeRetrieve(r.Result)
	if err != nil {
		o := fail("retrieve result: %v: %s", err, r)
		return nil, r, &o
	}
	return v, r, nil
}

// probeQuery finds a query that yields hits on this server's corpus.
func (s *suite) probeQuery(ctx context.Context) string {
	if s.query != "" {
		return s.query
	}
	best, bestN := "conformance", -1
	for _, q := range []string{"paris france tower", "the", "document", "retrieval search index", "a", "test"} {
		v, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 10})
		if o != nil {
			continue
		}
		if len(v.hits) > bestN {
			best, bestN = q, len(v.hits)
		}
		if bestN >= 3 {
			break
		}
	}
	s.query = best
	return best
}

func (s *suite) maxK() int {
	if n, ok := s.capInt("retrieve.maxK"); ok && n > 0 {
		return n
	}
	return 0
}

// ---------------------------------------------------------------- §7 gating

func gatingChecks() []Check {
	return []Check{
		{ID: "gating.capability-missing", Name: "an un-advertised capability's method is rejected with -32003", Level: L0, Section: "§7, §12, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				for _, mc := range [][2]string{{"catalog/list", "catalog"}, {"feedback", "feedback"}, {"memory/recall", "memory"},
					{"index/delete", "index"}, {"query/transform", "transform"}, {"graph", "graph"}, {"embed/sparse", "sparseEmbed"},
					{"embed/multi", "multiVector"}, {"rerank", "rerank"}, {"embed", "embed"}, {"retrieve", "retrieve"}} {
					if s.has(mc[1]) {
						continue
					}
					r := s.call(ctx, mc[0], map[string]any{})
					return check(r.code() == -32003, "%s (capability %s not advertised): want -32003, got %s", mc[0], mc[1], r)
				}
				return skip("every gated capability is advertised")
			}},
		{ID: "gating.capability-missing-valid-params", Name: "gating precedes params validation: well-formed call to an un-advertised method is -32003", Level: L0, Section: "§7, §12", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				probes := []struct {
					m, c string
					p    map[string]any
				}{
					{"index/delete", "index", map[string]any{"ids": []string{"rcp-conformance-none"}}},
					{"graph", "graph", map[string]any{"op": "local", "query": "x"}},
					{"query/transform", "transform", map[string]any{"query": "x", "method": "rewrite"}},
					{"rerank", "rerank", map[string]any{"query": "x", "passages": []string{"a"}}},
					{"embed", "embed", map[string]any{"inputs": []string{"a"}}},
				}
				for _, p := range probes {
					if s.has(p.c) {
						continue
					}
					r := s.call(ctx, p.m, p.p)
					return check(r.code() == -32003, "%s: want -32003, got %s", p.m, r)
				}
				return skip("every probed capability is advertised")
			}},
		{ID: "gating.vendor-method", Name: "an un-advertised x-vendor method is rejected (-32003 or -32004)", Level: L0, Section: "§6.2", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "x-rcpconformance/probe", map[string]any{})
				return check(r.code() == -32003 || r.code() == -32004, "want -32003 or -32004, got %s", r)
			}},
		{ID: "gating.mode-unsupported", Name: "an un-advertised retrieve mode is rejected with -32005", Level: L0, Section: "§7.7, §12, §14.1", Requirement: Must, Needs: []string{"retrieve.modes"},
			run: func(ctx context.Context, s *suite) outcome {
				mode := missing(s.capStrings("retrieve.modes"), "dense", "sparse", "hybrid")
				if mode == "" {
					return skip("all three modes are advertised")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 1, "mode": mode})
				return check(r.code() == -32005, "mode %q: want -32005, got %s", mode, r)
			}},
		{ID: "gating.option-data", Name: "-32005 errors name the option in error.data.option", Level: L1, Section: "§12, §12.1", Requirement: Should, Needs: []string{"retrieve.modes"},
			run: func(ctx context.Context, s *suite) outcome {
				mode := missing(s.capStrings("retrieve.modes"), "dense", "sparse", "hybrid")
				if mode == "" {
					return skip("all three modes are advertised")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 1, "mode": mode})
				if r.code() != -32005 {
					return skip("mode not rejected with -32005 (see gating.mode-unsupported)")
				}
				return check(r.errData("option") != "", "error.data.option missing: %s", r)
			}},
		{ID: "gating.strict-false", Name: "strict:false falls back (noted in usage.notes) or rejects with -32005", Level: L1, Section: "§7.7", Requirement: Should, Needs: []string{"retrieve.modes"},
			run: func(ctx context.Context, s *suite) outcome {
				mode := missing(s.capStrings("retrieve.modes"), "dense", "sparse", "hybrid")
				if mode == "" {
					return skip("all three modes are advertised")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 1, "mode": mode, "strict": false})
				if r.code() == -32005 {
					return passf("server rejects even with strict:false (allowed)")
				}
				if !r.ok() {
					return fail("want a fallback result or -32005, got %s", r)
				}
				v, err := decodeRetrieve(r.Result)
				if err != nil {
					return fail("%v", err)
				}
				notes, _ := v.usage["notes"].([]any)
				return check(len(notes) > 0, "fell back from mode %q without a usage.notes entry", mode)
			}},
		{ID: "gating.fusion-unsupported", Name: "an un-advertised fusion method is rejected with -32005", Level: L2, Section: "§7.7, §12", Requirement: Must, Needs: []string{"retrieve.fusion"},
			run: func(ctx context.Context, s *suite) outcome {
				f := missing(s.capStrings("retrieve.fusion"), "rrf", "weighted", "convex")
				if f == "" {
					return skip("all fusion methods are advertised")
				}
				p := map[string]any{"query": "conformance", "k": 1, "fusion": map[string]any{"method": f}}
				if modes := s.capStrings("retrieve.modes"); len(modes) == 0 || slices.Contains(modes, "hybrid") {
					p["mode"] = "hybrid"
				}
				r := s.call(ctx, "retrieve", p)
				return check(r.code() == -32005, "fusion %q: want -32005, got %s", f, r)
			}},
		{ID: "gating.rerank-method-unsupported", Name: "rerank with an un-advertised method is rejected with -32005", Level: L2, Section: "§7.6, §12", Requirement: Must, Needs: []string{"rerank"},
			run: func(ctx context.Context, s *suite) outcome {
				m := missing(s.capStrings("rerank.methods"), "cross-encoder", "colbert", "llm")
				if m == "" {
					return skip("all rerank methods are advertised")
				}
				r := s.call(ctx, "rerank", map[string]any{"query": "conformance", "passages": []string{"a", "b"}, "method": m})
				return check(r.code() == -32005, "method %q: want -32005, got %s", m, r)
			}},
		{ID: "gating.modality-unsupported", Name: "an image query block on a text-only retrieve is rejected with -32005", Level: L1, Section: "§4.8", Requirement: Must, Needs: []string{"retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				mods := s.capStrings("retrieve.modalities")
				if slices.Contains(mods, "image") || slices.Contains(mods, "multimodal") {
					return skip("server advertises image retrieval")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}, "k": 1})
				return check(r.code() == -32005, "want -32005, got %s", r)
			}},
		{ID: "gating.encoding-unsupported", Name: "an un-advertised embed encoding is rejected with -32005", Level: L1, Section: "§7.3.1", Requirement: Must, Needs: []string{"embed"},
			run: func(ctx context.Context, s *suite) outcome {
				if slices.Contains(s.capStrings("embed.encodings"), "f32-base64") {
					return skip("f32-base64 is advertised")
				}
				r := s.call(ctx, "embed", map[string]any{"inputs": []string{"conformance"}, "encoding": "f32-base64"})
				return check(r.code() == -32005, "want -32005, got %s", r)
			}},
	}
}

// missing returns the first candidate not in list.
func missing(list []string, candidates ...string) string {
	for _, c := range candidates {
		if !slices.Contains(list, c) {
			return c
		}
	}
	return ""
}

// ---------------------------------------------------------------- §7.7 retrieve

func retrieveChecks() []Check {
	need := []string{"retrieve"}
	return []Check{
		{ID: "retrieve.basic", Name: "retrieve returns a schema-valid ranked hits array", Level: L1, Section: "§7.7, §14.2", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				q := s.probeQuery(ctx)
				_, r, o := s.retrieve(ctx, map[string]any{"query": q, "k": 3})
				if o != nil {
					return *o
				}
				if err := s.validateResult("retrieve", r.Result); err != nil {
					return fail("%v", err)
				}
				return pass()
			}},
		{ID: "retrieve.k-ceiling", Name: "retrieve never returns more than k hits", Level: L1, Section: "§7.7, §14.2", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				for _, k := range []int{1, 2, 3} {
					v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": k})
					if o != nil {
						return *o
					}
					if len(v.hits) > k {
						return fail("k=%d returned %d hits", k, len(v.hits))
					}
				}
				return pass()
			}},
		{ID: "retrieve.ordered", Name: "hits are ordered by descending score", Level: L1, Section: "§4.6, §14.2", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 10})
				if o != nil {
					return *o
				}
				for i := 1; i < len(v.hits); i++ {
					if v.hits[i].score > v.hits[i-1].score {
						return fail("hit %d score %g > hit %d score %g", i, v.hits[i].score, i-1, v.hits[i-1].score)
					}
				}
				if len(v.hits) < 2 {
					return passf("only %d hits to compare", len(v.hits))
				}
				return pass()
			}},
		{ID: "retrieve.unique-ids", Name: "hit ids are unique within a result", Level: L1, Section: "§7.7, §16.3", Requirement: Should, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 10})
				if o != nil {
					return *o
				}
				seen := map[string]bool{}
				for _, k := range v.ids() {
					if seen[k] {
						return fail("duplicate hit id %s", k)
					}
					seen[k] = true
				}
				return pass()
			}},
		{ID: "retrieve.clamp-k", Name: "k above maxK is clamped, not rejected", Level: L1, Section: "§7.7, §12", Requirement: Must, Needs: []string{"retrieve.maxK"},
			run: func(ctx context.Context, s *suite) outcome {
				mk := s.maxK()
				if mk == 0 {
					return skip("maxK is not a positive integer")
				}
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": mk + 1000})
				if o != nil {
					return *o
				}
				return check(len(v.hits) <= mk, "maxK=%d but %d hits returned", mk, len(v.hits))
			}},
		{ID: "retrieve.clamp-candidatek", Name: "candidateK above maxK is clamped, not rejected", Level: L1, Section: "§7.7", Requirement: Must, Needs: []string{"retrieve.maxK"},
			run: func(ctx context.Context, s *suite) outcome {
				mk := s.maxK()
				if mk == 0 {
					return skip("maxK is not a positive integer")
				}
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 1, "candidateK": mk + 1000})
				if o != nil {
					return *o
				}
				if c, ok := v.usageInt("candidates"); ok && c > mk {
					return fail("usage.candidates=%d exceeds maxK=%d", c, mk)
				}
				return pass()
			}},
		{ID: "retrieve.k-negative", Name: "negative k is rejected with -32602", Level: L1, Section: "§12", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": -5})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.k-fractional", Name: "non-integer k is rejected with -32602", Level: L1, Section: "§4.6, §12", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 2.5})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.k-string", Name: "k sent as a string is rejected with -32602", Level: L1, Section: "§4.6, §12", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": "3"})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.k-zero", Name: "k = 0 is rejected with -32602 (schema minimum 1)", Level: L1, Section: "§7.7, §12", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 0})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.missing-k", Name: "retrieve without k is rejected with -32602 (k is required)", Level: L1, Section: "§7.7, §12", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance"})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.missing-query", Name: "retrieve without query is rejected with -32602", Level: L0, Section: "§12, §14.1", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"k": 3})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.query-wrong-type", Name: "a query of the wrong JSON type is rejected with -32602", Level: L0, Section: "§12, §14.1", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": 42, "k": 3})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.funnel-candidatek", Name: "funnel violation candidateK < k is rejected with -32602", Level: L1, Section: "§3.3, §7.7", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 10, "candidateK": 2})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "retrieve.funnel-topn", Name: "funnel violations rerank.topN < k and candidateK < rerank.topN are rejected with -32602", Level: L2, Section: "§3.3, §7.7", Requirement: Must, Needs: []string{"retrieve.rerankBuiltin"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 5, "rerank": map[string]any{"topN": 2}})
				if r.code() != -32602 {
					return fail("rerank.topN=2 < k=5: want -32602, got %s", r)
				}
				r = s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 2, "candidateK": 3, "rerank": map[string]any{"topN": 5}})
				return check(r.code() == -32602, "candidateK=3 < rerank.topN=5: want -32602, got %s", r)
			}},
		{ID: "retrieve.usage-funnel", Name: "reported usage respects the funnel (candidates ≥ reranked ≥ hits)", Level: L1, Section: "§3.3, §7.7", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3, "candidateK": 20})
				if o != nil {
					return *o
				}
				c, okC := v.usageInt("candidates")
				rr, okR := v.usageInt("reranked")
				switch {
				case okC && c < len(v.hits):
					return fail("usage.candidates=%d < %d hits", c, len(v.hits))
				case okR && rr > 0 && rr < len(v.hits):
					return fail("usage.reranked=%d < %d hits", rr, len(v.hits))
				case okC && okR && rr > c:
					return fail("usage.reranked=%d > usage.candidates=%d", rr, c)
				}
				if !okC {
					return passf("usage.candidates not reported")
				}
				return pass()
			}},
		{ID: "retrieve.usage-reported", Name: "retrieve reports effective counts in usage", Level: L1, Section: "§7.7, §17.2", Requirement: Should, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3})
				if o != nil {
					return *o
				}
				_, ok := v.usageInt("candidates")
				return check(ok, "no integer usage.candidates")
			}},
		{ID: "retrieve.min-score", Name: "minScore filters out hits below it", Level: L1, Section: "§7.7, §14.2", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				q := s.probeQuery(ctx)
				base, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 10})
				if o != nil {
					return *o
				}
				if len(base.hits) < 2 {
					return skip("need at least 2 hits to choose a threshold")
				}
				scores := make([]float64, len(base.hits))
				for i, h := range base.hits {
					scores[i] = h.score
				}
				sort.Float64s(scores)
				thr := scores[len(scores)/2]
				v, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 10, "minScore": thr})
				if o != nil {
					return *o
				}
				for _, h := range v.hits {
					if h.score < thr {
						return fail("minScore=%g but a hit scored %g", thr, h.score)
					}
				}
				above := 0
				for _, sc := range scores {
					if sc >= thr {
						above++
					}
				}
				if len(v.hits) == 0 {
					return fail("minScore=%g removed every hit though %d scored at least that", thr, above)
				}
				// max score + 1 must leave nothing
				v, _, o = s.retrieve(ctx, map[string]any{"query": q, "k": 10, "minScore": scores[len(scores)-1] + math.Max(1, math.Abs(scores[len(scores)-1]))})
				if o != nil {
					return *o
				}
				return check(len(v.hits) == 0, "minScore above every score still returned %d hits", len(v.hits))
			}},
		{ID: "retrieve.score-floor", Name: "no hit scores below the advertised scoreFloor", Level: L1, Section: "§6.1", Requirement: Must, Needs: []string{"retrieve.scoreFloor"},
			run: func(ctx context.Context, s *suite) outcome {
				fv, _ := s.capValue("retrieve.scoreFloor")
				floor, ok := fv.(float64)
				if !ok {
					return fail("scoreFloor is not a number: %v", fv)
				}
				for _, q := range []string{s.probeQuery(ctx), "zzqx unrelated vocabulary"} {
					v, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 10})
					if o != nil {
						return *o
					}
					for _, h := range v.hits {
						if h.score < floor {
							return fail("scoreFloor=%g but hit %s scored %g", floor, h.id, h.score)
						}
					}
				}
				return pass()
			}},
		{ID: "retrieve.unicode", Name: "retrieve accepts the full Unicode range in query", Level: L1, Section: "§4.6", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				_, _, o := s.retrieve(ctx, map[string]any{"query": "naïve café — 東京 🚀 e\u0301 \U0001F9EA עברית", "k": 2})
				if o != nil {
					return *o
				}
				return pass()
			}},
		{ID: "retrieve.null-as-absent", Name: "null for an optional field is treated as absent", Level: L1, Section: "§4.6", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				_, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 2, "mode": nil, "minScore": nil, "cursor": nil, "filter": nil, "rerank": nil})
				if o != nil {
					return *o
				}
				return pass()
			}},
		{ID: "retrieve.unknown-fields", Name: "retrieve ignores unknown params fields and _meta", Level: L0, Section: "§4.4, §4.6, §14.1", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				_, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 2, "x-rcpconformance": map[string]any{"a": 1},
					"futureOption": true, "_meta": map[string]any{"x-rcpconformance-trace": "abc", "traceId": "t"}})
				if o != nil {
					return *o
				}
				return pass()
			}},
		{ID: "retrieve.seed-tolerated", Name: "seed is honoured or ignored, never an error", Level: L1, Section: "§7.7.1", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				_, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3, "seed": 12345})
				if o != nil {
					return *o
				}
				return pass()
			}},
		{ID: "retrieve.modes", Name: "every advertised mode answers with hits", Level: L1, Section: "§6.1, §7.7", Requirement: Must, Needs: []string{"retrieve.modes"},
			run: func(ctx context.Context, s *suite) outcome {
				for _, m := range s.capStrings("retrieve.modes") {
					if _, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3, "mode": m}); o != nil {
						return *o
					}
				}
				return pass()
			}},
		{ID: "retrieve.hybrid", Name: "advertised hybrid mode returns hits", Level: L2, Section: "§7.7, §14.3", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				if !slices.Contains(s.capStrings("retrieve.modes"), "hybrid") {
					return skip("hybrid not advertised")
				}
				if _, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3, "mode": "hybrid"}); o != nil {
					return *o
				}
				return pass()
			}},
		{ID: "retrieve.fusion", Name: "every advertised fusion method works with hybrid", Level: L2, Section: "§6.1, §7.7", Requirement: Must, Needs: []string{"retrieve.fusion"},
			run: func(ctx context.Context, s *suite) outcome {
				for _, f := range s.capStrings("retrieve.fusion") {
					p := map[string]any{"query": s.probeQuery(ctx), "k": 3, "fusion": map[string]any{"method": f}}
					if slices.Contains(s.capStrings("retrieve.modes"), "hybrid") {
						p["mode"] = "hybrid"
					}
					if _, _, o := s.retrieve(ctx, p); o != nil {
						return *o
					}
				}
				return pass()
			}},
		{ID: "retrieve.mmr", Name: "advertised mmr is accepted inline", Level: L2, Section: "§6.1, §7.7", Requirement: Must, Needs: []string{"retrieve.mmr"},
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3, "mmr": map[string]any{"lambda": 0.5}})
				if o != nil {
					return *o
				}
				return check(len(v.hits) <= 3, "mmr returned %d > k hits", len(v.hits))
			}},
		{ID: "retrieve.deterministic", Name: "identical requests with a seed return identical results", Level: L2, Section: "§7.7.1", Requirement: Must, Needs: []string{"retrieve.deterministic"},
			run: func(ctx context.Context, s *suite) outcome {
				p := map[string]any{"query": s.probeQuery(ctx), "k": 5, "seed": 4242}
				a, _, o := s.retrieve(ctx, p)
				if o != nil {
					return *o
				}
				b, _, o := s.retrieve(ctx, p)
				if o != nil {
					return *o
				}
				if a.indexVersion != b.indexVersion {
					return skip("index changed between the calls")
				}
				ha, _ := json.Marshal(a.hits2())
				hb, _ := json.Marshal(b.hits2())
				return check(string(ha) == string(hb), "results differ: %s vs %s", truncate(string(ha), 150), truncate(string(hb), 150))
			}},
		{ID: "retrieve.snapshot-echo", Name: "a snapshot-capable server echoes indexVersion", Level: L2, Section: "§7.7.1", Requirement: Must, Needs: []string{"retrieve.snapshots"},
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 2})
				if o != nil {
					return *o
				}
				return check(v.indexVersion != "", "result has no indexVersion")
			}},
		{ID: "retrieve.snapshot-pin", Name: "pinning the served indexVersion serves exactly that snapshot", Level: L2, Section: "§7.7.1", Requirement: Must, Needs: []string{"retrieve.snapshots"},
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 3})
				if o != nil {
					return *o
				}
				if v.indexVersion == "" {
					return skip("no indexVersion to pin")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": s.probeQuery(ctx), "k": 3, "indexVersion": v.indexVersion})
				if r.code() == -32010 || r.code() == -32016 {
					return passf("snapshot no longer available (%d)", r.code())
				}
				if !r.ok() {
					return fail("pinned retrieve: %s", r)
				}
				p, _ := decodeRetrieve(r.Result)
				return check(p != nil && p.indexVersion == v.indexVersion, "pinned %q, served %q", v.indexVersion, p.indexVersion)
			}},
		{ID: "retrieve.snapshot-pin-after-write", Name: "a snapshot pinned before a write does not show the write (or fails -32010)", Level: L2, Section: "§7.7.1", Requirement: Must, Needs: []string{"retrieve.snapshots", "index.writable"},
			run: func(ctx context.Context, s *suite) outcome {
				id := s.uniq("snap")
				token := strings.ReplaceAll(id, "-", "")
				q := "snapshot probe " + token
				before, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 5})
				if o != nil {
					return *o
				}
				if before.indexVersion == "" {
					return skip("no indexVersion to pin")
				}
				if _, r := s.addDocs(ctx, []map[string]any{{"id": id, "text": q}}, nil); !r.ok() {
					return fail("index/add: %s", r)
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": q, "k": 5, "indexVersion": before.indexVersion})
				if r.code() == -32010 || r.code() == -32016 {
					return passf("old snapshot unavailable (%d)", r.code())
				}
				if !r.ok() {
					return fail("pinned retrieve: %s", r)
				}
				v, err := decodeRetrieve(r.Result)
				if err != nil {
					return fail("%v", err)
				}
				if v.indexVersion != before.indexVersion {
					return fail("pinned %q, served %q", before.indexVersion, v.indexVersion)
				}
				for _, h := range v.hits {
					if h.key == "s:"+id {
						return fail("snapshot %q pinned before the write returned the document added after it", before.indexVersion)
					}
				}
				return pass()
			}},
		{ID: "retrieve.snapshot-unknown", Name: "pinning an unknown indexVersion fails with -32010 (never serves another snapshot)", Level: L2, Section: "§7.7.1, §12", Requirement: Must, Needs: []string{"retrieve.snapshots"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": s.probeQuery(ctx), "k": 3, "indexVersion": "rcp-conformance-no-such-snapshot"})
				if r.code() == -32010 {
					return pass()
				}
				if r.code() == -32016 {
					return passf("-32016 (§12 lists Conflict for an unavailable pinned snapshot)")
				}
				return fail("want -32010, got %s", r)
			}},
		{ID: "retrieve.token-budget", Name: "tokenBudget packs fewer hits and reports usage.tokens", Level: L2, Section: "§7.7.2", Requirement: Should, Needs: []string{"retrieve.tokenBudget"},
			run: func(ctx context.Context, s *suite) outcome {
				q := s.probeQuery(ctx)
				all, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 10})
				if o != nil {
					return *o
				}
				v, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 10, "tokenBudget": 1})
				if o != nil {
					return *o
				}
				if len(v.hits) > len(all.hits) {
					return fail("tokenBudget=1 returned more hits (%d) than no budget (%d)", len(v.hits), len(all.hits))
				}
				if len(all.hits) >= 3 && len(v.hits) >= len(all.hits) {
					return fail("tokenBudget=1 did not reduce %d hits", len(all.hits))
				}
				tok, ok := v.usageInt("tokens")
				if !ok {
					return fail("usage.tokens not reported")
				}
				return check(tok >= 0, "usage.tokens=%d", tok)
			}},
		{ID: "retrieve.confidence", Name: "with retrieve.confidence, hits carry confidence in [0,1]", Level: L2, Section: "§7.7.2", Requirement: Should, Needs: []string{"retrieve.confidence"},
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 5})
				if o != nil {
					return *o
				}
				for _, h := range v.hits {
					var c float64
					if json.Unmarshal(h.raw["confidence"], &c) != nil || c < 0 || c > 1 {
						return fail("hit %s confidence %s", h.id, h.raw["confidence"])
					}
				}
				return pass()
			}},
		{ID: "retrieve.citations", Name: "with citations advertised, hits carry citation or trust", Level: L1, Section: "§6, §14.2", Requirement: Should, Needs: []string{"citations", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				v, _, o := s.retrieve(ctx, map[string]any{"query": s.probeQuery(ctx), "k": 5})
				if o != nil {
					return *o
				}
				for _, h := range v.hits {
					if h.raw["citation"] == nil && h.raw["trust"] == nil {
						return fail("hit %s has neither citation nor trust", h.id)
					}
				}
				return pass()
			}},
		{ID: "retrieve.l1-profile", Name: "L1 profile: dense, sparse and hybrid modes, filter and citations advertised", Level: L1, Section: "§14.2", Requirement: Should, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				var gaps []string
				if m := missing(s.capStrings("retrieve.modes"), "dense", "sparse", "hybrid"); m != "" {
					gaps = append(gaps, "mode "+m)
				}
				for _, c := range []string{"filter", "citations"} {
					if !s.has(c) {
						gaps = append(gaps, c)
					}
				}
				return check(len(gaps) == 0, "not advertised: %s", strings.Join(gaps, ", "))
			}},
		{ID: "retrieve.pagination", Name: "cursor pagination round-trips without duplicates", Level: L2, Section: "§10", Requirement: Must, Needs: []string{"pagination", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				ids, _, o := s.paginate(ctx)
				if o != nil {
					return *o
				}
				seen := map[string]bool{}
				for _, id := range ids {
					if seen[id] {
						return fail("id %s returned on two pages (pages: %v)", id, ids)
					}
					seen[id] = true
				}
				return pass()
			}},
		{ID: "retrieve.pagination-gaps", Name: "concatenated pages equal one larger request (no gaps)", Level: L2, Section: "§10", Requirement: Should, Needs: []string{"pagination", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				ids, single, o := s.paginate(ctx)
				if o != nil {
					return *o
				}
				n := min(len(ids), len(single))
				if !slices.Equal(ids[:n], single[:n]) || len(ids) < len(single) {
					return fail("pages %v vs single request %v", ids, single)
				}
				return pass()
			}},
		{ID: "retrieve.bad-cursor", Name: "a malformed cursor is an error (-32602 or -32015), not a silent first page", Level: L2, Section: "§10, §12", Requirement: Should, Needs: []string{"pagination", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "retrieve", map[string]any{"query": s.probeQuery(ctx), "k": 2, "cursor": "rcp-conformance-\x01-not-a-cursor"})
				return check(r.code() == -32602 || r.code() == -32015, "want -32602 or -32015, got %s", r)
			}},
	}
}

func (v *retrieveView) hits2() []any {
	out := make([]any, len(v.hits))
	for i, h := range v.hits {
		out[i] = []any{h.key, h.score}
	}
	return out
}

// paginate follows nextCursor with k=2 pages and also fetches one larger page.
func (s *suite) paginate(ctx context.Context) (paged, single []string, o *outcome) {
	q := s.probeQuery(ctx)
	const page = 2
	p := map[string]any{"query": q, "k": page}
	for i := 0; i < 10; i++ {
		v, _, oo := s.retrieve(ctx, p)
		if oo != nil {
			return nil, nil, oo
		}
		if len(v.hits) > page {
			x := fail("page %d has %d > k hits", i, len(v.hits))
			return nil, nil, &x
		}
		paged = append(paged, v.ids()...)
		if v.nextCursor == "" {
			break
		}
		p = map[string]any{"query": q, "k": page, "cursor": v.nextCursor}
	}
	if len(paged) <= page {
		x := skip("the corpus yields only one page (%d hits)", len(paged))
		return nil, nil, &x
	}
	v, _, oo := s.retrieve(ctx, map[string]any{"query": q, "k": len(paged)})
	if oo != nil {
		return nil, nil, oo
	}
	return paged, v.ids(), nil
}
