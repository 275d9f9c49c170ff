package engine

import (
	"testing"

	"github.com/rcpgo/rcpgo/eval"
)

// TestRewriteDoesNoHarm: retrieve's rewrite (spelling correction and
// expansion with words associated with the query's above
// transform.DefaultMinAssociation) ranks at least as well as the plain
// sparse query on Cranfield and SciFact (nDCG@10, BEIR test qrels). It
// needs the shared datasets.
func TestRewriteDoesNoHarm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ingests Cranfield and SciFact (about a minute)")
	}
	for _, name := range []string{"cranfield", "scifact"} {
		ds := loadDataset(t, name)
		e := qualityEngine(t, t.TempDir(), ds, Config{})
		plain := measure(t, e, ds, eval.Options{"mode": "sparse"}, 100)
		rewritten := measure(t, e, ds, eval.Options{"mode": "sparse", "rewrite": "rewrite"}, 100)
		d, se := pairedDiff(rewritten, plain, "ndcg@10")
		t.Logf("%s: sparse nDCG@10 %.4f R@100 %.4f; + rewrite %.4f %.4f (Δ %+.4f ± %.4f)", name,
			plain.Mean["ndcg@10"], plain.Mean["recall@100"], rewritten.Mean["ndcg@10"], rewritten.Mean["recall@100"], d, se)
		if rewritten.Mean["ndcg@10"] < plain.Mean["ndcg@10"] {
			t.Errorf("%s: rewrite nDCG@10 %.4f < sparse %.4f", name, rewritten.Mean["ndcg@10"], plain.Mean["ndcg@10"])
		}
	}
}
