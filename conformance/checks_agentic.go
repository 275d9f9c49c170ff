package conformance

// Checks of the agentic-loop surfaces: retrieve.rewrite (§7.7, §7.8),
// sessionId (§7.7.3) and feedback (§7.16, §15.3).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

func agenticChecks() []Check {
	return []Check{
		{ID: "rewrite.methods", Name: "retrieve.rewrite with every advertised query-producing transform method returns a schema-valid result", Level: L2, Section: "§7.7, §7.8", Requirement: Must, Needs: []string{"transform", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				q := s.probeQuery(ctx)
				for _, m := range s.capStrings("transform.methods") {
					if m == "hyde" {
						continue // a passage, not queries: a server may serve it through query/transform only
					}
					r := s.call(ctx, "retrieve", map[string]any{"query": q, "k": 3, "rewrite": m})
					if !r.ok() {
						return fail("rewrite %q: %s", m, r)
					}
					if err := s.validateResult("retrieve", r.Result); err != nil {
						return fail("rewrite %q: %v", m, err)
					}
					if v, err := decodeRetrieve(r.Result); err != nil || len(v.hits) > 3 {
						return fail("rewrite %q: more than k hits or undecodable: %s", m, r)
					}
				}
				return pass()
			}},
		{ID: "rewrite.unsupported", Name: "an un-advertised retrieve.rewrite method is rejected with -32005 under strict", Level: L2, Section: "§7.7, §12", Requirement: Must, Needs: []string{"retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				m := missing(s.capStrings("transform.methods"), "step-back", "decompose", "multi-query", "rewrite")
				if m == "" {
					return skip("every rewrite method is advertised")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": s.probeQuery(ctx), "k": 3, "rewrite": m})
				return check(r.code() == -32005, "rewrite %q: want -32005, got %s", m, r)
			}},
		{ID: "session.id-correct", Name: "a retrieve carrying a sessionId is answered correctly (honoured or ignored)", Level: L1, Section: "§7.7.3", Requirement: Must, Needs: []string{"retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				q := s.probeQuery(ctx)
				plain, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 5})
				if o != nil {
					return *o
				}
				v, r, o := s.retrieve(ctx, map[string]any{"query": q, "k": 5, "sessionId": s.uniq("sess")})
				if o != nil {
					return *o
				}
				if err := s.validateResult("retrieve", r.Result); err != nil {
					return fail("%v", err)
				}
				// The first call of a fresh trajectory has seen nothing: same hits.
				return check(slices.Equal(v.ids(), plain.ids()), "first retrieve of a new session %q differs from the same retrieve without one %q", v.ids(), plain.ids())
			}},
		{ID: "session.dedup", Name: "with session.dedup, a repeated retrieve in one session returns no hit twice", Level: L2, Section: "§7.7.3", Requirement: Should, Needs: []string{"session.dedup", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				q := s.probeQuery(ctx)
				sid := s.uniq("dedup")
				first, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 2, "sessionId": sid})
				if o != nil {
					return *o
				}
				if len(first.hits) == 0 {
					return skip("the probe query %q has no hits", q)
				}
				second, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 2, "sessionId": sid})
				if o != nil {
					return *o
				}
				for _, id := range second.ids() {
					if slices.Contains(first.ids(), id) {
						return fail("hit %s returned twice in session %s: %q then %q", id, sid, first.ids(), second.ids())
					}
				}
				other, _, o := s.retrieve(ctx, map[string]any{"query": q, "k": 2, "sessionId": sid + "-other"})
				if o != nil {
					return *o
				}
				return check(slices.Equal(other.ids(), first.ids()), "dedup leaked across sessions: %q, want %q", other.ids(), first.ids())
			}},
		{ID: "feedback.concurrent-retrieve", Name: "feedback does not alter a retrieve running concurrently with it", Level: L2, Section: "§7.16", Requirement: Must, Needs: []string{"feedback", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				params, before, o := s.probeHits(ctx)
				if o != nil {
					return *o
				}
				q := params["query"]
				// Reinforcing signals on the current top hits: a server may act
				// on them, but each retrieve must see the state before or after.
				var signals []any
				for _, h := range before.hits[:min(2, len(before.hits))] {
					signals = append(signals, map[string]any{"hitId": h.id, "helpful": true, "used": true})
				}
				batch := []any{req("fc-r1", "retrieve", params), req("fc-f", "feedback", map[string]any{"sessionId": s.uniq("fb"), "query": q, "signals": signals})}
				keys := []string{"s:fc-r1", "s:fc-f"}
				for i := 2; i <= 5; i++ {
					id := fmt.Sprintf("fc-r%d", i)
					batch, keys = append(batch, req(id, "retrieve", params)), append(keys, "s:"+id)
				}
				rep := s.sendRaw(ctx, s.main, mustJSON(batch), "", keys...)
				if f := rep.find("s:fc-f"); !f.ok() {
					return fail("feedback in the batch: %s", f)
				}
				allowed := [][]string{before.ids()}
				for range 2 { // the state after, read twice in case it settles late
					after, _, o := s.retrieve(ctx, params)
					if o != nil {
						return *o
					}
					allowed = append(allowed, after.ids())
				}
				for _, k := range keys {
					if k == "s:fc-f" {
						continue
					}
					r := rep.find(k)
					if !r.ok() {
						return fail("%s: %s", k, r)
					}
					v, err := decodeRetrieve(r.Result)
					if err != nil {
						return fail("%s: %v", k, err)
					}
					if !slices.ContainsFunc(allowed, func(a []string) bool { return slices.Equal(a, v.ids()) }) {
						return fail("%s saw a state neither before nor after the feedback: %q (before %q, after %q)", k, v.ids(), allowed[0], allowed[1])
					}
				}
				return pass()
			}},
		{ID: "feedback.advisory", Name: "one session's poison/injection reports do not quarantine a hit (feedback is advisory)", Level: L2, Section: "§7.16, §15.3", Requirement: Should, Needs: []string{"feedback", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				params, before, o := s.probeHits(ctx)
				if o != nil {
					return *o
				}
				top := before.hits[0]
				// One reporter session for every run of the suite: a server
				// rightly quarantines a hit that several sessions report, so a
				// fresh session per run would make a second certification of
				// the same server (rcpd --demo keeps its data) corroborate the
				// first one's reports and fail this check.
				const sid = "rcp-conformance-reporter"
				for range 5 {
					r := s.call(ctx, "feedback", map[string]any{"sessionId": sid, "signals": []any{map[string]any{"hitId": top.id, "poisonSuspected": true, "injectionSuspected": true}}})
					if !r.ok() {
						return fail("feedback: %s", r)
					}
				}
				after, _, o := s.retrieve(ctx, params)
				if o != nil {
					return *o
				}
				i := slices.Index(after.ids(), top.key)
				if i < 0 {
					return fail("hit %s dropped after reports from a single session: %q", top.key, after.ids())
				}
				was, now := top.raw["trust"], after.hits[i].raw["trust"]
				return check(trustLevel(was) == trustLevel(now), "trust of %s changed after reports from a single session: %s → %s", top.key, was, now)
			}},
	}
}

// probeHits retrieves k 5 for the probe query: the params and the hits, or
// the outcome to return (a skip when the probe query finds nothing).
func (s *suite) probeHits(ctx context.Context) (map[string]any, *retrieveView, *outcome) {
	q := s.probeQuery(ctx)
	params := map[string]any{"query": q, "k": 5}
	v, _, o := s.retrieve(ctx, params)
	if o != nil {
		return nil, nil, o
	}
	if len(v.hits) == 0 {
		o := skip("the probe query %q has no hits", q)
		return nil, nil, &o
	}
	return params, v, nil
}

// trustLevel is the "level" of a raw hit.trust object ("" when absent).
func trustLevel(raw json.RawMessage) string {
	var t struct {
		Level string `json:"level"`
	}
	_ = json.Unmarshal(raw, &t)
	return t.Level
}
