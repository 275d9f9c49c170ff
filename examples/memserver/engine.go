package main

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

// This is an EXAMPLE engine over a handful of in-memory documents. Its
// "dense" vectors are hashed bag-of-words vectors and its "sparse" scores
// plain word overlap; neither is a learned model. It exists to show the
// protocol surface, not retrieval quality.

const (
	dim      = 64
	maxK     = 50
	identity = "memserver-hashed-bow-64"
)

type doc struct {
	id, title, text, uri string
}

var corpus = []doc{
	{"d1", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.", "https://en.wikipedia.org/wiki/Eiffel_Tower"},
	{"d2", "Photosynthesis", "Photosynthesis converts light energy into chemical energy stored in glucose within plant chloroplasts.", "https://en.wikipedia.org/wiki/Photosynthesis"},
	{"d3", "Great Wall of China", "The Great Wall of China stretches thousands of kilometres across the country's northern borders.", "https://en.wikipedia.org/wiki/Great_Wall_of_China"},
	{"d4", "Paris", "Paris is the capital of France and sits on the river Seine in the north of the country.", "https://en.wikipedia.org/wiki/Paris"},
	{"d5", "Wrought iron", "Wrought iron is a tough, malleable form of iron used in historic construction such as towers and bridges.", "https://en.wikipedia.org/wiki/Wrought_iron"},
	{"d6", "Retrieval-augmented generation", "Retrieval-augmented generation grounds a language model's answer in passages retrieved from an index.", "https://en.wikipedia.org/wiki/Retrieval-augmented_generation"},
	{"d7", "BM25", "BM25 is a bag-of-words ranking function that scores documents by term frequency and inverse document frequency.", "https://en.wikipedia.org/wiki/Okapi_BM25"},
	{"d8", "Reciprocal rank fusion", "Reciprocal rank fusion merges ranked lists by summing one over sixty plus the rank of each document.", "https://plg.uwaterloo.ca/~gvcormac/cormacksigir09-rrf.pdf"},
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// embedText is a hashed bag-of-words vector, L2-normalised.
func embedText(s string) []float32 { return embedTokens(tokens(s)) }

// fnv32a is the 32-bit FNV-1a hash of s (hash/fnv's New32a, without the
// allocation of a hash.Hash per token).
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func embedTokens(toks []string) []float32 {
	v := make([]float32, dim)
	for _, t := range toks {
		v[fnv32a(t)%dim]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		inv := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func wordSet(s string) map[string]bool { return tokenSet(tokens(s)) }

func tokenSet(toks []string) map[string]bool {
	set := make(map[string]bool, len(toks))
	for _, t := range toks {
		set[t] = true
	}
	return set
}

// overlap is the fraction of distinct query words found in text.
func overlap(query, text string) float64 { return overlapSets(wordSet(query), wordSet(text)) }

// distinct returns toks without repeats, in first-seen order.
func distinct(toks []string) []string {
	out := make([]string, 0, len(toks))
	if len(toks) > 32 { // long query: a set instead of the quadratic scan
		set := tokenSet(toks)
		for _, t := range toks {
			if set[t] {
				out = append(out, t)
				delete(set, t)
			}
		}
		return out
	}
	for _, t := range toks {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// overlapWords is overlapSets for a query given as its distinct words
// (scoring a query against every document without building its set).
func overlapWords(q []string, d map[string]bool) float64 {
	if len(q) == 0 {
		return 0
	}
	n := 0
	for _, t := range q {
		if d[t] {
			n++
		}
	}
	return float64(n) / float64(len(q))
}

func overlapSets(q, d map[string]bool) float64 {
	if len(q) == 0 {
		return 0
	}
	n := 0
	for t := range q {
		if d[t] {
			n++
		}
	}
	return float64(n) / float64(len(q))
}

type engine struct {
	vecs  [][]float32
	words []map[string]bool
	// per-document hit parts that never change, built once and shared by
	// every result (results are only read: encoded, or copied first when
	// they need sanitising)
	citations []*rcp.Citation
	metas     []map[string]any
}

// trust is every hit's trust annotation.
var trust = &rcp.Trust{Level: rcp.TrustCommunity}

func newEngine() *engine {
	e := &engine{}
	for _, d := range corpus {
		e.vecs = append(e.vecs, embedText(d.title+" "+d.text))
		e.words = append(e.words, wordSet(d.title+" "+d.text))
		e.citations = append(e.citations, &rcp.Citation{Source: d.id, URI: d.uri, Title: d.title})
		e.metas = append(e.metas, map[string]any{"title": d.title})
	}
	return e
}

func (e *engine) describe(context.Context) rcp.Description {
	return rcp.Description{
		Server:      rcp.PeerInfo{Name: "rcpgo-memserver", Version: "0.1.0"},
		Conformance: rcp.LevelL2,
		Capabilities: rcp.Capabilities{
			Embed: &rcp.EmbedCap{Dimension: dim, Identity: identity, BatchLimit: 256, Normalized: ptr(true),
				Modalities: []string{rcp.ModalityText}, Encodings: []string{rcp.EncodingJSON, rcp.EncodingF32Base64}},
			Rerank: &rcp.RerankCap{Methods: []string{rcp.RerankCrossEncoder}, MaxCandidates: 100},
			Retrieve: &rcp.RetrieveCap{MaxK: maxK, Modes: []string{rcp.ModeDense, rcp.ModeSparse, rcp.ModeHybrid},
				Fusion: []string{rcp.FusionRRF}, DefaultMode: rcp.ModeHybrid, Deterministic: true,
				Units: []string{rcp.UnitChunk}},
			Citations: &rcp.EmptyCap{},
			Streaming: &rcp.EmptyCap{},
			Log:       &rcp.LogCap{Levels: []string{rcp.LogDebug, rcp.LogInfo}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func (e *engine) router() *rcp.Router {
	r := rcp.NewRouter(e.describe)
	rcp.Handle(r, rcp.MethodEmbed, e.embed)
	rcp.Handle(r, rcp.MethodRerank, e.rerank)
	rcp.Handle(r, rcp.MethodRetrieve, e.retrieve)
	return r
}

func (e *engine) embed(ctx context.Context, p *rcp.EmbedParams) (*rcp.EmbedResult, error) {
	inputs := p.AllInputs()
	if inputs == nil {
		return nil, rcp.InvalidParams("inputs", "inputs is required")
	}
	if len(inputs) > 256 {
		return nil, rcp.InvalidParams("inputs", "at most 256 inputs per call (embed.batchLimit)")
	}
	enc := cmp.Or(p.Encoding, rcp.EncodingJSON)
	if enc != rcp.EncodingJSON && enc != rcp.EncodingF32Base64 {
		return nil, rcp.OptionUnsupported("encoding", "encoding %q is not advertised", enc)
	}
	vecs := make([][]float32, len(inputs))
	for i, in := range inputs {
		if !in.IsText() {
			return nil, rcp.OptionUnsupported("modality", "only text inputs are embedded")
		}
		vecs[i] = embedText(in.Text)
	}
	encoded, err := vector.Encode(vecs, enc)
	if err != nil {
		return nil, err
	}
	res := &rcp.EmbedResult{}
	encoded.Apply(res)
	res.Encoding, res.Dimension = enc, dim // echo the encoding actually used (§7.3.1)
	return res, nil
}

func (e *engine) rerank(ctx context.Context, p *rcp.RerankParams) (*rcp.RerankResult, error) {
	if p.Method != "" && p.Method != rcp.RerankCrossEncoder {
		return nil, rcp.OptionUnsupported("method", "rerank method %q is not advertised", p.Method)
	}
	passages := p.Passages
	if passages == nil {
		passages = p.Documents
	}
	if passages == nil {
		return nil, rcp.InvalidParams("passages", "passages is required")
	}
	if p.Query.IsZero() {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if len(passages) > 100 {
		return nil, rcp.InvalidParams("passages", "at most 100 passages (rerank.maxCandidates)")
	}
	if p.TopN != nil && *p.TopN < 1 {
		return nil, rcp.InvalidParams("topN", "topN must be >= 1")
	}
	q := p.Query.String()
	res := &rcp.RerankResult{Scores: make([]float64, len(passages))}
	for i, ps := range passages {
		res.Scores[i] = overlap(q, ps.Text)
	}
	order := make([]int, len(passages))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res.Scores[b], res.Scores[a]) })
	if p.TopN != nil && *p.TopN < len(order) {
		order = order[:*p.TopN]
	}
	res.Order = order
	for _, i := range order {
		res.Results = append(res.Results, rcp.RerankScore{Index: i, Score: res.Scores[i]})
	}
	return res, nil
}

type scored struct {
	i     int
	score float64
}

func ranked(scores []float64) []scored {
	out := make([]scored, len(scores))
	for i, s := range scores {
		out[i] = scored{i, s}
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	return out
}

func (e *engine) retrieve(ctx context.Context, p *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
	pl, err := planRetrieve(p)
	if err != nil {
		return nil, err
	}
	rcp.Log(ctx, rcp.LogDebug, "retrieve started", map[string]any{"mode": pl.mode, "k": pl.k})
	sc := e.score(ctx, p.Query.String(), pl)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := e.pack(p, pl.k, sc)
	if rcp.ProgressAllowed(ctx) {
		_ = rcp.ReportProgress(ctx, rcp.ProgressParams{Progress: ptr(1.0), Stage: "pack"})
	}
	res.Usage = &rcp.Usage{Candidates: ptr(len(corpus)), Notes: pl.notes}
	return res, nil
}

// retrievePlan is a checked retrieve: the mode and depths this server
// runs, and notes on the options it could not honour (strict false).
type retrievePlan struct {
	mode     string
	k, candK int
	notes    []string
}

// planRetrieve checks a retrieve's parameters in the spec's order and
// resolves what it can serve: an unadvertised option fails under strict
// and is noted otherwise.
func planRetrieve(p *rcp.RetrieveParams) (*retrievePlan, error) {
	if p.Query.IsZero() {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if p.K < 1 {
		return nil, rcp.InvalidParams("k", "k must be an integer >= 1")
	}
	if !p.Query.TextOnly() {
		return nil, rcp.OptionUnsupported("modality", "this server retrieves with text queries only")
	}
	strict := p.IsStrict()
	pl := &retrievePlan{mode: cmp.Or(p.Mode, rcp.ModeHybrid)}
	if !slices.Contains([]string{rcp.ModeDense, rcp.ModeSparse, rcp.ModeHybrid}, pl.mode) {
		if strict {
			return nil, rcp.OptionUnsupported("mode", "mode %q is not advertised", pl.mode)
		}
		pl.notes = append(pl.notes, "mode "+pl.mode+" unsupported; used hybrid")
		pl.mode = rcp.ModeHybrid
	}
	notes, err := optionNotes(p, strict)
	if err != nil {
		return nil, err
	}
	pl.notes = append(pl.notes, notes...)
	// Funnel invariant (§7.7): candidateK >= k. Values above maxK clamp.
	pl.k = min(p.K, maxK)
	pl.candK = max(pl.k, len(corpus))
	if p.CandidateK != nil {
		if *p.CandidateK < 1 {
			return nil, rcp.InvalidParams("candidateK", "candidateK must be >= 1")
		}
		if *p.CandidateK < p.K {
			return nil, rcp.InvalidParams("candidateK", "candidateK (%d) must be >= k (%d)", *p.CandidateK, p.K)
		}
		pl.candK = min(*p.CandidateK, maxK)
	}
	return pl, nil
}

// optionNotes checks the options this server does not advertise: under
// strict the first one fails, otherwise each is noted and ignored.
func optionNotes(p *rcp.RetrieveParams, strict bool) ([]string, error) {
	var notes []string
	if p.Fusion != nil && p.Fusion.Method != "" && p.Fusion.Method != rcp.FusionRRF {
		if strict {
			return nil, rcp.OptionUnsupported("fusion.method", "fusion %q is not advertised", p.Fusion.Method)
		}
		notes = append(notes, "fusion "+p.Fusion.Method+" unsupported; used rrf")
	}
	if p.Unit != "" && p.Unit != rcp.UnitChunk {
		if strict {
			return nil, rcp.OptionUnsupported("unit", "unit %q is not advertised", p.Unit)
		}
		notes = append(notes, "unit "+p.Unit+" unsupported; returned chunks")
	}
	if p.Rerank != nil && !p.Rerank.Disabled {
		if strict {
			return nil, rcp.OptionUnsupported("rerank", "retrieve has no built-in rerank (call rerank)")
		}
		notes = append(notes, "built-in rerank unsupported; skipped")
	}
	if p.HasFilter() && strict {
		return nil, rcp.OptionUnsupported("filter", "filtering is not advertised")
	}
	if p.MMR != nil && strict {
		return nil, rcp.OptionUnsupported("mmr", "mmr is not advertised")
	}
	if p.Rewrite != nil && *p.Rewrite != "" {
		if strict {
			return nil, rcp.OptionUnsupported("rewrite", "query rewrite %q is not advertised (no transform capability)", string(*p.Rewrite))
		}
		notes = append(notes, "rewrite "+string(*p.Rewrite)+" unsupported; query used as given")
	}
	// Hit vectors travel as JSON arrays only: the normative schema types
	// hit.vector as an array, so no binary encoding is advertised for it.
	if p.Encoding != "" && p.Encoding != rcp.EncodingJSON {
		if strict {
			return nil, rcp.OptionUnsupported("encoding", "hit vector encoding %q is not advertised", p.Encoding)
		}
		notes = append(notes, "encoding "+p.Encoding+" unsupported for hit vectors; used json")
	}
	return notes, nil
}

// scores are a query's per-document scores: each stage's, the fused
// final one, and which documents each stage ranked.
type scores struct {
	dense, sparse, final []float64
	inDense, inSparse    []bool
}

// stage returns the per-stage scores (hit.scores) of document i, for the
// stages that ranked it.
func (s *scores) stage(i int) map[string]float64 {
	m := make(map[string]float64, 2)
	if s.inDense[i] {
		m[rcp.ModeDense] = s.dense[i]
	}
	if s.inSparse[i] {
		m[rcp.ModeSparse] = s.sparse[i]
	}
	return m
}

// score scores every document for q with the plan's mode: dense, sparse,
// or both fused by RRF over their top candK.
func (e *engine) score(ctx context.Context, q string, pl *retrievePlan) *scores {
	qt := tokens(q)
	qv := embedTokens(qt)
	qw := distinct(qt)
	n := len(corpus)
	// one backing array for the per-document score lists
	all := make([]float64, 3*n)
	s := &scores{dense: all[:n:n], sparse: all[n : 2*n : 2*n], final: all[2*n:], inDense: make([]bool, n), inSparse: make([]bool, n)}
	for i := range corpus {
		s.dense[i] = dot(qv, e.vecs[i])
		s.sparse[i] = overlapWords(qw, e.words[i])
	}
	if rcp.ProgressAllowed(ctx) {
		_ = rcp.ReportProgress(ctx, rcp.ProgressParams{Progress: ptr(0.5), Stage: "recall", Message: "scored " + strconv.Itoa(n) + " documents"})
	}
	addRanks := func(sc []float64, in []bool) {
		for r, x := range ranked(sc)[:min(pl.candK, len(sc))] {
			in[x.i] = true
			s.final[x.i] += 1 / float64(60+r+1)
		}
	}
	switch pl.mode {
	case rcp.ModeDense:
		copy(s.final, s.dense)
		for i := range s.inDense {
			s.inDense[i] = true
		}
	case rcp.ModeSparse:
		copy(s.final, s.sparse)
		for i := range s.inSparse {
			s.inSparse[i] = true
		}
	default:
		addRanks(s.dense, s.inDense)
		addRanks(s.sparse, s.inSparse)
	}
	return s
}

// pack turns the best k fused scores into hits.
func (e *engine) pack(p *rcp.RetrieveParams, k int, s *scores) *rcp.RetrieveResult {
	res := &rcp.RetrieveResult{IndexVersion: "memserver-1", Hits: make([]rcp.Hit, 0, min(k, len(corpus)))}
	for _, sc := range ranked(s.final) {
		if len(res.Hits) == k {
			break
		}
		if p.MinScore != nil && sc.score < *p.MinScore {
			continue
		}
		d := corpus[sc.i]
		h := rcp.Hit{ID: rcp.StringID(d.id), Score: sc.score, Unit: rcp.UnitChunk, Modality: rcp.ModalityText,
			Scores:   s.stage(sc.i),
			Citation: e.citations[sc.i],
			Trust:    trust,
			Meta:     e.metas[sc.i]}
		if p.IncludeText == nil || *p.IncludeText {
			h.Text = &corpus[sc.i].text
		}
		if p.IncludeVectors != nil && *p.IncludeVectors {
			h.Vector, _ = json.Marshal(e.vecs[sc.i])
		}
		res.Hits = append(res.Hits, h)
	}
	return res
}
