// Package retrieval answers retrieve (§7.7): a request is decoded (by hand
// when it has the common shape), planned — checked against the spec and
// the session's frozen capabilities, in the spec's order of precedence,
// into a typed plan — and the plan is run through the pipeline
// (engine/internal/pipeline) under admission and the query gate, with the
// agentic steps it asks for (rewrite, pseudo-relevance feedback, session
// dedup), then shaped into the response (cursors, vectors, pages, usage).
// Graph units and tree nodes above the leaves are answered by the
// knowledge graph (engine/internal/knowledge).
package retrieval

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/internal/agentic"
	"github.com/rcpgo/rcpgo/engine/internal/derive"
	"github.com/rcpgo/rcpgo/engine/internal/fetch"
	"github.com/rcpgo/rcpgo/engine/internal/gate"
	"github.com/rcpgo/rcpgo/engine/internal/knowledge"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// Limits of a retrieve request.
const (
	// MaxQueryBytes caps the text of a retrieve query (-32602 beyond):
	// about 10 000 words, far beyond any real question, small enough that
	// analysis and scoring stay in the milliseconds (docs/hostile-input.md).
	MaxQueryBytes = 64 << 10
	// MaxQueryTerms caps the distinct analysed terms of a query (-32602
	// beyond): each one is a posting list walked in every segment.
	MaxQueryTerms = 1024
	// DefaultCandidateK is candidateK when the client leaves it to the
	// server (at least k).
	DefaultCandidateK = 100
)

// Errors the engine's error table translates.
var (
	// ErrCursorExpired: a cursor's snapshot or ranked list is no longer
	// kept; the client restarts pagination.
	ErrCursorExpired = errors.New("cursor expired")
	// ErrVersionGone: the indexVersion a request pins is not served (any
	// more).
	ErrVersionGone = errors.New("indexVersion cannot be served")
)

// Options configure a Retriever.
type Options struct {
	Index   search.Backend
	Dense   *derive.Dense // nil: no dense recall
	Know    *knowledge.Knowledge
	Agentic *agentic.Agentic
	Gate    *gate.Gate
	Fetch   *fetch.Fetcher
	// Caps returns the capabilities the request's session negotiated.
	Caps func(ctx context.Context) rcp.Capabilities
	// Operators are the filter operators served.
	Operators []string

	MaxK, MaxCandidates int
	Fusion              FusionDefaults
	Reranker            embed.Scorer
	RerankMethod        string
	RerankMax           int
	// TrustedSources, Screen and WireSource rate and screen hits.
	TrustedSources map[string]string
	Screen         bool
	WireSource     string
	// Remote: the backend is not the embedded index (a network search;
	// no snapshots of its own). RemoteEncoder: the query embedder may be
	// another process (an HTTP embedder, or a provider given in code).
	Remote        bool
	RemoteEncoder bool
}

// Retriever answers retrieve. Safe for concurrent use.
type Retriever struct {
	opts    Options
	ix      search.Backend
	dense   *derive.Dense
	know    *knowledge.Knowledge
	agentic *agentic.Agentic
	gate    *gate.Gate
	fetch   *fetch.Fetcher
	ops     []string
	// lists keeps the ranked lists of dense pages (paging.go).
	lists *pipeline.Lists
}

// New is a Retriever over opts.
func New(opts Options) *Retriever {
	return &Retriever{opts: opts, ix: opts.Index, dense: opts.Dense, know: opts.Know, agentic: opts.Agentic, gate: opts.Gate,
		fetch: opts.Fetch, ops: opts.Operators, lists: pipeline.NewLists(denseListBytes, denseListTTL)}
}

// Handle registers retrieve on r.
func (rv *Retriever) Handle(r *rcp.Router) {
	r.HandleFunc(rcp.MethodRetrieve, func(ctx context.Context, raw json.RawMessage) (any, error) {
		p := new(retrieveParams)
		if !decodeRetrieveFast(raw, p) {
			if err := rcp.DecodeParams(raw, p); err != nil {
				return nil, fieldOfQuery(raw, err)
			}
		}
		return rv.retrieve(ctx, p)
	})
}

// fieldOfQuery names "query" in a decoding error that rcp.DecodeParams
// could not attribute (rcp.Query's own UnmarshalJSON rejects the value).
func fieldOfQuery(raw json.RawMessage, err error) error {
	re, ok := rcp.AsError(err)
	if !ok || re.Data == nil || re.Data.Field != "" {
		return err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		var q rcp.Query
		if v, ok := m["query"]; ok && json.Unmarshal(v, &q) != nil {
			return rcp.InvalidParams("query", "%s", re.Data.Detail)
		}
	}
	return err
}
