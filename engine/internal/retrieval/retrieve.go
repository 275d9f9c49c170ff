package retrieval

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
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
	// List names the kept ranked list the pages come from (a list that
	// uses dense recall: paging.go); "" for a sparse list.
	List string `json:"l,omitempty"`
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
	if !plainJSONString(c.Version) || !plainJSONString(c.Hash) || !plainJSONString(c.List) {
		j, _ := json.Marshal(c)
		return append(b, j...)
	}
	b = append(append(append(b, `{"v":"`...), c.Version...), `","o":`...)
	b = strconv.AppendInt(b, int64(c.Offset), 10)
	b = append(append(append(b, `,"h":"`...), c.Hash...), '"')
	if c.List != "" {
		b = append(append(append(b, `,"l":"`...), c.List...), '"')
	}
	return append(b, '}')
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

// retrieve answers retrieve: planRetrieve checks the request into a plan
// (or answers a graph unit or tree node itself), runRetrieve runs the
// plan's pipeline, and result shapes the page into the response.
func (rv *Retriever) retrieve(ctx context.Context, p *retrieveParams) (*rcp.RetrieveResult, error) {
	var pl retrievePlan
	if res, done, err := rv.planRetrieve(ctx, p, &pl); done || err != nil {
		return res, err
	}
	page, rewritten, err := rv.runRetrieve(ctx, &pl)
	if err != nil {
		return nil, err
	}
	return rv.result(ctx, &pl, page, rewritten)
}

// runRetrieve runs pl's pipeline under admission and the read lock, and
// turns the pipeline's errors into the spec's.
func (rv *Retriever) runRetrieve(ctx context.Context, pl *retrievePlan) (*pipeline.Page, string, error) {
	req := pl.req
	deps := &pipeline.Deps{Sparse: rv.ix, Reranker: rv.opts.Reranker, Compile: rv.ix.CompileFilter, Screen: rv.opts.Screen, WireName: rv.opts.WireSource,
		Trust: trust.Policy{Sources: rv.opts.TrustedSources}}
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
	usesDense := req.Mode != rcp.ModeSparse || req.MMRLambda != nil || req.Vectors
	if usesDense {
		g, err := rv.dense.For(ctx, pl.caps)
		if err != nil {
			return nil, "", err
		}
		deps.Dense = rv.dense.Recall(g, req.Filter)
		rv.dense.AwaitEmbedded(ctx, g)
		if n := rv.dense.Backlog(g); n > 0 {
			pl.notes = append(pl.notes, fmt.Sprintf("dense: %d recent writes not yet embedded; their units are found by sparse recall only", n))
		}
	}
	local := pl.agentic == nil && req.RerankTopN == 0 && !rv.callsOut(usesDense)
	narrowed, err := rv.gate.Admit(ctx, local)
	if err != nil {
		return nil, "", err
	}
	defer rv.gate.Release(narrowed)
	unlock, err := rv.readLock(ctx)
	if err != nil {
		return nil, "", err
	}
	page, rewritten, err := rv.runPaged(ctx, deps, pl, usesDense)
	unlock()
	switch {
	case err == nil:
		return page, rewritten, nil
	case errors.Is(err, search.ErrSnapshotGone) || errors.Is(err, search.ErrBadVersion):
		return nil, "", pl.snapshotGone("its snapshot is no longer retained", "the snapshot is not retained")
	}
	return nil, "", fmt.Errorf("engine: retrieve: %w", err) // the error table answers ctx's and too many terms

}

// snapshotGone is the error for a pinned snapshot the request cannot be
// served from: an expired cursor (restart pagination), or an indexVersion
// no longer served.
func (pl *retrievePlan) snapshotGone(cursorWhy, versionWhy string) error {
	if pl.fromCursor {
		return &fault.Error{Err: ErrCursorExpired, Message: "cursor expired: " + cursorWhy, Field: "cursor", Detail: "restart pagination"}
	}
	return &fault.Error{Err: ErrVersionGone, Message: fmt.Sprintf("indexVersion %q cannot be served", pl.req.Version),
		Field: "indexVersion", Detail: versionWhy}
}

// result shapes a page into pl's response: the next cursor, vectors in the
// requested encoding, pages' text, the units the client asked by name,
// and usage.
func (rv *Retriever) result(ctx context.Context, pl *retrievePlan, page *pipeline.Page, rewritten string) (*rcp.RetrieveResult, error) {
	req := pl.req
	res := &rcp.RetrieveResult{Hits: page.Hits, IndexVersion: page.Version, RewrittenQuery: rewritten}
	if page.Next >= 0 {
		res.NextCursor = encodeCursor(cursor{Version: page.Version, Offset: page.Next, Hash: pl.hash, List: pl.list})
	}
	if req.Vectors {
		pl.encodeVectors(res, page.Vectors)
	}
	if req.Unit == rcp.UnitPage {
		if err := rv.fillPages(ctx, res.Hits, req.IncludeText); err != nil {
			return nil, err
		}
	}
	for i := range res.Hits {
		h := &res.Hits[i]
		switch {
		case pl.treeLeaf:
			zero := 0
			h.Unit, h.Level, h.Provenance = rcp.UnitTreeNode, &zero, &rcp.Provenance{Leaves: []string{h.ID.String()}}
		case pl.passage && h.Unit == rcp.UnitChunk:
			h.Unit = rcp.UnitPassage
		}
	}
	u := &usageParts{cands: page.Candidates, tokens: page.Tokens, reranked: page.Reranked,
		lat: float64(time.Since(pl.started).Microseconds()) / 1000}
	u.usage = rcp.Usage{Candidates: &u.cands, LatencyMs: &u.lat, Tokens: &u.tokens, Notes: append(pl.notes, page.Notes...)}
	if page.Reranked > 0 {
		u.usage.Reranked = &u.reranked
	}
	res.Usage = &u.usage
	return res, nil
}

// encodeVectors sets each hit's vector in pl's encoding.
func (pl *retrievePlan) encodeVectors(res *rcp.RetrieveResult, vectors [][]float32) {
	for i := range res.Hits {
		if v := vectors[i]; v != nil {
			if pl.encoding == rcp.EncodingF32Base64 {
				res.Hits[i].Vector, _ = json.Marshal(vector.EncodeToString(v))
			} else if b, err := vector.AppendJSON(nil, v); err == nil {
				res.Hits[i].Vector = b
			}
		}
	}
	if pl.encoding == rcp.EncodingF32Base64 {
		res.Meta = res.Meta.Set("encoding", pl.encoding)
	}
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
func (rv *Retriever) callsOut(usesDense bool) bool {
	return rv.opts.Remote || usesDense && rv.opts.RemoteEncoder
}

// defaultTopN is rerank.topN when the client leaves it to the server:
// max(k, 20), within candidateK and rerank.maxCandidates.
func (rv *Retriever) defaultTopN(k, candK int) int {
	return min(max(k, 20), candK, rv.opts.RerankMax)
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
	if p.Level != nil { // tree-node and community levels are lists of their own
		b = strconv.AppendInt(append(b, "|level="...), int64(*p.Level), 10)
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

// readLock lets a retrieve read the index at one version, after any
// commit in progress (gate.ReadIndex). Over a Config.Backend it takes
// nothing: the backend pins no version and the retrieve reads nothing
// local a write changes, so it must not wait for a remote batch import,
// which a write holds the write lock through (seconds).
func (rv *Retriever) readLock(ctx context.Context) (unlock func(), err error) {
	if rv.opts.Remote {
		return func() {}, nil
	}
	return rv.gate.ReadIndex(ctx)
}
