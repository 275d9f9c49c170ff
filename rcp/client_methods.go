package rcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
)

// Typed methods of §7. Each applies client-side gating before any I/O
// (§14.4): -32003 when the capability is not advertised, -32005 for an
// option value outside the advertised set (unless strict:false where the
// method has it), and pre-clamping of k / candidateK / topN to advertised
// bounds (§4.7). The caller's params are never modified.

func call[R any](ctx context.Context, c *Client, method string, params any) (*R, error) {
	r := new(R)
	if err := c.Call(ctx, method, params, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Info returns the server's identity and capabilities (§7.2).
func (c *Client) Info(ctx context.Context) (*InitializeResult, error) {
	return call[InitializeResult](ctx, c, MethodInfo, nil)
}

// Ping checks liveness; nonce (string or number, may be nil) is echoed (§7.15).
func (c *Client) Ping(ctx context.Context, nonce any) (*PingResult, error) {
	p := map[string]any{}
	if nonce != nil {
		p["nonce"] = nonce
	}
	return call[PingResult](ctx, c, MethodPing, p)
}

// Shutdown asks the server to end the session (§7.12). Close the client
// afterwards.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.Call(ctx, MethodShutdown, nil, nil)
}

func optionErr(option, format string, args ...any) error {
	return OptionUnsupported(option, format, args...)
}

// advertised lists values for an error message.
func advertised(vals []string) string {
	if len(vals) == 0 {
		return "none"
	}
	return strings.Join(vals, ", ")
}

func encodingAllowed(enc string, advertised []string) bool {
	return enc == "" || enc == EncodingJSON || Contains(advertised, enc)
}

// Embed embeds inputs (§7.3).
func (c *Client) Embed(ctx context.Context, p *EmbedParams) (*EmbedResult, error) {
	if err := gate(c.Capabilities(), MethodEmbed); err != nil {
		return nil, err
	}
	if cp := c.Capabilities().Embed; cp != nil && !encodingAllowed(p.Encoding, cp.Encodings) && (p.Strict == nil || *p.Strict) {
		return nil, optionErr("encoding", "server did not advertise encoding %q", p.Encoding)
	}
	return call[EmbedResult](ctx, c, MethodEmbed, p)
}

// EmbedSparse computes learned-sparse vectors (§7.4).
func (c *Client) EmbedSparse(ctx context.Context, p *SparseEmbedParams) (*SparseEmbedResult, error) {
	return call[SparseEmbedResult](ctx, c, MethodEmbedSparse, p)
}

// EmbedMulti computes multi-vector matrices (§7.5).
func (c *Client) EmbedMulti(ctx context.Context, p *EmbedParams) (*MultiEmbedResult, error) {
	if err := gate(c.Capabilities(), MethodEmbedMulti); err != nil {
		return nil, err
	}
	if cp := c.Capabilities().MultiVector; cp != nil && !encodingAllowed(p.Encoding, cp.Encodings) && (p.Strict == nil || *p.Strict) {
		return nil, optionErr("encoding", "server did not advertise encoding %q", p.Encoding)
	}
	return call[MultiEmbedResult](ctx, c, MethodEmbedMulti, p)
}

// Rerank rescores passages (§7.6).
func (c *Client) Rerank(ctx context.Context, p *RerankParams) (*RerankResult, error) {
	if err := gate(c.Capabilities(), MethodRerank); err != nil {
		return nil, err
	}
	cp := c.Capabilities().Rerank
	if p.Method != "" && len(cp.Methods) > 0 && !Contains(cp.Methods, p.Method) {
		return nil, optionErr("method", "server did not advertise rerank method %q", p.Method)
	}
	q := *p
	if q.TopN != nil && cp.MaxCandidates > 0 && *q.TopN > cp.MaxCandidates {
		q.TopN = ptr(cp.MaxCandidates)
	}
	res, err := call[RerankResult](ctx, c, MethodRerank, &q)
	if err != nil {
		return nil, err
	}
	normalizeRerank(res, max(len(q.Passages), len(q.Documents)))
	return res, nil
}

// normalizeRerank fills scores/order from the legacy results[] form some
// servers send instead (the passages they did not score get the lowest
// score of the answer, so scores[i] still lines up with passages[i]).
func normalizeRerank(r *RerankResult, n int) {
	if len(r.Scores) > 0 || len(r.Results) == 0 {
		return
	}
	low := r.Results[0].Score
	for _, x := range r.Results {
		low = min(low, x.Score)
	}
	r.Scores = make([]float64, n)
	for i := range r.Scores {
		r.Scores[i] = low
	}
	order := make([]int, 0, len(r.Results))
	for _, x := range r.Results {
		if x.Index >= 0 && x.Index < n {
			r.Scores[x.Index] = x.Score
			order = append(order, x.Index)
		}
	}
	if r.Order == nil {
		r.Order = order
	}
}

// Retrieve runs the server's retrieval pipeline (§7.7).
func (c *Client) Retrieve(ctx context.Context, p *RetrieveParams) (*RetrieveResult, error) {
	q, err := c.prepareRetrieve(p)
	if err != nil {
		return nil, err
	}
	return call[RetrieveResult](ctx, c, MethodRetrieve, q)
}

// prepareRetrieve gates and pre-clamps a copy of p.
func (c *Client) prepareRetrieve(p *RetrieveParams) (*RetrieveParams, error) {
	if err := gate(c.Capabilities(), MethodRetrieve); err != nil {
		return nil, err
	}
	caps := c.Capabilities()
	rc := caps.Retrieve
	q := *p
	if q.IsStrict() {
		if modes := caps.RetrieveModes(); q.Mode != "" && len(modes) > 0 && !Contains(modes, q.Mode) {
			return nil, optionErr("mode", "server did not advertise mode %q (advertised: %s)", q.Mode, advertised(modes))
		}
		if q.Fusion != nil && q.Fusion.Method != "" && !Contains(rc.Fusion, q.Fusion.Method) {
			return nil, optionErr("fusion.method", "server did not advertise fusion %q (advertised: %s)", q.Fusion.Method, advertised(rc.Fusion))
		}
		if q.Rerank != nil && !q.Rerank.Disabled {
			if !rc.RerankBuiltin {
				return nil, optionErr("rerank", "server did not advertise built-in rerank (retrieve.rerankBuiltin)")
			}
			if q.Rerank.Method != "" && caps.Rerank != nil && len(caps.Rerank.Methods) > 0 && !Contains(caps.Rerank.Methods, q.Rerank.Method) {
				return nil, optionErr("rerank.method", "server did not advertise rerank method %q", q.Rerank.Method)
			}
		}
		if q.Unit != "" {
			units := rc.Units
			if len(units) == 0 {
				units = []string{UnitChunk, UnitPassage}
			}
			if !Contains(units, q.Unit) {
				return nil, optionErr("unit", "server did not advertise unit %q (advertised: %s)", q.Unit, advertised(units))
			}
		}
		if q.Modality != "" {
			mods := rc.Modalities
			if len(mods) == 0 {
				mods = []string{ModalityText}
			}
			if !Contains(mods, q.Modality) {
				return nil, optionErr("modality", "server did not advertise modality %q (advertised: %s)", q.Modality, advertised(mods))
			}
		}
		if !encodingAllowed(q.Encoding, rc.Encodings) {
			return nil, optionErr("encoding", "server did not advertise encoding %q", q.Encoding)
		}
		if q.MMR != nil && !rc.MMR {
			return nil, optionErr("mmr", "server did not advertise mmr")
		}
		if q.Filter != nil && caps.Filter == nil {
			return nil, optionErr("filter", "server did not advertise filter (it declares no filterable metadata fields)")
		}
		if q.Cursor != "" && caps.Pagination == nil {
			return nil, optionErr("cursor", "server did not advertise pagination")
		}
	}
	// Pre-clamp to advertised bounds (§4.7, §7.7).
	if rc.MaxK > 0 {
		q.K = min(q.K, rc.MaxK)
		if q.CandidateK != nil {
			q.CandidateK = ptr(min(*q.CandidateK, rc.MaxK))
		}
	}
	if q.Rerank != nil && !q.Rerank.Disabled && q.Rerank.TopN != nil && caps.Rerank != nil && caps.Rerank.MaxCandidates > 0 && *q.Rerank.TopN > caps.Rerank.MaxCandidates {
		r := *q.Rerank
		r.TopN = ptr(caps.Rerank.MaxCandidates)
		q.Rerank = &r
	}
	return &q, nil
}

// Transform rewrites or expands a query (§7.8).
func (c *Client) Transform(ctx context.Context, p *TransformParams) (*TransformResult, error) {
	if err := gate(c.Capabilities(), MethodTransform); err != nil {
		return nil, err
	}
	if m := c.Capabilities().Transform.Methods; p.Method != "" && len(m) > 0 && !Contains(m, p.Method) {
		return nil, optionErr("method", "server did not advertise transform method %q", p.Method)
	}
	return call[TransformResult](ctx, c, MethodTransform, p)
}

// Graph runs a graph operation (§7.9).
func (c *Client) Graph(ctx context.Context, p *GraphParams) (*GraphResult, error) {
	if err := gate(c.Capabilities(), MethodGraph); err != nil {
		return nil, err
	}
	if ops := c.Capabilities().Graph.Ops; len(ops) > 0 && !Contains(ops, p.Op) {
		return nil, optionErr("op", "server did not advertise graph op %q", p.Op)
	}
	return call[GraphResult](ctx, c, MethodGraph, p)
}

// IndexAdd upserts documents (§7.10). It needs index.writable.
func (c *Client) IndexAdd(ctx context.Context, p *IndexAddParams) (*IndexAddResult, error) {
	if err := gate(c.Capabilities(), MethodIndexAdd); err != nil {
		return nil, err
	}
	ic := c.Capabilities().Index
	if p.Chunk != nil && *p.Chunk && !ic.Chunking {
		return nil, optionErr("chunk", "server did not advertise index.chunking")
	}
	if p.Contextual != nil && *p.Contextual && !ic.Contextual {
		return nil, optionErr("contextual", "server did not advertise index.contextual")
	}
	return call[IndexAddResult](ctx, c, MethodIndexAdd, p)
}

// IndexDelete deletes documents by id (§7.11).
func (c *Client) IndexDelete(ctx context.Context, p *IndexDeleteParams) (*IndexDeleteResult, error) {
	return call[IndexDeleteResult](ctx, c, MethodIndexDelete, p)
}

// CatalogList lists the engines an aggregator federates (§7.13).
func (c *Client) CatalogList(ctx context.Context) (*CatalogListResult, error) {
	return call[CatalogListResult](ctx, c, MethodCatalogList, nil)
}

// Feedback sends relevance/reward/integrity signals (§7.16).
func (c *Client) Feedback(ctx context.Context, p *FeedbackParams) (*FeedbackResult, error) {
	return call[FeedbackResult](ctx, c, MethodFeedback, p)
}

// MemoryBuild builds or updates a memory (§7.17).
func (c *Client) MemoryBuild(ctx context.Context, p *MemoryBuildParams) (*MemoryBuildResult, error) {
	if err := gate(c.Capabilities(), MethodMemoryBuild); err != nil {
		return nil, err
	}
	if s := c.Capabilities().Memory.Scopes; p.Scope != "" && len(s) > 0 && !Contains(s, p.Scope) {
		return nil, optionErr("scope", "server did not advertise memory scope %q", p.Scope)
	}
	return call[MemoryBuildResult](ctx, c, MethodMemoryBuild, p)
}

// MemoryRecall recalls clues from a memory (§7.17).
func (c *Client) MemoryRecall(ctx context.Context, p *MemoryRecallParams) (*MemoryRecallResult, error) {
	return call[MemoryRecallResult](ctx, c, MethodMemoryRecall, p)
}

// Proxy is a Handler that forwards to a Client, so a remote engine can be
// served (or federated) as if it were local. Progress from the remote engine
// is relayed to the caller when the caller asked for it.
type Proxy struct{ c *Client }

// NewProxy wraps c as a Handler.
func NewProxy(c *Client) *Proxy { return &Proxy{c: c} }

// Client returns the wrapped client.
func (p *Proxy) Client() *Client { return p.c }

// Describe reports the remote server's identity, capabilities and level.
func (p *Proxy) Describe(context.Context) Description {
	init := p.c.InitializeResult()
	d := Description{Server: init.Server, Capabilities: init.Capabilities, Conformance: p.c.Conformance()}
	for k, v := range init.Meta {
		if k == MetaSession || k == MetaConformance {
			continue
		}
		if d.Meta == nil {
			d.Meta = Meta{}
		}
		d.Meta[k] = v
	}
	return d
}

// Call forwards method and params unchanged; remote RCP errors pass through,
// transport failures become -32010.
func (p *Proxy) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if ProgressAllowed(ctx) {
		up := ctx
		ctx = WithProgress(ctx, func(pp ProgressParams) { _ = ReportProgress(up, pp) })
	}
	var out json.RawMessage
	err := p.c.Call(ctx, method, stripProgressToken(params), &out)
	if err == nil {
		return out, nil
	}
	if _, ok := AsError(err); ok {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &Error{Code: CodeBackendUnavailable, Message: "upstream engine unavailable",
		Data: &ErrorData{Retryable: ptr(true), Detail: err.Error()}}
}

// stripProgressToken removes the caller's progress token: the proxy attaches
// its own when it relays progress.
func stripProgressToken(params json.RawMessage) json.RawMessage {
	if !jsonContains(params, MetaProgressToken) {
		return params
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(obj["_meta"], &meta) != nil || meta == nil {
		return params
	}
	delete(meta, MetaProgressToken)
	obj["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}

func jsonContains(b []byte, key string) bool {
	return bytes.Contains(b, []byte(`"`+key+`"`))
}
