package retrieval

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// retrievePlan is a retrieve request checked against the spec and the
// session's capabilities: the pipeline request to run and what the
// response needs besides the pipeline's page.
type retrievePlan struct {
	p       *retrieveParams
	caps    rcp.Capabilities // frozen per session (§13.2)
	strict  bool
	started time.Time
	notes   []string // what strict:false let the request ignore or change

	req        *pipeline.Request
	topN       *int         // rerank.topN, when the client set it
	agentic    *agenticPlan // nil: one pipeline run
	passage    bool         // chunks are answered as unit "passage"
	treeLeaf   bool         // chunks are answered as level-0 tree nodes
	list       string       // the kept ranked list of the pages (paging.go)
	encoding   string       // of the hits' vectors, when asked for
	hash       string       // of the options that define the ranked list (cursors)
	fromCursor bool
}

// unsupported refuses an option the session does not advertise under
// strict (-32005), or notes that it was ignored.
func (pl *retrievePlan) unsupported(option, format string, args ...any) error {
	if pl.strict {
		return rcp.OptionUnsupported(option, format, args...)
	}
	pl.notes = append(pl.notes, fmt.Sprintf(format, args...)+"; ignored (strict:false)")
	return nil
}

// planRetrieve checks p into pl, in the order the spec's errors take
// precedence: its structure (-32602), the funnel, then each option against
// the capabilities (-32005 under strict). A graph unit, or a tree node
// above the leaves, is answered here (done).
func (rv *Retriever) planRetrieve(ctx context.Context, p *retrieveParams, pl *retrievePlan) (_ *rcp.RetrieveResult, done bool, _ error) {
	*pl = retrievePlan{started: time.Now(), p: p, caps: rv.opts.Caps(ctx), strict: p.IsStrict(), topN: rerankTopN(p)}
	k, err := checkRetrieveParams(p, rv.opts.MaxK)
	if err != nil {
		return nil, false, err
	}
	candK, err := rv.funnel(p, k, pl.topN)
	if err != nil {
		return nil, false, err
	}
	if err := rv.planQuery(ctx, pl, k, candK); err != nil {
		return nil, false, err
	}
	if err := rv.planFusion(pl); err != nil {
		return nil, false, err
	}
	if err := rv.planRerank(pl); err != nil {
		return nil, false, err
	}
	if err := planMMR(pl); err != nil {
		return nil, false, err
	}
	if err := rv.planAgenticStep(pl); err != nil {
		return nil, false, err
	}
	if res, done, err := rv.planUnit(ctx, pl, k); done || err != nil {
		return res, done, err
	}
	if err := rv.planFilter(pl); err != nil {
		return nil, false, err
	}
	if err := planVectors(pl); err != nil {
		return nil, false, err
	}
	return nil, false, planCursor(pl)
}

// checkRetrieveParams checks p's structure, independent of capabilities
// (-32602), and returns k clamped to maxK (never an error, §7.7).
func checkRetrieveParams(p *retrieveParams, maxK int) (int, error) {
	if len(p.KRaw) == 0 || string(p.KRaw) == "null" {
		return 0, rcp.InvalidParams("k", "k is required")
	}
	n, ok := rcp.DecodeInteger(p.KRaw)
	if !ok {
		return 0, rcp.InvalidParams("k", "k must be a positive integer, got %s", p.KRaw)
	}
	if n < 1 {
		return 0, rcp.InvalidParams("k", "k must be a positive integer, got %d", n)
	}
	k := int(min(n, int64(maxK)))
	if p.Query.IsZero() {
		return 0, rcp.InvalidParams("query", "query is required")
	}
	for i, b := range p.Query.Blocks {
		if err := b.Validate(); err != nil {
			return 0, rcp.InvalidParams(fmt.Sprintf("query[%d]", i), "%v", err)
		}
	}
	if n := queryBytes(p.Query.Blocks); n > MaxQueryBytes {
		return 0, rcp.InvalidParams("query", "the query text is %d bytes; the limit is %d", n, MaxQueryBytes)
	}
	for _, c := range []struct {
		v     *int
		field string
	}{{p.CandidateK, "candidateK"}, {rerankTopN(p), "rerank.topN"}, {p.TokenBudget, "tokenBudget"}, {p.Level, "level"}} {
		if c.v != nil && *c.v < 0 {
			return 0, rcp.InvalidParams(c.field, "%s must be a non-negative integer", c.field)
		}
	}
	if p.MinScore != nil && (math.IsNaN(*p.MinScore) || math.IsInf(*p.MinScore, 0)) {
		return 0, rcp.InvalidParams("minScore", "minScore must be finite")
	}
	return k, nil
}

// rerankTopN is the rerank.topN that applies: nil when rerank is absent
// or disabled.
func rerankTopN(p *retrieveParams) *int {
	if p.Rerank == nil || p.Rerank.Disabled {
		return nil
	}
	return p.Rerank.TopN
}

// funnel clamps candidateK to the advertised limit (never an error, §7.7),
// then checks candidateK ≥ rerank.topN ≥ k (§3.3); k is already clamped.
func (rv *Retriever) funnel(p *retrieveParams, k int, topN *int) (int, error) {
	candK := max(k, DefaultCandidateK)
	if p.CandidateK != nil {
		if *p.CandidateK < k {
			return 0, rcp.InvalidParams("candidateK", "funnel violated: candidateK (%d) < k (%d)", *p.CandidateK, k)
		}
		candK = max(min(*p.CandidateK, rv.opts.MaxCandidates), k)
	}
	candK = min(candK, rv.opts.MaxCandidates)
	if topN != nil {
		if *topN < k {
			return 0, rcp.InvalidParams("rerank.topN", "funnel violated: rerank.topN (%d) < k (%d)", *topN, k)
		}
		if p.CandidateK != nil && *p.CandidateK < *topN {
			return 0, rcp.InvalidParams("candidateK", "funnel violated: candidateK (%d) < rerank.topN (%d)", *p.CandidateK, *topN)
		}
	}
	return candK, nil
}

// planQuery checks the query's content and the mode against the
// capabilities, resolves uri blocks, and starts the pipeline request.
func (rv *Retriever) planQuery(ctx context.Context, pl *retrievePlan, k, candK int) error {
	p, caps := pl.p, pl.caps
	for _, b := range p.Query.Blocks {
		if !b.IsText() {
			return rcp.OptionUnsupported(b.Type, "query content of type %q is not supported (retrieve.modalities: text)", b.Type)
		}
	}
	if p.Modality != "" && p.Modality != rcp.ModalityText {
		if err := pl.unsupported(p.Modality, "modality %q is not advertised", p.Modality); err != nil {
			return err
		}
	}
	mode := p.Mode
	if mode == "" {
		mode = caps.Retrieve.DefaultMode
	}
	if !rcp.Contains(caps.Retrieve.Modes, mode) {
		if err := pl.unsupported(mode, "mode %q is not advertised", mode); err != nil {
			return err
		}
		pl.notes[len(pl.notes)-1] = fmt.Sprintf("mode %q is not advertised; served %q instead (strict:false)", mode, caps.Retrieve.DefaultMode)
		mode = caps.Retrieve.DefaultMode
	}
	if err := rv.fetch.Resolve(ctx, p.Query.Blocks, "query"); err != nil {
		return err
	}
	if n := queryBytes(p.Query.Blocks); n > MaxQueryBytes { // fetched uri text counts too
		return rcp.InvalidParams("query", "the query text is %d bytes; the limit is %d", n, MaxQueryBytes)
	}
	pl.req = &pipeline.Request{Query: p.Query.String(), MaxTerms: MaxQueryTerms, K: k, CandidateK: candK, Mode: mode,
		Confidence: true, IncludeText: p.IncludeText == nil || *p.IncludeText, MinScore: p.MinScore,
		TokenBudget: p.TokenBudget}
	return nil
}

// planFusion sets a hybrid request's fusion: the request's options over
// the server defaults (Config.Fusion).
func (rv *Retriever) planFusion(pl *retrievePlan) error {
	f, mode, fd := pl.p.Fusion, pl.req.Mode, rv.opts.Fusion
	method, rrfK, alpha := fd.Method, fd.RRFK, fd.Alpha
	var weights map[string]float64 // only hybrid requests and fusion options need them
	if mode == rcp.ModeHybrid || f != nil {
		weights = map[string]float64{"sparse": fd.SparseWeight, "dense": fd.DenseWeight}
	}
	if f != nil {
		if f.Method != "" {
			method = f.Method
		}
		if !rcp.Contains(pl.caps.Retrieve.Fusion, method) {
			if err := pl.unsupported(method, "fusion method %q is not advertised", method); err != nil {
				return err
			}
			method = fd.Method
		}
		for name, w := range f.Weights {
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return rcp.InvalidParams("fusion.weights."+name, "weights must be finite and non-negative")
			}
			weights[name] = w
		}
		if f.Alpha != nil {
			if !(*f.Alpha >= 0 && *f.Alpha <= 1) {
				return rcp.InvalidParams("fusion.alpha", "alpha must be in [0,1]")
			}
			alpha = *f.Alpha
		}
		if f.RRFK != nil {
			if !(*f.RRFK > 0) {
				return rcp.InvalidParams("fusion.rrfK", "rrfK must be positive")
			}
			rrfK = *f.RRFK
		}
		if mode != rcp.ModeHybrid {
			pl.notes = append(pl.notes, "fusion applies to mode \"hybrid\" only; ignored")
		}
	}
	if mode == rcp.ModeHybrid {
		rrfK, alpha := rrfK, alpha // escape only here
		pl.req.Fusion = fusion.Options{Method: method, RRFK: &rrfK, Alpha: &alpha}
		if method == rcp.FusionRRF {
			pl.req.Fusion.Method = ""
		}
		pl.req.Weights = weights
	}
	return nil
}

// planRerank sets how many candidates the reranker sees: a configured
// reranker runs by default, and an explicit method or model must be
// advertised.
func (rv *Retriever) planRerank(pl *retrievePlan) error {
	r, caps, req := pl.p.Rerank, pl.caps, pl.req
	switch {
	case r != nil && !r.Disabled:
		m := r.Method
		if m == "" && caps.Rerank != nil {
			m = rv.opts.RerankMethod
		}
		if m == "" {
			m = "rerank"
		}
		if caps.Rerank == nil || !rcp.Contains(caps.Rerank.Methods, m) {
			return pl.unsupported(m, "rerank method %q is not advertised", m)
		}
		if r.Model != "" && !rcp.Contains(caps.Rerank.Models, r.Model) {
			return pl.unsupported(r.Model, "rerank model %q is not advertised", r.Model)
		}
		req.RerankTopN = rv.defaultTopN(req.K, req.CandidateK)
		if pl.topN != nil {
			req.RerankTopN = min(*pl.topN, rv.opts.RerankMax)
		}
	case r == nil && caps.Rerank != nil:
		req.RerankTopN = rv.defaultTopN(req.K, req.CandidateK)
	}
	if req.RerankTopN > req.CandidateK {
		req.CandidateK = min(req.RerankTopN, rv.opts.MaxCandidates) // candidateK was server-chosen
	}
	return nil
}

// planMMR sets MMR's lambda (0.5 unless given).
func planMMR(pl *retrievePlan) error {
	m := pl.p.MMR
	if m == nil {
		return nil
	}
	lambda := 0.5
	if m.Lambda != nil {
		lambda = *m.Lambda
		if !(lambda >= 0 && lambda <= 1) {
			return rcp.InvalidParams("mmr.lambda", "lambda must be in [0,1]")
		}
	}
	if !pl.caps.Retrieve.MMR {
		return pl.unsupported("mmr", "mmr is not advertised")
	}
	pl.req.MMRLambda = &lambda
	return nil
}

// planAgenticStep plans query rewriting, PRF and session dedup, and lets
// the pipeline stop recall at the page where that keeps the ranked list.
func (rv *Retriever) planAgenticStep(pl *retrievePlan) error {
	plan, note, err := rv.planAgentic(pl.p)
	if err != nil {
		return err
	}
	pl.agentic = plan
	// A single pipeline over the embedded index (whose ranking is a total
	// order: score, then id) may stop recall at the page when the client
	// left candidateK to the server; the pipeline decides whether its
	// stages allow it.
	pl.req.PageDepth = pl.p.CandidateK == nil && plan == nil && !rv.opts.Remote
	if note != "" {
		pl.notes = append(pl.notes, note)
	}
	return nil
}

// planUnit maps the requested unit onto the pipeline's, or answers a
// graph unit, or a tree node above the leaves, itself (done).
func (rv *Retriever) planUnit(ctx context.Context, pl *retrievePlan, k int) (_ *rcp.RetrieveResult, done bool, _ error) {
	p, req := pl.p, pl.req
	switch p.Unit {
	case "", rcp.UnitChunk:
		req.Unit = rcp.UnitChunk
	case rcp.UnitPassage: // a passage is a chunk, echoed under its own name
		req.Unit, pl.passage = rcp.UnitChunk, true
	case rcp.UnitDocument, rcp.UnitPage:
		req.Unit = p.Unit
	case rcp.UnitCommunity, rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph:
		if rv.know != nil {
			notes, err := rv.know.AwaitUnit(ctx, p.Unit)
			pl.notes = append(pl.notes, notes...)
			if err != nil {
				return nil, false, err
			}
			res, err := rv.pagedStructured(pl, k, func(n int) (*rcp.RetrieveResult, error) {
				level, err := graphUnitLevel(p, pl.unsupported)
				if err != nil {
					return nil, err
				}
				return rv.know.GraphUnits(ctx, p.Unit, p.Query.String(), level, n, &pl.notes, pl.started)
			})
			return res, true, err
		}
		fallthrough
	case rcp.UnitTreeNode:
		if t := rv.know.Tree(); t != nil && p.Unit == rcp.UnitTreeNode {
			if p.Level != nil && *p.Level > 0 {
				if err := structuredOptions(p, pl.unsupported); err != nil {
					return nil, false, err
				}
				res, err := rv.pagedStructured(pl, k, func(n int) (*rcp.RetrieveResult, error) {
					return rv.know.TreeNodes(ctx, t, p.Query.String(), *p.Level, n, &pl.notes, pl.started)
				})
				return res, true, err
			}
			req.Unit, pl.treeLeaf = rcp.UnitChunk, true // level 0: the leaves are the units
			break
		}
		fallthrough
	default:
		if err := pl.unsupported(p.Unit, "unit %q is not advertised", p.Unit); err != nil {
			return nil, false, err
		}
		req.Unit = rcp.UnitChunk
	}
	return nil, false, nil
}

// planFilter checks the level (the corpus is flat), the filter against the
// advertised fields, and recency against the date fields.
func (rv *Retriever) planFilter(pl *retrievePlan) error {
	p, caps := pl.p, pl.caps
	if p.Level != nil && *p.Level != 0 {
		if err := pl.unsupported("level", "level %d is not available (the corpus is flat)", *p.Level); err != nil {
			return err
		}
	}
	if p.HasFilter() {
		if caps.Filter == nil {
			return rcp.OptionUnsupported("filter", "no filter fields are advertised")
		}
		node, err := filter.Validate(p.Filter, caps.Filter.FieldTypes(), rv.ops)
		if err != nil {
			return err
		}
		pl.req.Filter = node
	}
	r := p.Recency
	if r == nil {
		return nil
	}
	typ, ok := caps.Filter.FieldTypes()[r.Field]
	if r.Field == "" || !ok || (typ != filter.TypeDate && typ != filter.TypeInt) {
		return rcp.InvalidParams("recency.field", "recency.field must name an advertised date (or year int) field")
	}
	if !(r.HalfLifeDays > 0) || math.IsInf(r.HalfLifeDays, 0) {
		return rcp.InvalidParams("recency.halfLifeDays", "halfLifeDays must be positive")
	}
	now := time.Now().UTC().Truncate(24 * time.Hour) // stable within a day
	pl.req.Recency = &pipeline.Recency{Field: r.Field, HalfLife: time.Duration(r.HalfLifeDays * float64(24*time.Hour)), Now: now}
	pl.notes = append(pl.notes, "recency decay relative to "+now.Format("2006-01-02"))
	return nil
}

// planVectors checks includeVectors and its encoding.
func planVectors(pl *retrievePlan) error {
	p := pl.p
	if p.IncludeVectors == nil || !*p.IncludeVectors {
		return nil
	}
	if pl.caps.Embed == nil {
		return pl.unsupported("includeVectors", "includeVectors needs a dense encoder (embed is not advertised)")
	}
	pl.encoding = p.Encoding
	if pl.encoding == "" {
		pl.encoding = rcp.EncodingJSON
	}
	if !rcp.Contains(pl.caps.Retrieve.Encodings, pl.encoding) {
		if err := pl.unsupported(pl.encoding, "vector encoding %q is not advertised", pl.encoding); err != nil {
			return err
		}
		pl.encoding = rcp.EncodingJSON
	}
	pl.req.Vectors = true
	return nil
}

// planCursor pins the snapshot (indexVersion, or the cursor's) and the
// offset of a cursor's page, which must belong to the same ranked list.
func planCursor(pl *retrievePlan) error {
	p, req := pl.p, pl.req
	pl.hash = requestHash(req, p)
	req.Version = p.IndexVersion
	if p.Cursor == "" {
		return nil
	}
	c, ok := decodeCursor(p.Cursor)
	if !ok {
		return rcp.InvalidParams("cursor", "malformed cursor")
	}
	if c.Hash != pl.hash && (!c.v1 || c.Hash != requestHashV1(req, p)) {
		return rcp.InvalidParams("cursor", "the cursor belongs to a different query or options")
	}
	if p.IndexVersion != "" && p.IndexVersion != c.Version {
		return rcp.InvalidParams("cursor", "the cursor was issued for indexVersion %q, not %q", c.Version, p.IndexVersion)
	}
	req.Version, req.Offset, pl.fromCursor, pl.list = c.Version, c.Offset, true, c.List
	return nil
}

// structuredOptions applies strict to the options that only make sense
// for text units, on a request for a graph or tree unit.
func structuredOptions(p *retrieveParams, unsupported func(option, format string, args ...any) error) error {
	for _, o := range []struct {
		set  bool
		name string
	}{
		{p.HasFilter(), "filter"}, {p.Rerank != nil && !p.Rerank.Disabled, "rerank"},
		{p.MMR != nil, "mmr"}, {p.IncludeVectors != nil && *p.IncludeVectors, "includeVectors"},
	} {
		if o.set {
			if err := unsupported(o.name, "%s does not apply to unit %q", o.name, p.Unit); err != nil {
				return err
			}
		}
	}
	return nil
}

// graphUnitLevel checks the options of a graph unit request (structured
// units take no text options) and returns its level: a community level,
// 0 for the others.
func graphUnitLevel(p *retrieveParams, unsupported func(option, format string, args ...any) error) (int, error) {
	if err := structuredOptions(p, unsupported); err != nil {
		return 0, err
	}
	level := 0
	if p.Level != nil {
		level = *p.Level
	}
	if level > 0 && p.Unit != rcp.UnitCommunity {
		if err := unsupported("level", "unit %q has only level 0", p.Unit); err != nil {
			return 0, err
		}
		level = 0
	}
	return level, nil
}
