package eval_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/rcpgo/rcpgo/eval"
)

// A retrieval function is all the Runner needs; here one that ranks the
// documents containing the query's first word first.
func ExampleRunner() {
	docs := map[string]string{"d1": "wing flutter", "d2": "heat transfer", "d3": "wing heat"}
	retrieve := func(ctx context.Context, query string, k int, opts eval.Options) ([]eval.Ranked, error) {
		var out []eval.Ranked
		for _, id := range []string{"d1", "d2", "d3"} {
			if strings.Contains(docs[id], strings.Fields(query)[0]) {
				out = append(out, eval.Ranked{DocID: id, Score: 1})
			}
		}
		return out, nil
	}
	queries := []eval.Query{{ID: "q1", Text: "heat"}, {ID: "q2", Text: "wing"}}
	qrels := eval.Qrels{"q1": {"d3": 2, "d2": 1}, "q2": {"d3": 1}}
	r := &eval.Runner{Retrieve: retrieve, Metrics: []eval.Metric{{Kind: eval.NDCG, K: 10}, {Kind: eval.MRR}}}
	res, err := r.RunMode(context.Background(), queries, qrels, eval.Mode{Name: "substring"})
	if err != nil {
		panic(err)
	}
	// q1: (1 + 2/log2 3) / (2 + 1/log2 3) = 0.8597, RR 1; q2: (1/log2 3) / 1 = 0.6309, RR ½
	fmt.Printf("nDCG@10 %.4f  MRR %.4f\n", res.Scores.Mean["ndcg@10"], res.Scores.Mean["mrr"])
	// Output: nDCG@10 0.7453  MRR 0.7500
}
