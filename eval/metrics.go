package eval

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Kind names a metric family.
type Kind string

// Metric families, with trec_eval's definitions (relevant = grade > 0;
// n_rel = number of relevant judged documents of the query):
const (
	// NDCG: Σ_{i≤k} gain_i / log2(i+1) over the ranking, divided by the same
	// sum over the judged grades sorted descending (trec_eval ndcg_cut:
	// gain = grade, grades ≤ 0 give 0). 0 when the query has no relevant
	// document. K = 0: no cutoff (trec_eval ndcg).
	NDCG Kind = "ndcg"
	// Recall: relevant retrieved in the top k / n_rel (trec_eval recall_k).
	Recall Kind = "recall"
	// MRR: 1/rank of the first relevant document within the top k, else 0
	// (K = 0: trec_eval recip_rank; BEIR's MRR@k otherwise).
	MRR Kind = "mrr"
	// MAP: Σ over relevant documents at rank r ≤ k of precision@r, divided
	// by n_rel (trec_eval map, and map_cut_k when K > 0).
	MAP Kind = "map"
	// Precision: relevant in the top k / k, even when fewer than k were
	// retrieved (trec_eval P_k). Needs K > 0.
	Precision Kind = "p"
)

// Metric is a metric family with its cutoff (0 = none).
type Metric struct {
	Kind Kind
	K    int
}

// String returns the metric's key: "ndcg@10", "map", "p@5".
func (m Metric) String() string {
	if m.K == 0 {
		return string(m.Kind)
	}
	return string(m.Kind) + "@" + strconv.Itoa(m.K)
}

// Label returns the conventional display name: "nDCG@10", "Recall@100".
func (m Metric) Label() string {
	name := map[Kind]string{NDCG: "nDCG", Recall: "Recall", MRR: "MRR", MAP: "MAP", Precision: "P"}[m.Kind]
	if m.K == 0 {
		return name
	}
	return name + "@" + strconv.Itoa(m.K)
}

// ParseMetric parses "ndcg@10", "nDCG@10", "recall@100", "mrr", "map@100",
// "P@5" (case-insensitive; "R@k" means recall, "ap" means map).
func ParseMetric(s string) (Metric, error) {
	name, kstr, hasK := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "@")
	var m Metric
	switch name {
	case "ndcg":
		m.Kind = NDCG
	case "recall", "r":
		m.Kind = Recall
	case "mrr", "rr", "recip_rank":
		m.Kind = MRR
	case "map", "ap":
		m.Kind = MAP
	case "p", "precision":
		m.Kind = Precision
	default:
		return Metric{}, fmt.Errorf("eval: unknown metric %q (want ndcg, recall, mrr, map or p, with @k)", s)
	}
	if hasK {
		k, err := strconv.Atoi(kstr)
		if err != nil || k <= 0 {
			return Metric{}, fmt.Errorf("eval: metric %q: cutoff must be a positive integer", s)
		}
		m.K = k
	}
	if m.Kind == Precision && m.K == 0 {
		return Metric{}, fmt.Errorf("eval: metric %q needs a cutoff (p@k)", s)
	}
	return m, nil
}

// ParseMetrics parses a comma-separated list of metrics.
func ParseMetrics(list string) ([]Metric, error) {
	var out []Metric
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		m, err := ParseMetric(s)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("eval: no metrics in %q", list)
	}
	return out, nil
}

// DefaultMetrics is what the Runner reports when none are given.
var DefaultMetrics = []Metric{
	{NDCG, 10}, {Recall, 10}, {Recall, 50}, {Recall, 100}, {MRR, 10}, {MAP, 0}, {MAP, 100}, {Precision, 10},
}

// MaxDepth returns the largest cutoff among ms, or 0 when one has none.
func MaxDepth(ms []Metric) int {
	d := 0
	for _, m := range ms {
		if m.K == 0 {
			return 0
		}
		d = max(d, m.K)
	}
	return d
}

// Judged is one query's judgments: document id → grade.
type Judged = map[string]int

// ScoreQuery computes the metrics of one ranking. Repeated document ids
// count at their first position only.
func ScoreQuery(judged Judged, ranking []Ranked, metrics []Metric) map[string]float64 {
	// Gains in ranking order, without duplicates.
	gains := make([]int, 0, len(ranking))
	seen := make(map[string]bool, len(ranking))
	for _, h := range ranking {
		if seen[h.DocID] {
			continue
		}
		seen[h.DocID] = true
		gains = append(gains, max(judged[h.DocID], 0))
	}
	var ideal []int
	for _, g := range judged {
		if g > 0 {
			ideal = append(ideal, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ideal)))
	nRel := len(ideal)

	out := make(map[string]float64, len(metrics))
	for _, m := range metrics {
		out[m.String()] = scoreOne(m, gains, ideal, nRel)
	}
	return out
}

func scoreOne(m Metric, gains, ideal []int, nRel int) float64 {
	cut := len(gains)
	if m.K > 0 && m.K < cut {
		cut = m.K
	}
	top := gains[:cut]
	switch m.Kind {
	case NDCG:
		icut := len(ideal)
		if m.K > 0 && m.K < icut {
			icut = m.K
		}
		idcg := dcg(ideal[:icut])
		if idcg == 0 {
			return 0
		}
		return dcg(top) / idcg
	case Recall:
		if nRel == 0 {
			return 0
		}
		return float64(countRel(top)) / float64(nRel)
	case Precision:
		return float64(countRel(top)) / float64(m.K)
	case MRR:
		for i, g := range top {
			if g > 0 {
				return 1 / float64(i+1)
			}
		}
		return 0
	case MAP:
		if nRel == 0 {
			return 0
		}
		sum, rel := 0.0, 0
		for i, g := range top {
			if g > 0 {
				rel++
				sum += float64(rel) / float64(i+1)
			}
		}
		return sum / float64(nRel)
	}
	panic("eval: unknown metric kind " + string(m.Kind))
}

func dcg(gains []int) float64 {
	s := 0.0
	for i, g := range gains {
		if g > 0 {
			s += float64(g) / math.Log2(float64(i+2))
		}
	}
	return s
}

func countRel(gains []int) int {
	n := 0
	for _, g := range gains {
		if g > 0 {
			n++
		}
	}
	return n
}

// Scores holds per-query and mean figures of one run.
type Scores struct {
	Metrics    []string                      `json:"metrics"`
	Mean       map[string]float64            `json:"mean"`
	PerQuery   map[string]map[string]float64 `json:"perQuery,omitempty"`
	NumQueries int                           `json:"numQueries"`
	// Unranked counts judged queries that had no ranking in the run; they
	// score 0 (trec_eval -c).
	Unranked int `json:"unranked"`
}

// Evaluate scores run against qrels. Every query of qrels is scored, and one
// without a ranking in run scores 0 on every metric: this is trec_eval -c
// (with every judged query present in the run it equals plain trec_eval).
// Rankings of unjudged queries are ignored. Means are arithmetic over the
// judged queries.
func Evaluate(qrels Qrels, run Run, metrics []Metric) *Scores {
	s := &Scores{Mean: map[string]float64{}, PerQuery: map[string]map[string]float64{}}
	for _, m := range metrics {
		s.Metrics = append(s.Metrics, m.String())
		s.Mean[m.String()] = 0
	}
	for _, qid := range qrels.QueryIDs() {
		ranking, ok := run[qid]
		if !ok {
			s.Unranked++
		}
		pq := ScoreQuery(qrels[qid], ranking, metrics)
		s.PerQuery[qid] = pq
		for k, v := range pq {
			s.Mean[k] += v
		}
	}
	s.NumQueries = len(qrels)
	if s.NumQueries > 0 {
		for k := range s.Mean {
			s.Mean[k] /= float64(s.NumQueries)
		}
	}
	return s
}
