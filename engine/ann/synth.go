package ann

import "math/rand/v2"

// Clustered returns n deterministic pseudo-random vectors of dimension dim
// drawn around `clusters` Gaussian centres (spread controls the within-
// cluster noise relative to unit-variance centres). It is used by tests and
// benchmarks.
func Clustered(n, dim, clusters int, spread float64, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 0xc105e4))
	centres := make([][]float64, clusters)
	for c := range centres {
		centres[c] = make([]float64, dim)
		for j := range centres[c] {
			centres[c][j] = rng.NormFloat64()
		}
	}
	slab := make([]float32, n*dim)
	out := make([][]float32, n)
	for i := range out {
		c := centres[rng.IntN(clusters)]
		v := slab[i*dim : (i+1)*dim : (i+1)*dim]
		for j := range v {
			v[j] = float32(c[j] + spread*rng.NormFloat64())
		}
		out[i] = v
	}
	return out
}
