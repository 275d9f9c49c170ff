package conformance

import (
	"context"
	"encoding/json"
	"slices"
)

// ---------------------------------------------------------------- §7.7.2 units and levels

// allUnits are the retrieval units of §7.7.2.
var allUnits = []string{"chunk", "passage", "document", "node", "triplet", "path", "subgraph", "community", "tree-node", "page"}

// advertisedUnits are the units the server may be asked for: retrieve.units,
// or chunk and passage when it is absent (§6.1).
func advertisedUnits(s *suite) []string {
	if units := s.capStrings("retrieve.units"); len(units) > 0 {
		return units
	}
	return []string{"chunk", "passage"}
}

// hierUnits are the units with abstraction levels (RAPTOR depth, community level).
var hierUnits = []string{"community", "tree-node"}

// graphUnits are the units whose hits carry graph or tree lineage.
var graphUnits = []string{"node", "triplet", "path", "subgraph", "community", "tree-node"}

// unitHit is the part of a hit the unit checks read.
type unitHit struct {
	Unit       *string `json:"unit"`
	Level      *int    `json:"level"`
	Provenance *struct {
		Path   []string `json:"path"`
		Nodes  []string `json:"nodes"`
		Leaves []string `json:"leaves"`
		Edges  []struct {
			Src *string `json:"src"`
			Dst *string `json:"dst"`
		} `json:"edges"`
	} `json:"provenance"`
}

func decodeUnitHits(v *retrieveView) ([]unitHit, error) {
	out := make([]unitHit, len(v.hits))
	for i, h := range v.hits {
		b, _ := json.Marshal(h.raw)
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// retrieveUnit retrieves k hits of one unit (and level, when ≥ 0) for the
// probe query.
func (s *suite) retrieveUnit(ctx context.Context, unit string, level int) ([]unitHit, *outcome) {
	params := map[string]any{"query": s.probeQuery(ctx), "k": 3, "unit": unit}
	if level >= 0 {
		params["level"] = level
	}
	v, r, o := s.retrieve(ctx, params)
	if o != nil {
		return nil, o
	}
	if err := s.validateResult("retrieve", r.Result); err != nil {
		o := fail("unit %q: %v", unit, err)
		return nil, &o
	}
	hits, err := decodeUnitHits(v)
	if err != nil {
		o := fail("unit %q: %v", unit, err)
		return nil, &o
	}
	return hits, nil
}

func unitChecks() []Check {
	return []Check{
		{ID: "retrieve.units", Name: "every advertised unit answers and each hit echoes its unit", Level: L2, Section: "§6.1, §7.7.2", Requirement: Must, Needs: []string{"retrieve.units"},
			run: func(ctx context.Context, s *suite) outcome {
				served := 0
				for _, u := range s.capStrings("retrieve.units") {
					hits, o := s.retrieveUnit(ctx, u, -1)
					if o != nil {
						return *o
					}
					for i, h := range hits {
						// An unchunked document is its own unit: a chunk or
						// passage request may return it as "document".
						whole := (u == "chunk" || u == "passage") && h.Unit != nil && *h.Unit == "document"
						if h.Unit == nil || (*h.Unit != u && !whole) {
							return fail("unit %q: hit %d echoes unit %v", u, i, orNull(h.Unit))
						}
					}
					if len(hits) > 0 {
						served++
					}
				}
				return passf("%d of %d advertised units returned hits for the probe query", served, len(s.capStrings("retrieve.units")))
			}},
		{ID: "retrieve.levels", Name: "hierarchical units echo a level within the advertised levels, never above the requested one", Level: L2, Section: "§6.1, §7.7.2", Requirement: Must, Needs: []string{"retrieve.levels", "retrieve.units"},
			run: func(ctx context.Context, s *suite) outcome {
				levels, _ := s.capInt("retrieve.levels")
				tried := 0
				for _, u := range s.capStrings("retrieve.units") {
					if !slices.Contains(hierUnits, u) {
						continue
					}
					for _, want := range []int{0, max(levels-1, 0)} {
						tried++
						hits, o := s.retrieveUnit(ctx, u, want)
						if o != nil {
							return *o
						}
						for i, h := range hits {
							if h.Level == nil || *h.Level < 0 || *h.Level > want || *h.Level >= max(levels, 1) {
								return fail("unit %q level %d: hit %d echoes level %v (levels %d)", u, want, i, orNull(h.Level), levels)
							}
						}
					}
				}
				if tried == 0 {
					return skip("no hierarchical unit (community, tree-node) is advertised")
				}
				return pass()
			}},
		{ID: "retrieve.unit-unsupported", Name: "an un-advertised unit is rejected with -32005 naming the option", Level: L1, Section: "§7.7, §7.7.2, §12", Requirement: Must, Needs: []string{"retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				u := missing(advertisedUnits(s), allUnits...)
				if u == "" {
					return skip("every unit is advertised")
				}
				r := s.call(ctx, "retrieve", map[string]any{"query": "conformance", "k": 1, "unit": u})
				if r.code() != -32005 {
					return fail("unit %q: want -32005, got %s", u, r)
				}
				return check(r.errData("option") != "", "unit %q: error.data.option missing: %s", u, r)
			}},
		{ID: "retrieve.provenance", Name: "graph and tree units carry provenance of the right shape", Level: L2, Section: "§7.7.2", Requirement: Should, Needs: []string{"retrieve.units"},
			run: func(ctx context.Context, s *suite) outcome {
				tried := 0
				for _, u := range s.capStrings("retrieve.units") {
					if !slices.Contains(graphUnits, u) {
						continue
					}
					tried++
					level := -1
					if slices.Contains(hierUnits, u) {
						level = 0
					}
					hits, o := s.retrieveUnit(ctx, u, level)
					if o != nil {
						return *o
					}
					for i, h := range hits {
						if msg := provenanceProblem(u, h); msg != "" {
							return fail("unit %q: hit %d: %s", u, i, msg)
						}
					}
				}
				if tried == 0 {
					return skip("no graph or tree unit is advertised")
				}
				return pass()
			}},
	}
}

// provenanceProblem says what is wrong with a graph or tree hit's
// provenance ("" when nothing): every unit has some; a path has the path
// with one edge per step; summaries (community, tree-node) name leaves;
// edges have both ends.
func provenanceProblem(unit string, h unitHit) string {
	p := h.Provenance
	if p == nil {
		return "no provenance"
	}
	for _, e := range p.Edges {
		if e.Src == nil || e.Dst == nil {
			return "an edge without src or dst"
		}
	}
	switch unit {
	case "path":
		if len(p.Path) < 2 || len(p.Edges) != len(p.Path)-1 {
			return "a path hit needs provenance.path (≥ 2 nodes) and one edge per step"
		}
	case "community", "tree-node":
		if len(p.Leaves) == 0 {
			return "a summary hit needs provenance.leaves"
		}
	default:
		if len(p.Nodes) == 0 && len(p.Leaves) == 0 {
			return "neither provenance.nodes nor provenance.leaves"
		}
	}
	return ""
}

// orNull is *p, or nil for a missing field.
func orNull[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
