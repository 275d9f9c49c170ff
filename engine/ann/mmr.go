package ann

import (
	"fmt"
	"math"
)

// Candidate is an item offered to MMR.
type Candidate struct {
	ID  uint64
	Vec []float32
	// Relevance is the item's relevance to the query (e.g. a fused retrieval
	// score). MMRByQuery uses the cosine to the query instead.
	Relevance float32
}

// MMR selects up to k candidates by Maximal Marginal Relevance
// (Carbonell & Goldstein 1998): at each step it takes the candidate
// maximising λ·rel(d) − (1−λ)·max_{s∈S} cos(d, s). λ = 1 is pure relevance,
// λ = 0 pure diversity. Ties go to the smaller ID, so the result is
// deterministic. It returns indices into cands in selection order.
// Relevance values should be on a scale comparable to cosine ([−1, 1] or
// [0, 1]); normalise fused scores first.
func MMR(cands []Candidate, k int, lambda float64) ([]int, error) {
	if lambda < 0 || lambda > 1 || math.IsNaN(lambda) {
		return nil, fmt.Errorf("ann: mmr lambda %v outside [0,1]", lambda)
	}
	if k > len(cands) {
		k = len(cands)
	}
	if k <= 0 {
		return nil, nil
	}
	dim := len(cands[0].Vec)
	norms := make([]float64, len(cands))
	for i, c := range cands {
		if len(c.Vec) != dim {
			return nil, fmt.Errorf("%w: candidate %d has %d, want %d", ErrDimension, i, len(c.Vec), dim)
		}
		norms[i] = math.Sqrt(float64(dot(c.Vec, c.Vec)))
	}
	cos := func(i, j int) float64 {
		if norms[i] == 0 || norms[j] == 0 {
			return 0
		}
		return float64(dot(cands[i].Vec, cands[j].Vec)) / (norms[i] * norms[j])
	}
	// maxSim[i] = max similarity of i to the selected set so far.
	maxSim := make([]float64, len(cands))
	for i := range maxSim {
		maxSim[i] = math.Inf(-1)
	}
	chosen := make([]bool, len(cands))
	out := make([]int, 0, k)
	for len(out) < k {
		best, bestScore := -1, math.Inf(-1)
		for i, c := range cands {
			if chosen[i] {
				continue
			}
			div := 0.0
			if len(out) > 0 {
				div = maxSim[i]
			}
			s := lambda*float64(c.Relevance) - (1-lambda)*div
			if best < 0 || s > bestScore || (s == bestScore && c.ID < cands[best].ID) {
				best, bestScore = i, s
			}
		}
		chosen[best] = true
		out = append(out, best)
		for i := range cands {
			if !chosen[i] {
				maxSim[i] = math.Max(maxSim[i], cos(i, best))
			}
		}
	}
	return out, nil
}

// MMRByQuery is MMR with relevance = cos(query, candidate).
func MMRByQuery(query []float32, cands []Candidate, k int, lambda float64) ([]int, error) {
	qn := math.Sqrt(float64(dot(query, query)))
	withRel := make([]Candidate, len(cands))
	for i, c := range cands {
		if len(c.Vec) != len(query) {
			return nil, fmt.Errorf("%w: candidate %d has %d, want %d", ErrDimension, i, len(c.Vec), len(query))
		}
		withRel[i] = c
		cn := math.Sqrt(float64(dot(c.Vec, c.Vec)))
		if qn > 0 && cn > 0 {
			withRel[i].Relevance = float32(float64(dot(query, c.Vec)) / (qn * cn))
		} else {
			withRel[i].Relevance = 0
		}
	}
	return MMR(withRel, k, lambda)
}

// MaxSim is the late-interaction score of RCP §7.5:
// Σ_{q∈Q} max_{d∈D} sim(q, d), with sim the dot product, or the cosine when
// cosine is true. An empty document scores 0.
func MaxSim(query, doc [][]float32, cosine bool) (float32, error) {
	if len(doc) == 0 {
		return 0, nil
	}
	var dn []float32
	if cosine {
		dn = make([]float32, len(doc))
		for j, d := range doc {
			dn[j] = float32(math.Sqrt(float64(dot(d, d))))
		}
	}
	var total float64
	for i, q := range query {
		var qn float32
		if cosine {
			qn = float32(math.Sqrt(float64(dot(q, q))))
		}
		best := float32(math.Inf(-1))
		for j, d := range doc {
			if len(d) != len(q) {
				return 0, fmt.Errorf("%w: query row %d has %d, doc row %d has %d", ErrDimension, i, len(q), j, len(d))
			}
			s := dot(q, d)
			if cosine {
				if qn == 0 || dn[j] == 0 {
					s = 0
				} else {
					s /= qn * dn[j]
				}
			}
			best = max(best, s)
		}
		total += float64(best)
	}
	return float32(total), nil
}
