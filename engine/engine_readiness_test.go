package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// Readiness tells waiting from building from ready, with the real reason
// when nothing can be built (issue 31: "LSA needs ≥ 20 documents; 1
// indexed"), in info's _meta too.
func TestReadinessStates(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{Graph: true})
	c := connect(t, e)
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("a", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.Readiness()
	if s := r["dense"]; s.State != rcp.StateWaiting || s.Detail != "LSA needs ≥ 20 documents; 1 indexed" {
		t.Fatalf("dense %+v", s)
	}
	if s := r["tree"]; s.State != rcp.StateWaiting || !strings.Contains(s.Detail, "1 indexed") {
		t.Fatalf("tree %+v", s)
	}
	for _, name := range []string{"graph", "communities", "memory"} {
		if r[name].State != rcp.StateReady {
			t.Fatalf("%s %+v", name, r[name])
		}
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rcp.ReadReadiness(info.Meta); !ok || got["dense"].State != rcp.StateWaiting {
		t.Fatalf("info _meta readiness %v", got)
	}
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: topicDocs("b", 40, 2)}); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	if s := e.Readiness()["dense"]; s.State != rcp.StateReady {
		t.Fatalf("dense after the fit %+v", s)
	}
}

// retrieve.levels is what exists when the session starts (issue 31: it
// said 4 while the tree's top level was 1 and communities had level 0):
// the levels of tree-node and community a session can ask for.
func TestLevelsAreWhatExists(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, func(c *Config) { c.Graph = true })
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	treeDepth, commDepth := e.know.Tree().Depth(), e.know.Graph().Communities().Depth()
	want := max(treeDepth, commDepth)
	if got := e.Describe(ctx).Capabilities.Retrieve.Levels; got != want {
		t.Fatalf("levels %d, want %d (tree depth %d, community levels %d)", got, want, treeDepth, commDepth)
	}
	top := want - 1
	unit := rcp.UnitTreeNode
	if commDepth > treeDepth {
		unit = rcp.UnitCommunity
	}
	res := retrieve(t, e, map[string]any{"query": "ranking", "k": 3, "unit": unit, "level": top})
	if len(res.Hits) == 0 {
		t.Fatalf("no %s hit at the top advertised level %d", unit, top)
	}
	for _, n := range res.Usage.Notes {
		if strings.Contains(n, "clamped") {
			t.Fatalf("the top advertised level was clamped: %q", n)
		}
	}
}

// After writes, a tree-node query that only the new units match is not an
// empty success from the stale tree (issue 31: 0 hits and "the tree is
// being rebuilt"): the tree is rebuilt within the call's deadline. Under
// LSA, units whose terms the basis does not know have no vector and so no
// place in any tree: the empty answer then says so.
func TestTreeNodeAfterWrites(t *testing.T) {
	t.Run("encoder", func(t *testing.T) {
		testTreeNodeAfterWrites(t, func(c *Config) { c.Dense, c.DenseProvider = DenseOpenAI, &hashProvider{id: "hash", dim: 64} }, true)
	})
	t.Run("lsa", func(t *testing.T) { testTreeNodeAfterWrites(t, nil, false) })
}

func testTreeNodeAfterWrites(t *testing.T, dense func(*Config), found bool) {
	ctx := context.Background()
	e := newEngine(t, func(c *Config) {
		c.Graph = true
		if dense != nil {
			dense(c)
		}
	})
	c := connect(t, e)
	level := 1
	q := &rcp.RetrieveParams{Query: rcp.TextQuery("coral reef lagoon"), K: 5, Unit: rcp.UnitTreeNode, Level: &level}
	if res, err := c.Retrieve(ctx, q); err != nil || len(res.Hits) != 0 {
		t.Fatalf("the demo has no coral: %v %+v", err, res)
	}
	docs := make([]rcp.Document, 30)
	for i := range docs {
		docs[i] = rcp.Document{ID: fmt.Sprintf("reef%d", i), Text: fmt.Sprintf("Coral reef %d grows in a warm lagoon; reef fish shelter in the coral.", i)}
	}
	if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: docs}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Retrieve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		if len(res.Hits) != 0 || len(res.Usage.Notes) == 0 || !strings.Contains(res.Usage.Notes[len(res.Usage.Notes)-1], "none of the 30 units") {
			t.Fatalf("want no hit and the reason: %d hits, notes %q", len(res.Hits), res.Usage.Notes)
		}
		return
	}
	if len(res.Hits) == 0 {
		t.Fatalf("an empty success after the writes: %+v", res.Usage)
	}
	if leaves := res.Hits[0].Provenance.Leaves; len(leaves) == 0 || !strings.HasPrefix(leaves[0], "reef") {
		t.Fatalf("top cluster's leaves %v, want the new reef units", leaves)
	}
}

// embed never returns a zero vector while advertising normalized: a text
// with no word the LSA vocabulary knows is refused with -32602 naming it.
func TestEmbedOutOfVocabulary(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 20})
	addSettled(t, e, topicDocs("a", 40, 1))
	c := connect(t, e)
	if !*c.Capabilities().Embed.Normalized {
		t.Fatal("LSA advertises normalized")
	}
	res, err := c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("coral reef")})
	if err != nil || len(res.Vectors) == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	_, err = c.Embed(ctx, &rcp.EmbedParams{Inputs: rcp.TextInputs("coral reef", "zyzzyva quux")})
	var re *rcp.Error
	if !asRCP(err, &re) || re.Code != rcp.CodeInvalidParams || re.Data.Field != "inputs[1]" || !strings.Contains(re.Data.Detail, "vocabulary") {
		t.Fatalf("out-of-vocabulary input: %v", err)
	}
}

// Read-your-writes in dense mode: a dense retrieve right after an
// acknowledged add finds the new unit (it waits for the deriver to embed
// the writes made before it, briefly), in the same session and a new one.
func TestDenseReadYourWrites(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 20, refitQuiet: time.Hour})
	addSettled(t, e, topicDocs("a", 40, 1))
	c := connect(t, e)
	for i := range 5 {
		id := fmt.Sprintf("fresh%d", i)
		if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{ID: id, Text: "piston torque gear crank valve exhaust fuel engine"}}}); err != nil {
			t.Fatal(err)
		}
		for _, cl := range []*rcp.Client{c, connect(t, e)} {
			res, err := cl.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("piston torque gear crank valve"), K: 10, Mode: rcp.ModeDense})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range res.Hits {
				found = found || h.ID.String() == id
			}
			if !found {
				t.Fatalf("write %d: dense retrieve right after the add misses %s (notes %v)", i, id, res.Usage.Notes)
			}
		}
	}
}
