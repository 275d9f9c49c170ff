package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

func TestRetrieveGraphUnits(t *testing.T) {
	ctx := context.Background()
	e := graphEngine(t, t.TempDir())
	defer e.Close()
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": chainDocs})
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	ret := e.Describe(ctx).Capabilities.Retrieve
	for _, u := range []string{rcp.UnitPassage, rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph, rcp.UnitCommunity} {
		if !rcp.Contains(ret.Units, u) {
			t.Fatalf("units %v lack %s", ret.Units, u)
		}
	}
	if ret.Levels < 1 {
		t.Fatalf("levels %d", ret.Levels)
	}
	type hit struct {
		ID         string          `json:"id"`
		Text       string          `json:"text"`
		Unit       string          `json:"unit"`
		Level      *int            `json:"level"`
		Provenance *rcp.Provenance `json:"provenance"`
	}
	get := func(params map[string]any) []hit {
		var r struct{ Hits []hit }
		json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, params), &r)
		return r.Hits
	}
	c := get(map[string]any{"query": "Felix Hart Hana Sol", "k": 3, "unit": "community", "level": 0})
	if len(c) == 0 || c[0].Unit != "community" || c[0].Level == nil || *c[0].Level != 0 || c[0].Provenance == nil || len(c[0].Provenance.Leaves) == 0 {
		t.Fatalf("community hits %+v", c)
	}
	if c[0].Provenance.Leaves[0] != "d5" {
		t.Fatalf("community leaves %v, want d5 first", c[0].Provenance.Leaves)
	}
	n := get(map[string]any{"query": "Boris Kent", "k": 2, "unit": "node"})
	if len(n) == 0 || n[0].ID != "boris kent" || n[0].Unit != "node" || n[0].Text == "boris kent" {
		t.Fatalf("node hits %+v", n)
	}
	tr := get(map[string]any{"query": "where was Boris Kent born", "k": 1, "unit": "triplet"})
	if len(tr) != 1 || tr[0].Text != "boris kent was born in cara town.\nEvidence: Boris Kent was born in Cara Town." || tr[0].Provenance.Leaves[0] != "d2" {
		t.Fatalf("triplet hits %+v", tr)
	}
	// A path from the question's entity through the bridge: Anna Vale →
	// Boris Kent → Cara Town, with the facts of d1 and d2.
	pa := get(map[string]any{"query": "Anna Vale", "k": 10, "unit": "path"})
	found := false
	for _, h := range pa {
		if h.Unit != "path" || h.Level == nil || *h.Level != 0 || h.Provenance == nil || len(h.Provenance.Path) < 2 ||
			len(h.Provenance.Edges) != len(h.Provenance.Path)-1 || h.Provenance.Path[0] != "anna vale" {
			t.Fatalf("path hit %+v", h)
		}
		if slices.Equal(h.Provenance.Path, []string{"anna vale", "boris kent", "cara town"}) {
			found = true
			if !strings.Contains(h.Text, "boris kent was born in cara town") || !slices.Contains(h.Provenance.Leaves, "d2") || !slices.Contains(h.Provenance.Leaves, "d1") {
				t.Fatalf("two-hop path %+v", h)
			}
		}
	}
	if !found {
		t.Fatalf("no anna vale > boris kent > cara town path in %+v", pa)
	}
	sg := get(map[string]any{"query": "Boris Kent", "k": 2, "unit": "subgraph"})
	if len(sg) == 0 || sg[0].Unit != "subgraph" || sg[0].Provenance == nil || sg[0].Provenance.Nodes[0] != "boris kent" ||
		len(sg[0].Provenance.Edges) == 0 || len(sg[0].Provenance.Leaves) == 0 {
		t.Fatalf("subgraph hits %+v", sg)
	}
	for _, ed := range sg[0].Provenance.Edges {
		if !slices.Contains(sg[0].Provenance.Nodes, ed.Src) || !slices.Contains(sg[0].Provenance.Nodes, ed.Dst) || ed.Weight == nil {
			t.Fatalf("subgraph edge %+v outside nodes %v", ed, sg[0].Provenance.Nodes)
		}
	}
	p := get(map[string]any{"query": "Boris Kent", "k": 2, "unit": "passage"})
	if len(p) == 0 {
		t.Fatal("no passage hits")
	}
	for _, h := range p {
		if h.Unit != "passage" && h.Unit != "document" {
			t.Fatalf("passage hit unit %q", h.Unit)
		}
	}
	// Options that do not apply to graph units follow strict.
	if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "x", "k": 1, "unit": "node", "level": 2}); rerr == nil || rerr.Code != rcp.CodeOptionUnsupported {
		t.Fatalf("node level 2: %v", rerr)
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "x", "k": 1, "unit": "node", "level": 2, "strict": false}); rerr != nil {
		t.Fatalf("strict:false: %v", rerr)
	}
	if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "x", "k": 1, "unit": "tree-node"}); rerr == nil || rerr.Code != rcp.CodeOptionUnsupported {
		t.Fatalf("unadvertised tree-node: %v", rerr)
	}
	// Without the graph, graph units are unadvertised and rejected.
	plain := newEngine(t, nil)
	if u := plain.Describe(ctx).Capabilities.Retrieve.Units; rcp.Contains(u, rcp.UnitCommunity) {
		t.Fatalf("community advertised without the graph: %v", u)
	}
	if _, rerr := call(t, plain, rcp.MethodRetrieve, map[string]any{"query": "x", "k": 1, "unit": "community"}); rerr == nil || rerr.Code != rcp.CodeOptionUnsupported {
		t.Fatalf("community without graph: %v", rerr)
	}
}
