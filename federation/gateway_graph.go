package federation

// Graph and memory behind the gateway (§7.9, §7.17, §16.4).
//
// graph local and drift return ranked hits, so they fan out to every known
// engine advertising the op (§16.4) and the hits are fused like a
// federated retrieve: RRF over the engines' lists, meta.engine naming the
// engine each kept hit came from and the hit's provenance (its nodes,
// edges and path in that engine's graph) kept as the engine sent it. drift
// follow-ups are the union, in engine priority order.
//
// global, communities and neighbors answer with community and node ids of
// one engine's graph (levels, summaries and node scores are not comparable
// across graphs), and memory/build and memory/recall name memories that
// exist in one engine; those are pinned to one engine like embed.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/fusion"
)

// fusedGraphOps are the graph ops whose hits the gateway fuses across
// engines; the others are pinned.
var fusedGraphOps = []string{"local", "drift"}

// graphCall is the part of a graph request the gateway reads.
type graphCall struct {
	Op string `json:"op"`
	K  *int   `json:"k"`
}

func (g *Gateway) graph(ctx context.Context, params json.RawMessage) (any, error) {
	var p graphCall
	if err := rcp.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Op == "" {
		return nil, rcp.InvalidParams("op", "op is required")
	}
	if p.K != nil && *p.K < 1 {
		return nil, rcp.InvalidParams("k", "k must be an integer >= 1, got %d", *p.K)
	}
	if !slices.Contains(fusedGraphOps, p.Op) {
		g.mu.Lock()
		e := g.graphPins[p.Op]
		g.mu.Unlock()
		if e == nil {
			return nil, rcp.OptionUnsupported("op", "no engine serves graph op %q", p.Op)
		}
		return g.forward(ctx, e, rcp.MethodGraph, params)
	}
	engines := g.graphEngines(p.Op)
	if len(engines) == 0 {
		return nil, rcp.OptionUnsupported("op", "no engine serves graph op %q", p.Op)
	}
	k := 10
	if p.K != nil {
		k = min(*p.K, g.opts.MaxK)
	}
	return g.fuseGraph(ctx, engines, params, k)
}

// graphEngines lists the known engines advertising graph op, in priority
// order.
func (g *Gateway) graphEngines(op string) []*Engine {
	var out []*Engine
	for _, e := range g.fed.ranked {
		init, ok := e.Known()
		if ok && init.Capabilities.Graph != nil && slices.Contains(init.Capabilities.Graph.Ops, op) {
			out = append(out, e)
		}
	}
	return out
}

// graphAnswer is one engine's part of a fused graph op.
type graphAnswer struct {
	res rcp.GraphResult
	err error
}

// fuseGraph sends the request to every engine concurrently and fuses the
// hits of those that answered. It fails only when none did: with the
// engines' common caller error when they all rejected the request, with
// -32010 otherwise.
func (g *Gateway) fuseGraph(ctx context.Context, engines []*Engine, params json.RawMessage, k int) (*rcp.GraphResult, error) {
	answers := make([]graphAnswer, len(engines))
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			raw, err := g.forward(ctx, e, rcp.MethodGraph, params)
			if err == nil {
				b, _ := raw.(json.RawMessage)
				if err = json.Unmarshal(b, &answers[i].res); err != nil {
					err = engineError(e.ID(), fmt.Errorf("malformed graph result: %w", err))
				}
			}
			answers[i].err = err
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		lists     []fusion.List
		followups []string
		notes     []string
		statuses  []EngineStatus
		degraded  []Degraded
		errs      []error
	)
	for i, e := range engines {
		a := answers[i]
		if a.err != nil {
			code := errorCode(a.err)
			statuses = append(statuses, EngineStatus{ID: e.ID(), Status: "failed", Code: code, Message: a.err.Error()})
			degraded = append(degraded, Degraded{Engine: e.ID(), Code: code, Message: a.err.Error()})
			notes = append(notes, fmt.Sprintf("engine %s failed (%d %s): %v", e.ID(), int(code), code, a.err))
			errs = append(errs, a.err)
			continue
		}
		statuses = append(statuses, EngineStatus{ID: e.ID(), Status: "ok", Hits: len(a.res.Hits)})
		w := e.spec.EffectiveWeight()
		lists = append(lists, fusion.List{Engine: e.ID(), Hits: a.res.Hits, Weight: &w})
		for _, f := range a.res.Followups {
			if !slices.Contains(followups, f) {
				followups = append(followups, f)
			}
		}
		if a.res.Usage != nil {
			for _, n := range a.res.Usage.Notes {
				notes = append(notes, e.ID()+": "+n)
			}
		}
	}
	if len(lists) == 0 {
		return nil, allFailed(errs)
	}
	fused, err := fusion.Fuse(lists, fusion.Options{K: &k, Key: g.fed.keyFunc()})
	if err != nil {
		return nil, rcp.NewError(rcp.CodeInternalError, "fusion failed: %v", err)
	}
	hits := make([]rcp.Hit, len(fused))
	for i, r := range fused {
		hits[i] = r.Hit
	}
	g.vouch(hits)
	res := &rcp.GraphResult{Hits: hits, Followups: followups}
	if len(notes) > 0 {
		res.Usage = &rcp.Usage{Notes: notes}
	}
	res.Meta = res.Meta.Set(MetaEngines, statuses)
	res.Meta = res.Meta.Set("fusion", map[string]any{"method": rcp.FusionRRF})
	if len(degraded) > 0 {
		res.Meta = res.Meta.Set(rcp.MetaDegraded, degraded)
	}
	g.origins.record(hits)
	return res, nil
}

// allFailed is the error of a fan-out no engine answered: the engines'
// common caller error (-32602 or -32005, the request is at fault), else
// -32010 listing every failure.
func allFailed(errs []error) error {
	var first *rcp.Error
	for _, err := range errs {
		re, ok := rcp.AsError(err)
		if !ok || re.Code != rcp.CodeInvalidParams && re.Code != rcp.CodeOptionUnsupported || first != nil && re.Code != first.Code {
			first = nil
			break
		}
		if first == nil {
			first = re
		}
	}
	if first != nil {
		return first
	}
	details := make([]string, len(errs))
	for i, err := range errs {
		details[i] = err.Error()
	}
	return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "no federated engine answered",
		Data: &rcp.ErrorData{Retryable: ptrTo(true), Detail: strings.Join(details, "; ")}}
}
