package federation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// GatewayOptions configure a Gateway. The zero value (or nil) is usable.
type GatewayOptions struct {
	// Identity names this gateway in _meta.federation.path (§16.2) and in
	// its initialize _meta.federation.id. Default: "gateway-" + 8 random
	// hex digits, unique per process so two gateways never collide.
	Identity string
	// Server is the identity reported in initialize/info (default
	// {"rcpd-gateway", "0.1.0"}).
	Server rcp.PeerInfo
	// Federation configures fan-out and fusion; its Identity is set to the
	// gateway's.
	Federation Options
	// MaxK is the largest k the gateway serves (requests are clamped; default 100).
	MaxK int
	// HideEndpoints keeps engine endpoints out of catalog/list. By default
	// the URL of an HTTP engine that needs no configured headers is exposed;
	// stdio engines never are (their command line only means something on
	// this host).
	HideEndpoints bool
}

// Gateway is an rcp.Handler that makes a federation an RCP server of its
// own (§7.13, §16): retrieve fans out and fuses, catalog/list describes the
// engines, graph local and drift fan out and fuse (gateway_graph.go), and
// embed, embed/sparse, embed/multi, rerank, query/transform, the other
// graph ops and memory/build + memory/recall are routed to one engine
// chosen deterministically.
//
// Single-engine methods are pinned: the first time an engine advertising
// the capability is known (engines in priority order, registry order among
// equals), that engine serves the method for the gateway's lifetime. Embed
// vectors from different engines live in different spaces, so all embed
// calls go to that one engine; when it is down the call fails with -32010
// rather than silently switching spaces. Pinned graph ops are pinned per
// op; a memory lives in the engine that built it, so memory calls stay on
// the memory engine too.
//
// Capabilities are computed from the engines known when a session starts
// and the server freezes them for that session (§13.2); an engine that dies
// later makes the calls it would serve fail with -32010, it never shrinks an
// advertised set.
type Gateway struct {
	fed  *Federation
	opts GatewayOptions

	mu        sync.Mutex
	warming   chan struct{}      // closed when a ConnectAsync warm-up ends
	warmUntil time.Time          // Describe waits for the warm-up until then
	pins      map[string]*Engine // capability key -> engine
	graphPins map[string]*Engine // graph op -> engine
	graphOps  []string           // pin order

	origins hitOrigins // hit id → engine, for feedback (gateway_feedback.go)
	pages   keptPages  // fused lists kept for their pages (gateway_pages.go)
}

// routed maps single-engine methods to their capability keys.
var routed = map[string]string{
	rcp.MethodEmbed:       rcp.CapEmbed,
	rcp.MethodEmbedSparse: rcp.CapSparseEmbed,
	rcp.MethodEmbedMulti:  rcp.CapMultiVector,
	rcp.MethodRerank:      rcp.CapRerank,
	rcp.MethodTransform:   rcp.CapTransform,
	// A memoryId names a memory in one engine (gateway_graph.go).
	rcp.MethodMemoryBuild:  rcp.CapMemory,
	rcp.MethodMemoryRecall: rcp.CapMemory,
	// Writes go to one engine: the first writable one (gateway_caps.go).
	rcp.MethodIndexAdd:    rcp.CapIndex,
	rcp.MethodIndexDelete: rcp.CapIndex,
}

// NewGateway returns a gateway over the registry's engines. Call Connect
// before serving so the first sessions see the engines' capabilities.
func NewGateway(reg *Registry, opts *GatewayOptions) *Gateway {
	var o GatewayOptions
	if opts != nil {
		o = *opts
	}
	engines := make([]*Engine, len(reg.Engines))
	for i, spec := range reg.Engines {
		engines[i] = NewEngine(spec, o.Federation.Client)
	}
	return NewGatewayEngines(engines, &o)
}

// NewGatewayEngines returns a gateway over prepared engine handles.
func NewGatewayEngines(engines []*Engine, opts *GatewayOptions) *Gateway {
	g := &Gateway{pins: map[string]*Engine{}, graphPins: map[string]*Engine{}}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Identity == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		g.opts.Identity = "gateway-" + hex.EncodeToString(b[:])
	}
	if g.opts.Server.Name == "" {
		g.opts.Server = rcp.PeerInfo{Name: "rcpd-gateway", Version: "0.1.0"}
	}
	if g.opts.MaxK <= 0 {
		g.opts.MaxK = 100
	}
	fo := g.opts.Federation
	fo.Identity = g.opts.Identity
	g.fed = NewFromEngines(engines, &fo)
	return g
}

// Identity returns the gateway's federation identity.
func (g *Gateway) Identity() string { return g.opts.Identity }

// Federation returns the federation behind the gateway.
func (g *Gateway) Federation() *Federation { return g.fed }

// Connect dials every engine (see Federation.Connect); failures are
// returned joined and the engines are retried lazily.
func (g *Gateway) Connect(ctx context.Context) error { return g.fed.Connect(ctx) }

// ConnectAsync dials every engine in the background and returns the
// outcome of Connect on the channel. Until it ends, and at most for
// describeWait, Describe waits for it, so sessions starting meanwhile see
// every engine that answers in time. Use a describeWait of 0 when the
// gateway may be listed in its own registry over a transport it serves
// (its own handshake would otherwise wait on itself until the bound).
func (g *Gateway) ConnectAsync(ctx context.Context, describeWait time.Duration) <-chan error {
	done := make(chan struct{})
	g.mu.Lock()
	g.warming, g.warmUntil = done, time.Now().Add(describeWait)
	g.mu.Unlock()
	out := make(chan error, 1)
	go func() {
		defer close(done)
		out <- g.fed.Connect(ctx)
	}()
	return out
}

func (g *Gateway) awaitWarm() {
	g.mu.Lock()
	done, until := g.warming, g.warmUntil
	g.mu.Unlock()
	if done == nil {
		return
	}
	wait := time.Until(until)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Close closes every engine connection.
func (g *Gateway) Close() error { return g.fed.Close() }

// repin pins single-engine capabilities and graph ops to the first known
// engine (priority order) that advertises them. Existing pins never move.
func (g *Gateway) repin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.fed.ranked {
		init, ok := e.Known()
		if !ok {
			continue
		}
		for _, key := range []string{rcp.CapEmbed, rcp.CapSparseEmbed, rcp.CapMultiVector, rcp.CapRerank, rcp.CapTransform, rcp.CapMemory} {
			if _, pinned := g.pins[key]; !pinned && init.Capabilities.Has(key) {
				g.pins[key] = e
			}
		}
		if _, pinned := g.pins[rcp.CapIndex]; !pinned && init.Capabilities.Index != nil && init.Capabilities.Index.Writable {
			g.pins[rcp.CapIndex] = e
		}
		if init.Capabilities.Graph != nil {
			for _, op := range init.Capabilities.Graph.Ops {
				if _, pinned := g.graphPins[op]; !pinned {
					g.graphPins[op] = e
					g.graphOps = append(g.graphOps, op)
				}
			}
		}
	}
}

func (g *Gateway) pinned(key string) *Engine {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pins[key]
}

// Describe implements rcp.Handler. It never dials: it reports what the
// engines known so far offer (after waiting for a ConnectAsync warm-up, if
// one is running and its describeWait has not passed).
func (g *Gateway) Describe(context.Context) rcp.Description {
	g.awaitWarm()
	g.repin()
	var caps rcp.Capabilities
	caps.Catalog = &rcp.CatalogCap{Engines: len(g.fed.engines)}
	caps.Streaming = &rcp.EmptyCap{}

	var retrieving []rcp.Capabilities
	known := 0
	for _, e := range g.fed.ranked {
		init, ok := e.Known()
		if !ok {
			continue
		}
		known++
		if init.Capabilities.Retrieve != nil {
			retrieving = append(retrieving, init.Capabilities)
		}
		if init.Capabilities.Citations != nil {
			caps.Citations = &rcp.EmptyCap{}
		}
	}
	if len(retrieving) > 0 || known == 0 {
		rc := &rcp.RetrieveCap{MaxK: g.opts.MaxK, Fusion: []string{rcp.FusionRRF, rcp.FusionWeighted, rcp.FusionConvex}}
		if len(retrieving) > 0 {
			u := unionCaps(retrieving).Retrieve
			rc.Modes, rc.Units, rc.Modalities = u.Modes, u.Units, u.Modalities
			rc.DefaultMode = commonDefaultMode(retrieving)
			caps.Filter = commonFilter(retrieving)
			caps.Session = commonSession(retrieving)
			caps.Pagination = &rcp.EmptyCap{} // the fused list's pages (gateway_pages.go)
		}
		caps.Retrieve = rc
	}

	g.mu.Lock()
	for key, e := range g.pins {
		init, _ := e.Known()
		src := init.Capabilities
		switch key {
		case rcp.CapEmbed:
			caps.Embed = src.Embed
		case rcp.CapSparseEmbed:
			caps.SparseEmbed = src.SparseEmbed
		case rcp.CapMultiVector:
			caps.MultiVector = src.MultiVector
		case rcp.CapRerank:
			caps.Rerank = src.Rerank
		case rcp.CapTransform:
			caps.Transform = src.Transform
		case rcp.CapMemory:
			caps.Memory = src.Memory
		case rcp.CapIndex:
			caps.Index = src.Index
		}
	}
	if len(g.graphOps) > 0 {
		caps.Graph = &rcp.GraphCap{Ops: slices.Clone(g.graphOps)}
	}
	if g.feedbackEngines() {
		caps.Feedback = &rcp.EmptyCap{}
	}
	g.mu.Unlock()

	return rcp.Description{
		Server:       g.opts.Server,
		Capabilities: caps,
		Conformance:  levelOf(&caps, known),
		Meta:         rcp.Meta{}.Set(rcp.MetaFederation, map[string]any{"id": g.opts.Identity}),
	}
}

// commonFilter advertises filter only when every retrieving engine does,
// with the fields and operators they all share.
func commonFilter(all []rcp.Capabilities) *rcp.FilterCap {
	var fields map[string]string
	var ops []string
	for i, c := range all {
		if c.Filter == nil {
			return nil
		}
		ft := c.Filter.FieldTypes()
		if i == 0 {
			fields, ops = ft, slices.Clone(c.Filter.Operators)
			continue
		}
		for name, typ := range fields {
			other, ok := ft[name]
			switch {
			case !ok:
				delete(fields, name)
			case typ == "" && other != "":
				fields[name] = other
			}
		}
		ops = intersectList(ops, c.Filter.Operators)
	}
	if len(fields) == 0 {
		return nil
	}
	typed := true
	for _, t := range fields {
		if t == "" {
			typed = false
		}
	}
	fc := &rcp.FilterCap{Operators: ops}
	if typed {
		fc.Fields = rcp.TypedFields(fields)
	} else {
		names := make([]string, 0, len(fields))
		for n := range fields {
			names = append(names, n)
		}
		slices.Sort(names)
		fc.Fields, _ = json.Marshal(names)
	}
	return fc
}

// Call implements rcp.Handler.
func (g *Gateway) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	params = scopeSessionID(ctx, params)
	switch method {
	case rcp.MethodRetrieve:
		return g.retrieve(ctx, params)
	case rcp.MethodCatalogList:
		return g.catalog(ctx)
	case rcp.MethodFeedback:
		return g.feedback(ctx, params)
	case rcp.MethodGraph:
		return g.graph(ctx, params)
	}
	if key, ok := routed[method]; ok {
		if e := g.pinned(key); e != nil {
			if err := g.checkRouted(ctx, method, params); err != nil {
				return nil, err
			}
			return g.forward(ctx, e, method, params)
		}
	}
	return nil, rcp.NewError(rcp.CodeCapabilityMissing, "method %q is not served by this gateway", method)
}

// hop reads the request's hop budget and decides whether the gateway may
// forward: not when its own identity is already in the path (a cycle) or
// the budget is spent (§16.2).
func (g *Gateway) hop(meta rcp.Meta) (out Hop, refuse string) {
	h, ok := HopOf(meta)
	if !ok {
		h = Hop{Depth: g.fed.opts.Depth, Path: []string{}}
	}
	if slices.Contains(h.Path, g.opts.Identity) {
		return h, fmt.Sprintf("federation cycle: gateway %q is already in path [%s]; not forwarding", g.opts.Identity, strings.Join(h.Path, ", "))
	}
	if h.Depth <= 0 {
		return h, fmt.Sprintf("federation hop budget exhausted at gateway %q (depth %d); not forwarding", g.opts.Identity, h.Depth)
	}
	return h.Forwarded(g.opts.Identity), ""
}

func (g *Gateway) retrieve(ctx context.Context, params json.RawMessage) (any, error) {
	var p rcp.RetrieveParams
	if err := rcp.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Query.IsZero() {
		return nil, rcp.InvalidParams("query", "query is required")
	}
	if n := len(p.Query.String()); n > MaxQueryBytes {
		return nil, rcp.InvalidParams("query", "the query text is %d bytes; the limit is %d", n, MaxQueryBytes)
	}
	if p.K < 1 {
		return nil, rcp.InvalidParams("k", "k must be an integer >= 1")
	}
	notes, err := g.checkRetrieve(ctx, &p)
	if err != nil {
		return nil, err
	}
	p.K = min(p.K, g.opts.MaxK)
	if p.Cursor != "" {
		return g.nextPage(&p, notes)
	}
	fwd, refuse := g.hop(p.Meta)
	if refuse != "" {
		// The gateway has no index of its own: it answers with nothing.
		return &rcp.RetrieveResult{Hits: []rcp.Hit{}, Usage: &rcp.Usage{Notes: append(notes, refuse)}}, nil
	}
	p.Meta = rcp.Meta(copyMeta(p.Meta)).Set(rcp.MetaFederation, fwd)
	if rcp.ProgressAllowed(ctx) {
		up := ctx
		ctx = WithProgress(ctx, func(engine string, pp rcp.ProgressParams) {
			pp.Message = strings.TrimSpace("engine " + engine + ": " + pp.Message)
			if pp.Partial != nil {
				part := *pp.Partial
				part.Hits = slices.Clone(part.Hits)
				for i := range part.Hits {
					m := make(map[string]any, len(part.Hits[i].Meta)+1)
					for k, v := range part.Hits[i].Meta {
						m[k] = v
					}
					if _, ok := m["engine"]; !ok {
						m["engine"] = engine
					}
					part.Hits[i].Meta = m
				}
				pp.Partial = &part
			}
			pp.Progress = nil // an engine's fraction is not the gateway's
			_ = rcp.ReportProgress(up, pp)
		})
		ctx = withEngineDone(ctx, func(engine string, done, total int) {
			frac := float64(done) / float64(total)
			_ = rcp.ReportProgress(up, rcp.ProgressParams{Progress: &frac, Stage: "fanout",
				Message: fmt.Sprintf("engine %s done (%d/%d)", engine, done, total)})
		})
	}
	res, err := g.firstPage(ctx, &p)
	if err != nil {
		return nil, err
	}
	g.origins.record(res.Hits)
	g.vouch(res.Hits)
	stripUnasked(&p, res)
	if len(notes) > 0 {
		res.Usage.Notes = append(notes, res.Usage.Notes...)
	}
	return res, nil
}

// MaxQueryBytes caps the query text the gateway fans out (as rcpd does):
// one oversized query would otherwise be analysed by every engine.
const MaxQueryBytes = 64 << 10

// stripUnasked drops from the fused hits what the caller did not ask for:
// an engine may send text or vectors regardless, and the gateway passes on
// only what was requested.
func stripUnasked(p *rcp.RetrieveParams, res *rcp.RetrieveResult) {
	noText := p.IncludeText != nil && !*p.IncludeText
	noVectors := p.IncludeVectors == nil || !*p.IncludeVectors
	for i := range res.Hits {
		h := &res.Hits[i]
		if noText {
			h.Text, h.Content = nil, nil
		}
		if noVectors {
			h.Vector = nil
		}
	}
}

// sessionCaps returns the capabilities frozen for the caller's session
// (§13.2), or the current ones outside a server.
func (g *Gateway) sessionCaps(ctx context.Context) rcp.Capabilities {
	if s, ok := rcp.SessionInfo(ctx); ok {
		return s.Capabilities
	}
	return g.Describe(ctx).Capabilities
}

// checkRetrieve applies the gateway's own advertised options (§7.7 strict
// rule): an unadvertised option value is -32005, or with strict:false it is
// dropped and noted.
func (g *Gateway) checkRetrieve(ctx context.Context, p *rcp.RetrieveParams) ([]string, error) {
	caps := g.sessionCaps(ctx)
	rc := caps.Retrieve
	if rc == nil {
		return nil, rcp.NewError(rcp.CodeCapabilityMissing, "no federated engine advertises retrieve")
	}
	var notes []string
	problem := func(option, msg string, drop func()) error {
		if p.IsStrict() {
			return rcp.OptionUnsupported(option, "%s", msg)
		}
		drop()
		notes = append(notes, msg+"; ignored")
		return nil
	}
	if modes := caps.RetrieveModes(); p.Mode != "" && len(modes) > 0 && !slices.Contains(modes, p.Mode) {
		if err := problem("mode", fmt.Sprintf("no federated engine advertises mode %q", p.Mode), func() { p.Mode = "" }); err != nil {
			return nil, err
		}
	}
	if p.Fusion != nil && p.Fusion.Method != "" && p.Fusion.Method != FusionAuto && !slices.Contains(rc.Fusion, p.Fusion.Method) {
		if err := problem("fusion.method", fmt.Sprintf("fusion %q is not advertised", p.Fusion.Method), func() { p.Fusion.Method = "" }); err != nil {
			return nil, err
		}
	}
	if p.Rerank != nil && !p.Rerank.Disabled {
		if err := problem("rerank", "the gateway has no built-in rerank (call rerank)", func() { p.Rerank = nil }); err != nil {
			return nil, err
		}
	}
	if p.MMR != nil {
		if err := problem("mmr", "the gateway does not advertise mmr", func() { p.MMR = nil }); err != nil {
			return nil, err
		}
	}
	if m := unadvertisedRewrite(p, &caps); m != "" {
		// An un-advertised method is the gateway's to refuse (§7.7), not
		// each engine's to ignore or refuse on its own.
		if err := problem("rewrite", fmt.Sprintf("query rewrite %q is not advertised", m), func() { p.Rewrite = nil }); err != nil {
			return nil, err
		}
	}
	if p.CandidateK != nil && *p.CandidateK < p.K {
		return nil, rcp.InvalidParams("candidateK", "funnel violation: candidateK %d < k %d (§3.3)", *p.CandidateK, p.K)
	}
	if p.Rerank != nil && !p.Rerank.Disabled && p.Rerank.TopN != nil {
		if *p.Rerank.TopN < p.K {
			return nil, rcp.InvalidParams("rerank.topN", "funnel violation: rerank.topN %d < k %d (§3.3)", *p.Rerank.TopN, p.K)
		}
		if p.CandidateK != nil && *p.CandidateK < *p.Rerank.TopN {
			return nil, rcp.InvalidParams("candidateK", "funnel violation: candidateK %d < rerank.topN %d (§3.3)", *p.CandidateK, *p.Rerank.TopN)
		}
	}
	mods := rc.Modalities
	if len(mods) == 0 {
		mods = []string{rcp.ModalityText}
	}
	for i, b := range p.Query.Blocks {
		if !b.IsText() && !slices.Contains(mods, b.Type) && !slices.Contains(mods, "multimodal") {
			// A query block cannot be dropped without changing the question.
			return nil, rcp.OptionUnsupported("modality", "query block %d is %q; no federated engine advertises that modality", i, b.Type)
		}
	}
	if !p.HasFilter() {
		p.Filter = nil // an explicit null is absent (§4.6)
	}
	if p.Filter != nil && caps.Filter == nil {
		if err := problem("filter", "the gateway does not advertise filter", func() { p.Filter = nil }); err != nil {
			return nil, err
		}
	}
	if p.Filter != nil {
		// The advertised fields and operators are the engines' common ones:
		// a filter outside them is the caller's error, answered here (§8).
		if _, err := filter.Validate(p.Filter, caps.Filter.FieldTypes(), caps.Filter.Operators); err != nil {
			return nil, prefixField(err, "filter")
		}
	}
	if p.Unit != "" {
		units := rc.Units
		if len(units) == 0 {
			units = []string{rcp.UnitChunk, rcp.UnitPassage}
		}
		if !slices.Contains(units, p.Unit) {
			if err := problem("unit", fmt.Sprintf("no federated engine advertises unit %q", p.Unit), func() { p.Unit = "" }); err != nil {
				return nil, err
			}
		}
	}
	if p.Modality != "" {
		if !slices.Contains(mods, p.Modality) {
			if err := problem("modality", fmt.Sprintf("no federated engine advertises modality %q", p.Modality), func() { p.Modality = "" }); err != nil {
				return nil, err
			}
		}
	}
	if p.IncludeVectors != nil && *p.IncludeVectors {
		// Vectors from different engines live in different spaces.
		if err := problem("includeVectors", "a federated retrieve cannot return comparable vectors", func() { p.IncludeVectors = nil }); err != nil {
			return nil, err
		}
	}
	if p.Encoding != "" && p.Encoding != rcp.EncodingJSON {
		if err := problem("encoding", fmt.Sprintf("encoding %q is not advertised", p.Encoding), func() { p.Encoding = "" }); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// checkRouted applies the gateway's advertised options (which are the
// pinned engine's) before a routed call leaves: the gateway answers for
// them as a server (§14.1), whatever the engine would do.
func (g *Gateway) checkRouted(ctx context.Context, method string, params json.RawMessage) error {
	caps := g.sessionCaps(ctx)
	switch method {
	case rcp.MethodEmbed, rcp.MethodEmbedMulti:
		var p rcp.EmbedParams
		if err := rcp.DecodeParams(params, &p); err != nil {
			return err
		}
		if len(p.AllInputs()) == 0 {
			return rcp.InvalidParams("inputs", "inputs is required and must not be empty")
		}
		var encs []string
		if method == rcp.MethodEmbed && caps.Embed != nil {
			encs = caps.Embed.Encodings
		} else if caps.MultiVector != nil {
			encs = caps.MultiVector.Encodings
		}
		if p.Encoding != "" && p.Encoding != rcp.EncodingJSON && !slices.Contains(encs, p.Encoding) && (p.Strict == nil || *p.Strict) {
			return rcp.OptionUnsupported("encoding", "encoding %q is not advertised", p.Encoding)
		}
	case rcp.MethodRerank:
		var p rcp.RerankParams
		if err := rcp.DecodeParams(params, &p); err != nil {
			return err
		}
		if p.Query.IsZero() {
			return rcp.InvalidParams("query", "query is required")
		}
		if len(p.Passages) == 0 && len(p.Documents) == 0 {
			return rcp.InvalidParams("passages", "passages is required and must not be empty")
		}
		if p.Method != "" && caps.Rerank != nil && len(caps.Rerank.Methods) > 0 && !slices.Contains(caps.Rerank.Methods, p.Method) {
			return rcp.OptionUnsupported("method", "rerank method %q is not advertised", p.Method)
		}
	case rcp.MethodMemoryBuild:
		var p rcp.MemoryBuildParams
		if err := rcp.DecodeParams(params, &p); err != nil {
			return err
		}
		if p.Scope != "" && caps.Memory != nil && len(caps.Memory.Scopes) > 0 && !slices.Contains(caps.Memory.Scopes, p.Scope) {
			return rcp.OptionUnsupported("scope", "memory scope %q is not advertised (scopes: %s)", p.Scope, strings.Join(caps.Memory.Scopes, ", "))
		}
	case rcp.MethodMemoryRecall:
		var p rcp.MemoryRecallParams
		if err := rcp.DecodeParams(params, &p); err != nil {
			return err
		}
		if strings.TrimSpace(p.Query) == "" {
			return rcp.InvalidParams("query", "query is required")
		}
	case rcp.MethodTransform:
		var p rcp.TransformParams
		if err := rcp.DecodeParams(params, &p); err != nil {
			return err
		}
		if p.Method != "" && caps.Transform != nil && len(caps.Transform.Methods) > 0 && !slices.Contains(caps.Transform.Methods, p.Method) {
			return rcp.OptionUnsupported("method", "transform method %q is not advertised", p.Method)
		}
	}
	return nil
}

// prefixField makes a filter error's error.data.field a params path.
func prefixField(err error, prefix string) error {
	re, ok := rcp.AsError(err)
	if !ok {
		return rcp.InvalidParams(prefix, "invalid filter")
	}
	d := errorDataOf(re)
	switch {
	case d.Field == "":
		d.Field = prefix
	case !strings.HasPrefix(d.Field, prefix):
		d.Field = prefix + "." + strings.TrimPrefix(d.Field, ".")
	}
	return &rcp.Error{Code: re.Code, Message: re.Message, Data: &d}
}

// errorDataOf returns a copy of e's data (zero when absent).
func errorDataOf(e *rcp.Error) rcp.ErrorData {
	if e.Data == nil {
		return rcp.ErrorData{}
	}
	return *e.Data
}

// forward routes one call to engine e: hop and budget rewritten, engine
// errors passed through with their code, transport failures -32010.
func (g *Gateway) forward(ctx context.Context, e *Engine, method string, params json.RawMessage) (any, error) {
	var pm struct {
		Meta rcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(params, &pm)
	fwd, refuse := g.hop(pm.Meta)
	if refuse != "" {
		return nil, &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "cannot route " + method, Data: &rcp.ErrorData{Detail: refuse}}
	}
	ectx, cancel, budget := g.fed.engineDeadline(ctx)
	defer cancel()
	meta := forwardMeta(pm.Meta, fwd).Set(rcp.MetaDeadlineMs, max(budget.Milliseconds(), 1))
	out, err := withMeta(params, meta)
	if err != nil {
		return nil, rcp.InvalidParams("_meta", "%v", err)
	}
	cctx := ectx
	if rcp.ProgressAllowed(ctx) {
		cctx = rcp.WithProgress(ectx, func(pp rcp.ProgressParams) { _ = rcp.ReportProgress(ctx, pp) })
	}
	var res json.RawMessage
	err = e.Do(cctx, func(c *rcp.Client) error { return c.Call(cctx, method, out, &res) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if re, ok := rcp.AsError(err); ok && !transportDead(err) {
			return nil, re // the engine's own answer, code and data intact
		}
		if ectx.Err() != nil {
			err = fmt.Errorf("no answer within %v: %w", budget.Round(time.Millisecond), context.DeadlineExceeded)
		}
		return nil, engineError(e.ID(), err)
	}
	return res, nil
}

// withMeta replaces params._meta.
func withMeta(params json.RawMessage, meta rcp.Meta) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return nil, fmt.Errorf("params must be an object: %w", err)
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return json.Marshal(obj)
}

// catalog answers catalog/list (§7.13): every engine whose handshake is
// known, with its identity, capabilities and, when exposable, endpoint.
// Engines never reached are dialled first (bounded); those still unknown
// are listed in _meta.unavailable.
func (g *Gateway) catalog(ctx context.Context) (*rcp.CatalogListResult, error) {
	var wg sync.WaitGroup
	for _, e := range g.fed.engines {
		if _, ok := e.Known(); ok {
			continue
		}
		wg.Go(func() {
			cctx, cancel, _ := g.fed.engineDeadline(ctx)
			defer cancel()
			_, _ = e.Client(cctx)
		})
	}
	wg.Wait()
	res := &rcp.CatalogListResult{Engines: []rcp.CatalogEngine{}}
	var unavailable []string
	for _, e := range g.fed.engines {
		init, ok := e.Known()
		if !ok {
			unavailable = append(unavailable, e.ID())
			continue
		}
		ce := rcp.CatalogEngine{ID: e.ID(), Server: init.Server, Capabilities: init.Capabilities}
		if id := identityOf(init); id != "" {
			ce.Meta = ce.Meta.Set(rcp.MetaFederation, map[string]any{"id": id})
		}
		if c := init.Meta[rcp.MetaConformance]; c != nil {
			if ce.Meta == nil {
				ce.Meta = rcp.Meta{}
			}
			ce.Meta[rcp.MetaConformance] = c
		}
		spec := e.Spec()
		if !g.opts.HideEndpoints && spec.EffectiveTransport() == TransportHTTP && len(spec.Headers) == 0 && spec.URL != "" {
			ce.Endpoint = &rcp.Endpoint{Transport: TransportHTTP, URL: spec.URL}
		}
		res.Engines = append(res.Engines, ce)
	}
	if len(unavailable) > 0 {
		res.Meta = res.Meta.Set("unavailable", unavailable)
	}
	return res, nil
}
