package federation

// Feedback through the gateway (§7.16): each signal goes to the engine that
// produced its hit. Hits carry that engine in meta.engine (§16.3); the
// gateway remembers it for the hits it returned, in a bounded LRU, because
// a feedback signal names only the hit id.

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/rcpgo/rcpgo/rcp"
)

// DefaultMaxOrigins bounds the hit ids whose engine the gateway remembers.
const DefaultMaxOrigins = 100000

// hitOrigins maps hit ids to the engine that produced them (LRU-bounded).
type hitOrigins struct {
	mu  sync.Mutex
	max int
	lru *list.List // of origin, most recent at the front
	ids map[string]*list.Element
}

type origin struct{ id, engine string }

func (o *hitOrigins) record(hits []rcp.Hit) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ids == nil {
		o.lru, o.ids = list.New(), map[string]*list.Element{}
		if o.max <= 0 {
			o.max = DefaultMaxOrigins
		}
	}
	for _, h := range hits {
		eng, _ := h.Meta["engine"].(string)
		if eng == "" {
			continue
		}
		id := h.ID.String()
		if el, ok := o.ids[id]; ok {
			el.Value = origin{id, eng}
			o.lru.MoveToFront(el)
			continue
		}
		o.ids[id] = o.lru.PushFront(origin{id, eng})
		for o.lru.Len() > o.max {
			old := o.lru.Remove(o.lru.Back()).(origin)
			delete(o.ids, old.id)
		}
	}
}

func (o *hitOrigins) engine(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	el, ok := o.ids[id]
	if !ok {
		return "", false
	}
	return el.Value.(origin).engine, true
}

// feedbackEngines reports whether any known engine advertises feedback.
func (g *Gateway) feedbackEngines() bool {
	for _, e := range g.fed.engines {
		if init, ok := e.Known(); ok && init.Capabilities.Feedback != nil {
			return true
		}
	}
	return false
}

// feedback forwards each signal to the engine that produced its hit and
// returns the sum of the engines' accepted counts. Signals about hits the
// gateway did not return (or whose engine serves no feedback) are not
// recorded, so accepted may be smaller than the number of signals.
func (g *Gateway) feedback(ctx context.Context, params json.RawMessage) (any, error) {
	var p rcp.FeedbackParams
	if err := rcp.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Signals == nil {
		return nil, rcp.InvalidParams("signals", "signals is required")
	}
	groups := map[string][]rcp.FeedbackSignal{}
	var order []string
	for i, s := range p.Signals {
		if s.HitID.IsZero() {
			return nil, rcp.InvalidParams(fmt.Sprintf("signals[%d].hitId", i), "hitId is required")
		}
		eng, ok := g.origins.engine(s.HitID.String())
		if !ok {
			continue
		}
		if _, seen := groups[eng]; !seen {
			order = append(order, eng)
		}
		groups[eng] = append(groups[eng], s)
	}
	accepted := 0
	for _, id := range order {
		e, ok := g.fed.Engine(id)
		if !ok {
			continue
		}
		if init, known := e.Known(); !known || init.Capabilities.Feedback == nil {
			continue
		}
		sub := p
		sub.Signals = groups[id]
		// The engine sees the gateway as its caller: name the gateway's own
		// caller, so reports count per client for engines that trust it.
		sub.Meta = rcp.Meta(copyMeta(p.Meta)).Set(rcp.MetaRCPGoCaller, rcp.CallerOf(ctx).ID())
		raw, err := json.Marshal(&sub)
		if err != nil {
			return nil, err
		}
		res, err := g.forward(ctx, e, rcp.MethodFeedback, raw)
		if err != nil {
			return nil, err
		}
		var r rcp.FeedbackResult
		if b, ok := res.(json.RawMessage); !ok || json.Unmarshal(b, &r) != nil {
			return nil, engineError(id, fmt.Errorf("malformed feedback result"))
		}
		accepted += min(max(r.Accepted, 0), len(sub.Signals))
	}
	return &rcp.FeedbackResult{Accepted: accepted}, nil
}
