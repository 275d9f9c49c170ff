package engine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/pipeline"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
	"github.com/rcpgo/rcpgo/rcp/fusion"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

// retrieveParams adds presence information to rcp.RetrieveParams.
type retrieveParams struct {
	rcp.RetrieveParams
	KRaw json.RawMessage `json:"k"`
}

// cursor is the decoded form of an opaque pagination cursor: the snapshot
// the first page was served from, the offset of the next page and a hash of
// the request options that define the ranked list.
type cursor struct {
	Version string `json:"v"`
	Offset  int    `json:"o"`
	Hash    string `json:"h"`
	// v1: an rc1 cursor, whose checksum and Hash are SHA-256 (requestHashV1).
	v1 bool
}

// cursorPrefix names the cursor format: "rc2." checks the body and hashes
// the request with xxhash64. rc1 used SHA-256 for both, ≈ 4 % of a demo
// retrieve's instructions for two short hashes that protect no secret;
// rc1 cursors are still accepted, since cursors survive a clean restart
// (an upgrade), and the next page's cursor is rc2.
const (
	cursorPrefix   = "rc2."
	cursorPrefixV1 = "rc1."
)

func encodeCursor(c cursor) string {
	var buf [160]byte // a typical cursor is encoded on the stack
	b := appendCursorJSON(buf[:0], c)
	b = binary.BigEndian.AppendUint32(b, uint32(xxhash.Sum64(b)))
	var out [256]byte
	return string(base64.RawURLEncoding.AppendEncode(append(out[:0], cursorPrefix...), b))
}

// appendCursorJSON appends json.Marshal(c): by hand when its strings need
// no escaping (snapshot versions and hashes are plain ASCII), else through
// encoding/json.
func appendCursorJSON(b []byte, c cursor) []byte {
	if !plainJSONString(c.Version) || !plainJSONString(c.Hash) {
		j, _ := json.Marshal(c)
		return append(b, j...)
	}
	b = append(append(append(b, `{"v":"`...), c.Version...), `","o":`...)
	b = strconv.AppendInt(b, int64(c.Offset), 10)
	b = append(append(append(b, `,"h":"`...), c.Hash...), `"}`...)
	return b
}

// plainJSONString reports whether encoding/json writes s as is between
// quotes: printable ASCII without quote, backslash or the HTML-escaped <>&.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func decodeCursor(s string) (cursor, bool) {
	var c cursor
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		if rest, c.v1 = strings.CutPrefix(s, cursorPrefixV1); !c.v1 {
			return c, false
		}
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) < 5 {
		return c, false
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	want := uint32(xxhash.Sum64(body))
	if c.v1 {
		full := sha256.Sum256(body)
		want = binary.BigEndian.Uint32(full[:4])
	}
	if binary.BigEndian.Uint32(sum) != want {
		return c, false
	}
	if json.Unmarshal(body, &c) != nil || c.Offset < 0 || c.Version == "" {
		return c, false
	}
	return c, true
}

func (e *Engine) retrieve(ctx context.Context, p *retrieveParams) (*rcp.RetrieveResult, error) {
	started := time.Now()
	caps := e.sessionCaps(ctx) // frozen per session (§13.2)
	strict := p.IsStrict()
	var notes []string
	unsupported := func(option, format string, args ...any) error {
		if strict {
			return rcp.OptionUnsupported(option, format, args...)
		}
		notes = append(notes, fmt.Sprintf(format, args...)+"; ignored (strict:false)")
		return nil
	}

	// Structural validation (-32602), independent of capabilities.
	if len(p.KRaw) == 0 || string(p.KRaw) == "null" {
		return nil, rcp.InvalidParams("k", "k is required")
	}
	n, ok := rcp.DecodeInteger(p.KRaw)
	if !ok {
		return nil, rcp.InvalidParams("k", "k must be a positive integer, got %s", p.KRaw)
	}
	if n < 1 {
		return nil, rcp.InvalidParams("k", "k must be a positive integer, got %d", n)
	}
	k := int(min(n, int64(e.cfg.MaxK)+1))
	if p.Query.IsZero() {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	for i, b := range p.Query.Blocks {
		if err := b.Validate(); err != nil {
			return nil, rcp.InvalidParams(fmt.Sprintf("query[%d]", i), "%v", err)
		}
	}
	if n := queryBytes(p.Query.Blocks); n > MaxQueryBytes {
		return nil, rcp.InvalidParams("query", "the query text is %d bytes; the limit is %d", n, MaxQueryBytes)
	}
	if p.CandidateK != nil && *p.CandidateK < 0 {
		return nil, rcp.InvalidParams("candidateK", "candidateK must be a non-negative integer")
	}
	var topN *int
	if p.Rerank != nil && !p.Rerank.Disabled && p.Rerank.TopN != nil {
		if *p.Rerank.TopN < 0 {
			return nil, rcp.InvalidParams("rerank.topN", "rerank.topN must be a non-negative integer")
		}
		topN = p.Rerank.TopN
	}
	if p.TokenBudget != nil && *p.TokenBudget < 0 {
		return nil, rcp.InvalidParams("tokenBudget", "tokenBudget must be a non-negative integer")
	}
	if p.Level != nil && *p.Level < 0 {
		return nil, rcp.InvalidParams("level", "level must be a non-negative integer")
	}
	if p.MinScore != nil && (math.IsNaN(*p.MinScore) || math.IsInf(*p.MinScore, 0)) {
		return nil, rcp.InvalidParams("minScore", "minScore must be finite")
	}

	// Clamp to the advertised limits (never an error, §7.7), then check
	// the funnel candidateK ≥ rerank.topN ≥ k (§3.3).
	if k > e.cfg.MaxK {
		k = e.cfg.MaxK
	}
	candK := max(k, DefaultCandidateK)
	if p.CandidateK != nil {
		candK = min(*p.CandidateK, e.cfg.MaxCandidates)
		if *p.CandidateK < k {
			return nil, rcp.InvalidParams("candidateK", "funnel violated: candidateK (%d) < k (%d)", *p.CandidateK, k)
		}
		candK = max(candK, k)
	}
	candK = min(candK, e.cfg.MaxCandidates)
	if topN != nil {
		if *topN < k {
			return nil, rcp.InvalidParams("rerank.topN", "funnel violated: rerank.topN (%d) < k (%d)", *topN, k)
		}
		if p.CandidateK != nil && *p.CandidateK < *topN {
			return nil, rcp.InvalidParams("candidateK", "funnel violated: candidateK (%d) < rerank.topN (%d)", *p.CandidateK, *topN)
		}
	}

	// Options against the advertised capabilities (-32005 under strict).
	for _, b := range p.Query.Blocks {
		if !b.IsText() {
			return nil, rcp.OptionUnsupported(b.Type, "query content of type %q is not supported (retrieve.modalities: text)", b.Type)
		}
	}
	if p.Modality != "" && p.Modality != rcp.ModalityText {
		if err := unsupported(p.Modality, "modality %q is not advertised", p.Modality); err != nil {
			return nil, err
		}
	}
	mode := p.Mode
	if mode == "" {
		mode = caps.Retrieve.DefaultMode
	}
	if !rcp.Contains(caps.Retrieve.Modes, mode) {
		if err := unsupported(mode, "mode %q is not advertised", mode); err != nil {
			return nil, err
		}
		notes[len(notes)-1] = fmt.Sprintf("mode %q is not advertised; served %q instead (strict:false)", mode, caps.Retrieve.DefaultMode)
		mode = caps.Retrieve.DefaultMode
	}
	if err := e.resolveBlocks(ctx, p.Query.Blocks, "query"); err != nil {
		return nil, err
	}
	if n := queryBytes(p.Query.Blocks); n > MaxQueryBytes { // fetched uri text counts too
		return nil, rcp.InvalidParams("query", "the query text is %d bytes; the limit is %d", n, MaxQueryBytes)
	}
	req := &pipeline.Request{Query: p.Query.String(), MaxTerms: MaxQueryTerms, K: k, CandidateK: candK, Mode: mode,
		Confidence: true, IncludeText: p.IncludeText == nil || *p.IncludeText, MinScore: p.MinScore,
		TokenBudget: p.TokenBudget}
	// Fusion: the request's options over the server defaults (Config.Fusion).
	fd := e.cfg.Fusion
	method, rrfK, alpha := fd.Method, fd.RRFK, fd.Alpha
	var weights map[string]float64 // only hybrid requests and fusion options need them
	if mode == rcp.ModeHybrid || p.Fusion != nil {
		weights = map[string]float64{"sparse": fd.SparseWeight, "dense": fd.DenseWeight}
	}
	if p.Fusion != nil {
		f := p.Fusion
		if f.Method != "" {
			method = f.Method
		}
		if !rcp.Contains(caps.Retrieve.Fusion, method) {
			if err := unsupported(method, "fusion method %q is not advertised", method); err != nil {
				return nil, err
			}
			method = fd.Method
		}
		for name, w := range f.Weights {
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return nil, rcp.InvalidParams("fusion.weights."+name, "weights must be finite and non-negative")
			}
			weights[name] = w
		}
		if f.Alpha != nil {
			if !(*f.Alpha >= 0 && *f.Alpha <= 1) {
				return nil, rcp.InvalidParams("fusion.alpha", "alpha must be in [0,1]")
			}
			alpha = *f.Alpha
		}
		if f.RRFK != nil {
			if !(*f.RRFK > 0) {
				return nil, rcp.InvalidParams("fusion.rrfK", "rrfK must be positive")
			}
			rrfK = *f.RRFK
		}
		if mode != rcp.ModeHybrid {
			notes = append(notes, "fusion applies to mode \"hybrid\" only; ignored")
		}
	}
	if mode == rcp.ModeHybrid {
		rrfK, alpha := rrfK, alpha // escape only here
		req.Fusion = fusion.Options{Method: method, RRFK: &rrfK, Alpha: &alpha}
		if method == rcp.FusionRRF {
			req.Fusion.Method = ""
		}
		req.Weights = weights
	}
	if p.Rerank != nil && !p.Rerank.Disabled {
		m := p.Rerank.Method
		if m == "" && caps.Rerank != nil {
			m = e.cfg.RerankMethod
		}
		if m == "" {
			m = "rerank"
		}
		if caps.Rerank == nil || !rcp.Contains(caps.Rerank.Methods, m) {
			if err := unsupported(m, "rerank method %q is not advertised", m); err != nil {
				return nil, err
			}
		} else if p.Rerank.Model != "" && !rcp.Contains(caps.Rerank.Models, p.Rerank.Model) {
			if err := unsupported(p.Rerank.Model, "rerank model %q is not advertised", p.Rerank.Model); err != nil {
				return nil, err
			}
		} else {
			req.RerankTopN = e.defaultTopN(k, candK)
			if topN != nil {
				req.RerankTopN = min(*topN, e.cfg.RerankMaxCandidates)
			}
		}
	} else if p.Rerank == nil && caps.Rerank != nil {
		req.RerankTopN = e.defaultTopN(k, candK) // a configured reranker runs by default
	}
	if req.RerankTopN > req.CandidateK {
		req.CandidateK = min(req.RerankTopN, e.cfg.MaxCandidates) // candidateK was server-chosen
	}
	if p.MMR != nil {
		lambda := 0.5
		if p.MMR.Lambda != nil {
			lambda = *p.MMR.Lambda
			if !(lambda >= 0 && lambda <= 1) {
				return nil, rcp.InvalidParams("mmr.lambda", "lambda must be in [0,1]")
			}
		}
		if !caps.Retrieve.MMR {
			if err := unsupported("mmr", "mmr is not advertised"); err != nil {
				return nil, err
			}
		} else {
			req.MMRLambda = &lambda
		}
	}
	plan, note, err := e.planAgentic(p)
	if err != nil {
		return nil, err
	}
	// A single pipeline over the embedded index (whose ranking is a total
	// order: score, then id) may stop recall at the page when the client
	// left candidateK to the server; the pipeline decides whether its
	// stages allow it.
	req.PageDepth = p.CandidateK == nil && plan == nil && e.cfg.Backend == nil
	if note != "" {
		notes = append(notes, note)
	}
	passage, treeLeaf := false, false
	switch p.Unit {
	case "", rcp.UnitChunk:
		req.Unit = rcp.UnitChunk
	case rcp.UnitPassage: // a passage is a chunk, echoed under its own name
		req.Unit, passage = rcp.UnitChunk, true
	case rcp.UnitDocument, rcp.UnitPage:
		req.Unit = p.Unit
	case rcp.UnitCommunity, rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph:
		if e.kg != nil {
			return e.retrieveGraphUnit(ctx, p, k, unsupported, &notes, started)
		}
		fallthrough
	case rcp.UnitTreeNode:
		if t := e.currentTree(); t != nil && p.Unit == rcp.UnitTreeNode {
			if p.Level != nil && *p.Level > 0 {
				if err := structuredOptions(p, unsupported); err != nil {
					return nil, err
				}
				return e.retrieveTreeNode(ctx, t, p.Query.String(), *p.Level, k, &notes, started)
			}
			req.Unit, treeLeaf = rcp.UnitChunk, true // level 0: the leaves are the units
			break
		}
		fallthrough
	default:
		if err := unsupported(p.Unit, "unit %q is not advertised", p.Unit); err != nil {
			return nil, err
		}
		req.Unit = rcp.UnitChunk
	}
	if p.Level != nil && *p.Level != 0 {
		if err := unsupported("level", "level %d is not available (the corpus is flat)", *p.Level); err != nil {
			return nil, err
		}
	}
	if p.HasFilter() {
		if caps.Filter == nil {
			return nil, rcp.OptionUnsupported("filter", "no filter fields are advertised")
		}
		node, err := filter.Validate(p.Filter, caps.Filter.FieldTypes(), e.ops)
		if err != nil {
			return nil, err
		}
		req.Filter = node
	}
	if r := p.Recency; r != nil {
		typ, ok := caps.Filter.FieldTypes()[r.Field]
		if r.Field == "" || !ok || (typ != filter.TypeDate && typ != filter.TypeInt) {
			return nil, rcp.InvalidParams("recency.field", "recency.field must name an advertised date (or year int) field")
		}
		if !(r.HalfLifeDays > 0) || math.IsInf(r.HalfLifeDays, 0) {
			return nil, rcp.InvalidParams("recency.halfLifeDays", "halfLifeDays must be positive")
		}
		now := time.Now().UTC().Truncate(24 * time.Hour) // stable within a day
		req.Recency = &pipeline.Recency{Field: r.Field, HalfLife: time.Duration(r.HalfLifeDays * float64(24*time.Hour)), Now: now}
		notes = append(notes, "recency decay relative to "+now.Format("2006-01-02"))
	}
	encoding := ""
	if p.IncludeVectors != nil && *p.IncludeVectors {
		if caps.Embed == nil {
			if err := unsupported("includeVectors", "includeVectors needs a dense encoder (embed is not advertised)"); err != nil {
				return nil, err
			}
		} else {
			encoding = p.Encoding
			if encoding == "" {
				encoding = rcp.EncodingJSON
			}
			if !rcp.Contains(caps.Retrieve.Encodings, encoding) {
				if err := unsupported(encoding, "vector encoding %q is not advertised", encoding); err != nil {
					return nil, err
				}
				encoding = rcp.EncodingJSON
			}
			req.Vectors = true
		}
	}

	// Pagination and snapshot pinning.
	hash := requestHash(req, p)
	fromCursor := false
	req.Version = p.IndexVersion
	if p.Cursor != "" {
		c, ok := decodeCursor(p.Cursor)
		if !ok {
			return nil, rcp.InvalidParams("cursor", "malformed cursor")
		}
		if c.Hash != hash && (!c.v1 || c.Hash != requestHashV1(req, p)) {
			return nil, rcp.InvalidParams("cursor", "the cursor belongs to a different query or options")
		}
		if p.IndexVersion != "" && p.IndexVersion != c.Version {
			return nil, rcp.InvalidParams("cursor", "the cursor was issued for indexVersion %q, not %q", c.Version, p.IndexVersion)
		}
		req.Version, req.Offset, fromCursor = c.Version, c.Offset, true
	}

	deps := &pipeline.Deps{Sparse: e.ix, Reranker: e.cfg.Reranker, Compile: e.ix.CompileFilter, Screen: !e.cfg.NoScreen, WireName: WireSource,
		Trust: trust.Policy{Sources: e.cfg.TrustedSources}}
	if rcp.ProgressAllowed(ctx) || rcp.LogEnabled(ctx, rcp.LogDebug) { // else stage reports are not even formatted
		deps.Observe = func(stage string, progress float64, msg string, partial []rcp.Hit) {
			pp := rcp.ProgressParams{Progress: &progress, Stage: stage, Message: msg}
			if len(partial) > 0 {
				pp.Partial = &rcp.Partial{Hits: partial}
			}
			_ = rcp.ReportProgress(ctx, pp)
			rcp.Log(ctx, rcp.LogDebug, msg, map[string]any{"stage": stage})
		}
	}

	usesDense := mode != rcp.ModeSparse || req.MMRLambda != nil || req.Vectors
	if usesDense {
		g, err := e.denseFor(ctx, caps)
		if err != nil {
			return nil, err
		}
		deps.Dense = e.denseDeps(g, req.Filter)
		if n := e.denseBacklog(g); n > 0 {
			notes = append(notes, fmt.Sprintf("dense: %d recent writes not yet embedded; their units are found by sparse recall only", n))
		}
	}
	local := plan == nil && req.RerankTopN == 0 && !e.callsOut(usesDense)
	narrowed, err := e.admit.admit(ctx, local)
	if err != nil {
		return nil, err
	}
	defer e.admit.release(narrowed)
	unlock, err := e.readLock(ctx)
	if err != nil {
		return nil, err
	}
	if usesDense {
		if req.Version != "" && req.Version != e.ix.Version() {
			unlock()
			if fromCursor {
				return nil, &rcp.Error{Code: rcp.CodeNotFound, Message: "cursor expired: the index changed and dense retrieval serves only the current snapshot",
					Data: &rcp.ErrorData{Field: "cursor", Detail: "restart pagination"}}
			}
			return nil, backendGone(req.Version, "dense retrieval serves only the current snapshot")
		}
	}
	page, rewritten, err := e.runPlanned(ctx, deps, req, plan)
	unlock()
	if err != nil {
		if errors.Is(err, index.ErrSnapshotGone) || errors.Is(err, index.ErrBadVersion) {
			if fromCursor {
				return nil, &rcp.Error{Code: rcp.CodeNotFound, Message: "cursor expired: its snapshot is no longer retained",
					Data: &rcp.ErrorData{Field: "cursor", Detail: "restart pagination"}}
			}
			return nil, backendGone(req.Version, "the snapshot is not retained")
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if errors.Is(err, index.ErrTooManyTerms) {
			return nil, rcp.InvalidParams("query", "the query has more than %d distinct terms", MaxQueryTerms)
		}
		return nil, fmt.Errorf("engine: retrieve: %w", err)
	}

	res := &rcp.RetrieveResult{Hits: page.Hits, IndexVersion: page.Version, RewrittenQuery: rewritten}
	if page.Next >= 0 {
		res.NextCursor = encodeCursor(cursor{Version: page.Version, Offset: page.Next, Hash: hash})
	}
	if req.Vectors {
		for i := range res.Hits {
			if v := page.Vectors[i]; v != nil {
				if encoding == rcp.EncodingF32Base64 {
					res.Hits[i].Vector, _ = json.Marshal(vector.EncodeToString(v))
				} else if b, err := vector.AppendJSON(nil, v); err == nil {
					res.Hits[i].Vector = b
				}
			}
		}
		if encoding == rcp.EncodingF32Base64 {
			res.Meta = res.Meta.Set("encoding", encoding)
		}
	}
	if req.Unit == rcp.UnitPage {
		if err := e.fillPages(ctx, res.Hits, req.IncludeText); err != nil {
			return nil, err
		}
	}
	if treeLeaf {
		for i := range res.Hits {
			h := &res.Hits[i]
			zero := 0
			h.Unit, h.Level, h.Provenance = rcp.UnitTreeNode, &zero, &rcp.Provenance{Leaves: []string{h.ID.String()}}
		}
	}
	if passage {
		for i := range res.Hits {
			if res.Hits[i].Unit == rcp.UnitChunk {
				res.Hits[i].Unit = rcp.UnitPassage
			}
		}
	}
	u := &usageParts{cands: page.Candidates, tokens: page.Tokens, reranked: page.Reranked,
		lat: float64(time.Since(started).Microseconds()) / 1000}
	u.usage = rcp.Usage{Candidates: &u.cands, LatencyMs: &u.lat, Tokens: &u.tokens, Notes: append(notes, page.Notes...)}
	if page.Reranked > 0 {
		u.usage.Reranked = &u.reranked
	}
	res.Usage = &u.usage
	return res, nil
}

// usageParts holds a retrieve result's usage and what it points to, in one
// allocation.
type usageParts struct {
	usage                   rcp.Usage
	cands, tokens, reranked int
	lat                     float64
}

// callsOut reports whether a retrieve's recall may wait on another
// process rather than a core: a backend other than the embedded index
// (Config.Backend: Weaviate searches over the network), or, for a
// retrieve that uses dense, a query embedder that is not local (anything
// but LSA and a local ONNX model: an HTTP embedder, or a provider given in
// code that may be one).
func (e *Engine) callsOut(usesDense bool) bool {
	return e.cfg.Backend != nil || usesDense && e.cfg.DenseProvider != nil && e.cfg.Dense != DenseONNX
}

// defaultTopN is rerank.topN when the client leaves it to the server:
// max(k, 20), within candidateK and rerank.maxCandidates.
func (e *Engine) defaultTopN(k, candK int) int {
	return min(max(k, 20), candK, e.cfg.RerankMaxCandidates)
}

func backendGone(version, why string) *rcp.Error {
	no := false
	return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: fmt.Sprintf("indexVersion %q cannot be served", version),
		Data: &rcp.ErrorData{Field: "indexVersion", Retryable: &no, Detail: why}}
}

// requestHash identifies the ranked list a request defines (everything but
// k, tokenBudget, cursor and output options).
func requestHash(r *pipeline.Request, p *retrieveParams) string {
	var buf [256]byte // most requests hash from the stack
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], xxhash.Sum64(appendRequestKey(buf[:0], r, p)))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// requestHashV1 is requestHash as rc1 cursors carry it.
func requestHashV1(r *pipeline.Request, p *retrieveParams) string {
	sum := sha256.Sum256(appendRequestKey(nil, r, p))
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// appendRequestKey appends what defines a request's ranked list.
func appendRequestKey(b []byte, r *pipeline.Request, p *retrieveParams) []byte {
	b = append(b, r.Query...)
	b = append(b, 0)
	b = append(append(b, r.Mode...), '|')
	b = append(append(b, r.Unit...), '|')
	b = append(strconv.AppendInt(b, int64(r.CandidateK), 10), '|')
	b = append(strconv.AppendInt(b, int64(r.RerankTopN), 10), '|')
	if r.Filter != nil {
		b = append(b, r.Filter.String()...)
	}
	b = appendJSON(b, p.Fusion)
	b = appendJSON(b, p.MMR)
	b = appendJSON(b, p.Recency)
	b = append(b, rewriteKey(p)...)
	if r.MinScore != nil {
		b = strconv.AppendFloat(b, *r.MinScore, 'g', -1, 64)
	}
	return b
}

// queryBytes is the size of the text blocks of a query (uri blocks are
// bounded when they are fetched).
func queryBytes(blocks []rcp.Content) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Text)
	}
	return n
}

// appendJSON appends v's JSON encoding ("null" for nil, without the
// encoder: most requests leave these options out).
func appendJSON[T any](b []byte, v *T) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	j, _ := json.Marshal(v)
	return append(b, j...)
}

// readLock lets a retrieve over the embedded index run: it waits while a
// commit is in progress (queryGate), so that a commit, not the query
// pipelines, gets the CPU — retrieves arriving during one queue here,
// holding their query slot — and then holds qmu, which a commit takes
// before it changes the index, so a retrieve sees one index version. A
// commit does not wait for the retrieves already running when it begins:
// they finish while it writes engine.db (retrieves read nothing there that
// a commit writes). Over a Config.Backend it takes nothing: the backend
// pins no version and the retrieve reads nothing local a write changes, so
// it must not wait for a remote batch import, which a write holds the
// lock through (seconds).
func (e *Engine) readLock(ctx context.Context) (unlock func(), err error) {
	if e.cfg.Backend != nil {
		return func() {}, nil
	}
	if g := e.queryGate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.qmu.RLock()
	return e.readUnlock, nil
}

// shutQueries makes retrieves that arrive wait until openQueries (caller
// holds wmu, so commits do not nest).
func (e *Engine) shutQueries() {
	g := make(chan struct{})
	e.queryGate.Store(&g)
}

func (e *Engine) openQueries() {
	if g := e.queryGate.Swap(nil); g != nil {
		close(*g)
	}
}
