package graph

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

func names(ex Extraction) []string {
	var out []string
	for _, m := range ex.Nodes {
		out = append(out, m.Name)
	}
	return out
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name, title, text string
		nodes             []string
		triples           []Triple
	}{
		{"entities and triple", "", "Varokin Delmar was mentored by Teshal Orrin. The weather was mild.",
			[]string{"varokin delmar", "teshal orrin"}, []Triple{{S: 0, O: 1, Pred: "was mentored by", Start: 0, End: 44}}},
		{"sentence-initial word is not a name", "", "Researchers found that BRCA1 mutations matter. Mutations of BRCA1 and mutations again.",
			[]string{"brca1", "mutations"}, nil},
		{"far apart entities make no triple", "", "Alpha Corp and then a very long list of many words here to read before Beta Labs.",
			[]string{"alpha corp", "beta labs"}, nil},
		{"title counts", "Kelvin Ross", "kelvin ross wrote plenty of poems about poems.",
			[]string{"kelvin ross", "poems"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := Extract(tc.title, tc.text, false)
			if got := names(ex); !reflect.DeepEqual(got, tc.nodes) {
				t.Errorf("nodes = %q, want %q", got, tc.nodes)
			}
			if !reflect.DeepEqual(ex.Triples, tc.triples) {
				t.Errorf("triples = %+v, want %+v", ex.Triples, tc.triples)
			}
		})
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("T", "Varokin Delmar was mentored by Teshal Orrin. x")
	f.Add("", "É. .. 'A-' B\n\nC D E F G H I")
	f.Fuzz(func(t *testing.T, title, text string) {
		ex := Extract(title, text, false)
		if len(ex.Nodes) > maxNodesPerUnit || len(ex.Triples) > maxTriples {
			t.Fatalf("unbounded extraction: %d nodes %d triples", len(ex.Nodes), len(ex.Triples))
		}
		for _, tr := range ex.Triples {
			if tr.S < 0 || tr.S >= len(ex.Nodes) || tr.O < 0 || tr.O >= len(ex.Nodes) {
				t.Fatalf("triple %+v out of range", tr)
			}
		}
		g := New(analysis.Default())
		g.Put("u", "u", ex)
		g.Remove("u")
		if s := g.Stats(); s != (Stats{}) {
			t.Fatalf("stats after remove = %+v", s)
		}
	})
}

// chain is a small two-hop world: the question about Anna Vale needs the
// bridge Boris Kent to reach Cara Town.
var chain = map[string]string{
	"d1": "Anna Vale was mentored by Boris Kent.",
	"d2": "Boris Kent was born in Cara Town.",
	"d3": "Anna Vale was born in Dova Springs.",
	"d4": "Boris Kent founded Emor Works.",
	"d5": "Felix Hart was born in Gale Point.",
	"d6": "Felix Hart married Hana Sol.",
	"d7": "Hana Sol studied at Iver College.",
}

func build(t testing.TB, docs map[string]string) *Graph {
	g := New(analysis.Default())
	for _, id := range slices.Sorted(mapsKeys(docs)) {
		g.Put(id, id, Extract("", docs[id], false))
	}
	return g
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestLocalFindsTheBridge(t *testing.T) {
	g := build(t, chain)
	hits, err := g.Local(context.Background(), Seeds{Query: "Where was the person who mentored Anna Vale born?"}, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	if !slices.Contains(ids, "d1") || !slices.Contains(ids, "d2") {
		t.Fatalf("top 3 = %v, want both supports d1 and d2", ids)
	}
	for _, h := range hits {
		if h.ID == "d2" {
			if len(h.Path) < 2 || h.Path[0] != "anna vale" || len(h.Edges) != len(h.Path)-1 {
				t.Fatalf("d2 provenance path %v edges %v", h.Path, h.Edges)
			}
		}
	}
	// Unrelated component never appears.
	all, _ := g.Local(context.Background(), Seeds{Query: "Anna Vale"}, 10, 4)
	for _, h := range all {
		if h.ID >= "d5" {
			t.Fatalf("hit %s from another component", h.ID)
		}
	}
}

func TestSeedIDs(t *testing.T) {
	g := build(t, chain)
	hits, err := g.Local(context.Background(), Seeds{IDs: []string{"Hana Sol"}}, 10, 1)
	if err != nil || len(hits) == 0 {
		t.Fatalf("node seed: %v %v", hits, err)
	}
	byUnit, _ := g.Local(context.Background(), Seeds{IDs: []string{"d7"}}, 10, 1)
	if len(byUnit) == 0 || byUnit[0].ID != "d7" {
		t.Fatalf("unit seed: %+v", byUnit)
	}
	none, err := g.Local(context.Background(), Seeds{Query: "nothing known here"}, 10, 2)
	if err != nil || len(none) != 0 {
		t.Fatalf("no seeds: %v %v", none, err)
	}
}

func TestNeighborsAndClues(t *testing.T) {
	g := build(t, chain)
	nodes, edges, err := g.Neighbors(context.Background(), Seeds{Query: "Boris Kent"}, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, n := range nodes {
		ns = append(ns, n.ID)
	}
	slices.Sort(ns)
	if want := []string{"anna vale", "boris kent", "cara town", "emor works"}; !reflect.DeepEqual(ns, want) {
		t.Fatalf("neighbors = %v, want %v", ns, want)
	}
	if len(edges) == 0 {
		t.Fatal("no edges")
	}
	for _, e := range edges {
		if e.Weight <= 0 {
			t.Fatalf("edge %+v has no weight", e)
		}
	}
	clues, err := g.Clues(context.Background(), Seeds{Query: "Where was the mentor of Anna Vale born?"}, 2, 2)
	if err != nil || len(clues) == 0 {
		t.Fatalf("clues %v %v", clues, err)
	}
	if clues[0].Node != "boris kent" || clues[0].Query != "boris kent born" || clues[0].Weight != 1 {
		t.Fatalf("first clue = %+v", clues[0])
	}
}

func TestCancelled(t *testing.T) {
	g := build(t, chain)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Local(ctx, Seeds{Query: "Anna Vale"}, 10, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if err := g.Rebuild(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rebuild err = %v", err)
	}
}

func TestRemoveRestoresGraph(t *testing.T) {
	g := build(t, chain)
	before := g.Stats()
	g.Put("x", "x", Extract("", "Anna Vale visited Zed Isle with Boris Kent.", false))
	g.Put("x", "x", Extract("", "Anna Vale visited Zed Isle.", false)) // replace
	g.Remove("x")
	if after := g.Stats(); after != before {
		t.Fatalf("stats %+v after add/replace/remove, want %+v", after, before)
	}
	if _, ok := g.byKey[Key("zed isle")]; ok {
		t.Fatal("node of a removed unit survives")
	}
}

func TestSaveLoad(t *testing.T) {
	g := build(t, chain)
	path := filepath.Join(t.TempDir(), "graph.snap")
	if err := g.Save(path); err != nil {
		t.Fatal(err)
	}
	h := New(analysis.Default())
	if err := h.Load(path); err != nil {
		t.Fatal(err)
	}
	if g.Stats() != h.Stats() {
		t.Fatalf("loaded %+v, saved %+v", h.Stats(), g.Stats())
	}
	q := Seeds{Query: "who mentored Anna Vale"}
	a, _ := g.Local(context.Background(), q, 5, 2)
	b, _ := h.Local(context.Background(), q, 5, 2)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("local differs after load:\n%+v\n%+v", a, b)
	}
	// A torn or foreign file is ErrSnapshot; a missing one is ErrNotExist.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-3], 0o600)
	if err := h.Load(path); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("torn: %v", err)
	}
	if err := h.Load(path + ".none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestCommunities(t *testing.T) {
	g := build(t, chain)
	if err := g.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := g.Communities()
	if h == nil || len(h.Levels) == 0 {
		t.Fatal("no communities")
	}
	l0 := h.Level(0)
	var anna, felix string
	for _, c := range l0 {
		if c.members["anna vale"] {
			anna = c.ID
		}
		if c.members["felix hart"] {
			felix = c.ID
		}
		if c.Summary == "" || len(c.Leaves) == 0 {
			t.Fatalf("community %s has no summary or leaves", c.ID)
		}
	}
	if anna == "" || anna == felix {
		t.Fatalf("components share a community: %q %q", anna, felix)
	}
	ranked, err := h.Rank(context.Background(), g, "Hana Sol college", 0, 1)
	if err != nil || len(ranked) != 1 || !ranked[0].members["hana sol"] {
		t.Fatalf("rank = %+v %v", ranked, err)
	}
	if h.Version != g.Version() {
		t.Fatalf("hierarchy version %d, graph %d", h.Version, g.Version())
	}
}

// Louvain runs on the core (nodes of ≥ 2 units); every other connected
// node still lands in exactly one community per level: its strongest core
// neighbour's, or one of its own component when it has none.
func TestCommunitiesCoverSatellites(t *testing.T) {
	g := build(t, chain)
	if err := g.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.mu.RLock()
	connected := map[string]bool{}
	satellites := 0
	for a := range g.nodes {
		if len(g.adj[a]) > 0 {
			connected[g.nodes[a].key] = true
			if len(g.nodes[a].units) < coreMinUnits {
				satellites++
			}
		}
	}
	g.mu.RUnlock()
	if satellites == 0 {
		t.Fatal("the test graph has no satellite nodes")
	}
	for l, level := range g.Communities().Levels {
		seen := map[string]string{}
		for _, c := range level {
			for m := range c.members {
				if prev, dup := seen[m]; dup {
					t.Fatalf("level %d: %q in %s and %s", l, m, prev, c.ID)
				}
				seen[m] = c.ID
			}
		}
		for n := range connected {
			if seen[n] == "" {
				t.Fatalf("level %d: connected node %q in no community", l, n)
			}
		}
	}
}

func TestLocalDeadline(t *testing.T) {
	// A large random graph: Local must stop soon after the deadline.
	g := New(analysis.Default())
	for i := 0; i < 3000; i++ {
		g.Put(string(rune('a'+i%26))+itoa(i), "p", Extraction{Nodes: []Mention{
			{Name: "n" + itoa(i%500), Kind: KindEntity}, {Name: "n" + itoa((i*7)%500), Kind: KindEntity},
			{Name: "n" + itoa((i*13)%500), Kind: KindEntity}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Microsecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	if _, err := g.Local(ctx, Seeds{Query: "n1"}, 10, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// FuzzLoad: a damaged snapshot is rejected (ErrSnapshot), never a panic or
// a half-loaded graph.
func FuzzLoad(f *testing.F) {
	g := build(f, chain)
	path := filepath.Join(f.TempDir(), "seed.snap")
	if err := g.Save(path); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "g.snap")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		h := build(t, map[string]string{"z": "Zed Isle is an island."})
		before := h.Stats()
		if err := h.Load(p); err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("error %v is not ErrSnapshot", err)
			}
			if h.Stats() != before {
				t.Fatal("a failed Load changed the graph")
			}
		}
	})
}
