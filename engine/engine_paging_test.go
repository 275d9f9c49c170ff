package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// pageThrough pages q to its end in steps of k, calling between after every
// page; it returns the hit ids in order and checks that every page names
// the first page's indexVersion.
func pageThrough(t *testing.T, c *rcp.Client, q rcp.RetrieveParams, between func(page int)) []string {
	t.Helper()
	var ids []string
	version := ""
	for page := 0; ; page++ {
		res, err := c.Retrieve(context.Background(), &q)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if res.IndexVersion == "" {
			t.Fatalf("page %d of mode %q has no indexVersion", page, q.Mode)
		}
		if version == "" {
			version = res.IndexVersion
		} else if res.IndexVersion != version {
			t.Fatalf("page %d: indexVersion %q, the first page's was %q", page, res.IndexVersion, version)
		}
		for _, h := range res.Hits {
			ids = append(ids, h.ID.String())
		}
		if res.NextCursor == "" {
			return ids
		}
		if page > 100 {
			t.Fatal("no end after 100 pages")
		}
		q.Cursor = res.NextCursor
		if between != nil {
			between(page)
		}
	}
}

// Issue 31, acceptance 3: every advertised mode and unit pages — dense and
// hybrid too, with indexVersion on every page, no hit twice and none
// skipped, while writes (embedded between the pages) change the vectors.
// Before, a dense page had no indexVersion and its cursor ({"v":""}) was
// refused as malformed; a hybrid cursor expired at the first write.
func TestDenseAndHybridPaging(t *testing.T) {
	ctx := context.Background()
	e := quietEngine(t, Config{MinFitDocs: 20})
	addSettled(t, e, topicDocs("a", 80, 1))
	c := connect(t, e) // offered dense and hybrid
	writes := 0
	write := func(int) {
		writes++
		docs := topicDocs(fmt.Sprintf("w%d-", writes), 4, uint64(100+writes))
		if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: docs}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.IndexDelete(ctx, &rcp.IndexDeleteParams{IDs: []string{fmt.Sprintf("a%d", writes)}}); err != nil {
			t.Fatal(err)
		}
		settle(t, e) // the dense index moves
	}
	for _, mode := range []string{rcp.ModeSparse, rcp.ModeDense, rcp.ModeHybrid} {
		for _, unit := range []string{rcp.UnitChunk, rcp.UnitDocument} {
			t.Run(mode+"/"+unit, func(t *testing.T) {
				q := rcp.RetrieveParams{Query: rcp.TextQuery("piston torque coral reef"), K: 3, Mode: mode, Unit: unit}
				ref := pageThrough(t, c, q, nil)
				if len(ref) < 6 {
					t.Fatalf("only %d hits: nothing to page", len(ref))
				}
				got := pageThrough(t, c, q, write)
				if !slices.Equal(got, ref) {
					t.Fatalf("pages under writes:\n%v\nwant the list of the first page's snapshot:\n%v", got, ref)
				}
				seen := map[string]bool{}
				for _, id := range got {
					if seen[id] {
						t.Fatalf("%s twice", id)
					}
					seen[id] = true
				}
			})
		}
	}
}

// Graph units and tree nodes page too (they answered no nextCursor and
// refused a cursor): the pages are the list a single deep request gets,
// across writes.
func TestStructuredUnitsPage(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, func(c *Config) { c.Graph = true })
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	c := connect(t, e)
	one := 1
	for _, tc := range []struct {
		unit  string
		query string
		level *int
	}{
		{rcp.UnitCommunity, "ranking retrieval index", nil},
		{rcp.UnitNode, "ranking retrieval index", nil},
		{rcp.UnitSubgraph, "ranking retrieval index", nil},
		{rcp.UnitPath, "BM25 ranking", nil},
		{rcp.UnitTreeNode, "ranking retrieval index", &one},
	} {
		t.Run(tc.unit, func(t *testing.T) {
			full, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(tc.query), K: 100, Unit: tc.unit, Level: tc.level})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, h := range full.Hits {
				want = append(want, h.ID.String())
			}
			if len(want) < 3 {
				t.Skipf("%d %s hits: nothing to page", len(want), tc.unit)
			}
			n := 0
			got := pageThrough(t, c, rcp.RetrieveParams{Query: rcp.TextQuery(tc.query), K: 2, Unit: tc.unit, Level: tc.level}, func(int) {
				n++
				if _, err := c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{ID: fmt.Sprintf("new%d", n), Text: "ranking retrieval index BM25 " + fmt.Sprint(n)}}}); err != nil {
					t.Fatal(err)
				}
				if err := e.SyncGraph(ctx); err != nil {
					t.Fatal(err)
				}
			})
			// The pages are one list: no hit twice, none skipped. (The same
			// set as the deep request's; its order among near-equal scores
			// can differ between two rankings of the graph — the graph's
			// PageRank sums in map order — which is why a list is kept.)
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] {
					t.Fatalf("%s twice in %v", id, got)
				}
				seen[id] = true
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("pages %v\nwant %v", got, want)
			}
		})
	}
}
