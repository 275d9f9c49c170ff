package knowledge

// Graph units of retrieve (§7.7.2): unit "community" returns community
// summaries of one level (level 0 the finest; provenance.leaves the units
// behind the summary), "node" entities with their facts, "triplet" the
// (subject, predicate, object) facts themselves, "path" seed → entity
// chains (provenance.path/edges, the facts along them as text) and
// "subgraph" a ranked entity with its best neighbours and the edges among
// them. All come from the
// knowledge graph (graph.go); options that only make sense for text
// units (filter, mode, rerank, mmr) follow strict; their lists page
// (pagedStructured).

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/graph"
	"github.com/rcpgo/rcpgo/rcp"
)

// GraphUnits answers retrieve for a graph unit (community, node, triplet,
// path, subgraph) at level (communities only: the others have level 0):
// the best k, noting what it changed in notes.
func (kn *Knowledge) GraphUnits(ctx context.Context, unit, query string, level, k int, notes *[]string, started time.Time) (*rcp.RetrieveResult, error) {
	g := kn.g
	seeds, err := kn.graphSeeds(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	var hits []rcp.Hit
	var cite [][]string // the units behind each hit, in hits order
	switch unit {
	case rcp.UnitCommunity:
		h := g.Communities()
		if d := h.Depth(); level >= d && d > 0 {
			*notes = append(*notes, "level clamped to the deepest community level built so far")
			level = d - 1
		}
		ranked, err := h.Rank(ctx, g, query, level, k)
		if err != nil {
			return nil, err
		}
		for _, c := range ranked {
			text, lv := c.Summary, c.Level
			hits = append(hits, rcp.Hit{ID: rcp.StringID(c.ID), Score: c.Score, Text: &text, Unit: rcp.UnitCommunity, Level: &lv,
				Modality: rcp.ModalityText, Provenance: &rcp.Provenance{Leaves: c.Leaves}})
			cite = append(cite, c.Leaves)
		}
	case rcp.UnitNode:
		nodes, err := g.Nodes(ctx, seeds, k, 1)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			text := n.Name
			for _, f := range n.Facts {
				text += "\n" + f + "."
			}
			hits = append(hits, rcp.Hit{ID: rcp.StringID(n.Name), Score: n.Score, Text: &text, Unit: rcp.UnitNode, Level: &level,
				Modality: rcp.ModalityText, Provenance: &rcp.Provenance{Nodes: []string{n.Name}, Leaves: n.Units}})
			cite = append(cite, n.Units)
		}
	case rcp.UnitPath:
		paths, err := g.Paths(ctx, seeds, k, 0)
		if err != nil {
			return nil, err
		}
		for _, ph := range paths {
			text := strings.Join(ph.Facts, ". ") + "."
			hits = append(hits, rcp.Hit{ID: rcp.StringID("path:" + strings.Join(ph.Nodes, " > ")), Score: ph.Score, Text: &text,
				Unit: rcp.UnitPath, Level: &level, Modality: rcp.ModalityText,
				Provenance: &rcp.Provenance{Path: ph.Nodes, Nodes: ph.Nodes, Edges: wireEdges(ph.Edges), Leaves: ph.Leaves}})
			cite = append(cite, ph.Leaves)
		}
	case rcp.UnitSubgraph:
		subs, err := g.Subgraphs(ctx, seeds, k, 0)
		if err != nil {
			return nil, err
		}
		for _, sg := range subs {
			text := strings.Join(sg.Nodes, ", ") + "."
			if len(sg.Facts) > 0 {
				text += "\n" + strings.Join(sg.Facts, ".\n") + "."
			}
			hits = append(hits, rcp.Hit{ID: rcp.StringID("subgraph:" + sg.Center), Score: sg.Score, Text: &text,
				Unit: rcp.UnitSubgraph, Level: &level, Modality: rcp.ModalityText,
				Provenance: &rcp.Provenance{Nodes: sg.Nodes, Edges: wireEdges(sg.Edges), Leaves: sg.Leaves}})
			cite = append(cite, sg.Leaves)
		}
	default: // triplet
		triples, err := g.Triples(ctx, seeds, k, 1)
		if err != nil {
			return nil, err
		}
		for _, t := range triples {
			h, err := kn.tripleHit(ctx, t, level)
			if err != nil {
				return nil, err
			}
			if h != nil {
				hits = append(hits, *h)
				cite = append(cite, nil) // cited by its evidence sentence
			}
		}
	}
	for i := range hits {
		if _, err := kn.citeUnits(ctx, &hits[i], cite[i]); err != nil {
			return nil, err
		}
	}
	if hits == nil {
		hits = []rcp.Hit{}
	}
	// Ties by id: equal scores must not come out in map order (retrieve
	// advertises deterministic; pages are slices of one list).
	slices.SortStableFunc(hits, func(a, b rcp.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	lat := float64(time.Since(started).Microseconds()) / 1000
	n := len(hits)
	return &rcp.RetrieveResult{Hits: hits, IndexVersion: kn.ix.Version(),
		Usage: &rcp.Usage{Candidates: &n, LatencyMs: &lat, Notes: *notes}}, nil
}

func wireEdges(es []graph.EdgeInfo) []rcp.Edge {
	out := make([]rcp.Edge, len(es))
	for i, ed := range es {
		w := ed.Weight
		out[i] = rcp.Edge{Src: ed.Src, Dst: ed.Dst, Weight: &w}
	}
	return out
}

// tripleHit is a triple as a wire hit: text "subject predicate object."
// and the evidence sentence, meta subject/predicate/object/evidence, the
// citation narrowed to the sentence's offsets. nil when the unit is gone.
func (kn *Knowledge) tripleHit(ctx context.Context, t graph.TripleHit, level int) (*rcp.Hit, error) {
	d, err := kn.ix.Get(ctx, t.Unit)
	if err != nil || d == nil {
		return nil, err
	}
	var span *[2]int
	evidence := d.Title
	if t.Start >= 0 && t.End <= len(d.Text) && t.Start <= t.End {
		span, evidence = &[2]int{t.Start, t.End}, d.Text[t.Start:t.End]
	}
	text := t.S + " " + t.Pred + " " + t.O + ".\nEvidence: " + evidence
	h := &rcp.Hit{ID: rcp.StringID(t.Unit + "#" + t.S + "|" + t.Pred + "|" + t.O), Score: t.Score, Text: &text,
		Unit: rcp.UnitTriplet, Level: &level, Modality: rcp.ModalityText,
		Meta:       map[string]any{"subject": t.S, "predicate": t.Pred, "object": t.O, "evidence": evidence},
		Provenance: &rcp.Provenance{Nodes: []string{t.S, t.O}, Edges: []rcp.Edge{{Src: t.S, Dst: t.O}}, Leaves: []string{t.Unit}}}
	h.Citation, h.Trust = kn.unitCitation(d, span)
	return h, nil
}
