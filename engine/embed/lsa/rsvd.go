package lsa

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// svdResult holds the leading k right singular vectors (row-major cols×k)
// and singular values of a sparse matrix.
type svdResult struct {
	v     []float64 // a.cols × k, row-major
	sigma []float64 // k, descending
	k     int
}

// randomizedSVD computes a rank-k truncated SVD of a (rows=documents,
// cols=terms) by the randomized range finder of Halko, Martinsson & Tropp
// (2011, Algorithms 4.4 and 5.1) with q subspace (power) iterations and
// oversampling p. The small projected problem B = Qᵀ A is solved through the
// symmetric eigendecomposition of B Bᵀ. Signs are fixed so that the largest
// |component| of each right singular vector is positive, which together with
// the seeded Gaussian test matrix makes the result deterministic.
func randomizedSVD(ctx context.Context, a *csr, k, p, q int, seed uint64, workers int) (*svdResult, error) {
	l := k + p
	if lim := min(a.rows, a.cols); l > lim {
		l = lim
	}
	if k > l {
		k = l
	}
	if k <= 0 {
		return nil, errors.New("lsa: matrix too small for a rank-1 decomposition")
	}
	at := a.transpose()
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	omega := make([]float64, a.cols*l)
	for i := range omega {
		omega[i] = rng.NormFloat64()
	}
	y := make([]float64, a.rows*l)
	z := make([]float64, a.cols*l)
	// Each product and orthonormalization is one uninterruptible step
	// (about a second at 10 k documents); ctx is checked between them so
	// that a fit abandoned at shutdown ends promptly.
	step := func(src []float64, m *csr, dst []float64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.mulDense(src, l, dst, workers)
		if err := ctx.Err(); err != nil {
			return err
		}
		return orthonormalize(dst, m.rows, l)
	}
	if err := step(omega, a, y); err != nil {
		return nil, err
	}
	for range q {
		if err := step(y, at, z); err != nil {
			return nil, err
		}
		if err := step(z, a, y); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Bᵀ = Aᵀ Q  (cols × l)
	at.mulDense(y, l, z, workers)
	bt := blas64.General{Rows: a.cols, Cols: l, Stride: l, Data: z}
	// C = B Bᵀ = (Bᵀ)ᵀ Bᵀ  (l × l)
	c := blas64.General{Rows: l, Cols: l, Stride: l, Data: make([]float64, l*l)}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, bt, bt, 0, c)
	sym := mat.NewSymDense(l, nil)
	for i := 0; i < l; i++ {
		for j := i; j < l; j++ {
			sym.SetSym(i, j, 0.5*(c.Data[i*l+j]+c.Data[j*l+i]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, errors.New("lsa: eigendecomposition of the projected matrix did not converge")
	}
	vals := eig.Values(nil)
	var w mat.Dense
	eig.VectorsTo(&w)
	order := make([]int, l)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return vals[order[i]] > vals[order[j]] })
	// keep the leading k with positive singular values
	keep := order[:0:0]
	sigma := make([]float64, 0, k)
	for _, idx := range order {
		if len(keep) == k {
			break
		}
		if vals[idx] <= 1e-12*math.Max(vals[order[0]], 1e-300) {
			break
		}
		keep = append(keep, idx)
		sigma = append(sigma, math.Sqrt(vals[idx]))
	}
	k = len(keep)
	if k == 0 {
		return nil, errors.New("lsa: the term-document matrix is zero")
	}
	// W_k Σ_k^-1 (l × k)
	wk := blas64.General{Rows: l, Cols: k, Stride: k, Data: make([]float64, l*k)}
	for c, idx := range keep {
		inv := 1 / sigma[c]
		for r := 0; r < l; r++ {
			wk.Data[r*k+c] = w.At(r, idx) * inv
		}
	}
	// V_k = Bᵀ W_k Σ_k^-1  (cols × k)
	v := blas64.General{Rows: a.cols, Cols: k, Stride: k, Data: make([]float64, a.cols*k)}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, bt, wk, 0, v)
	for c := 0; c < k; c++ {
		best, sign := 0.0, 1.0
		for r := 0; r < a.cols; r++ {
			if x := v.Data[r*k+c]; math.Abs(x) > best {
				best = math.Abs(x)
				sign = math.Copysign(1, x)
			}
		}
		if sign < 0 {
			for r := 0; r < a.cols; r++ {
				v.Data[r*k+c] = -v.Data[r*k+c]
			}
		}
	}
	return &svdResult{v: v.Data, sigma: sigma, k: k}, nil
}

// orthonormalize replaces the row-major rows×cols matrix d (rows ≥ cols) by
// an orthonormal basis of its column space (thin Householder QR).
func orthonormalize(d []float64, rows, cols int) error {
	if rows < cols {
		return fmt.Errorf("lsa: cannot orthonormalize %d×%d", rows, cols)
	}
	g := blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: d[:rows*cols]}
	tau := make([]float64, cols)
	work := []float64{0}
	lapack64.Geqrf(g, tau, work, -1)
	lw := int(work[0])
	lapack64.Orgqr(g, tau, work, -1)
	lw = max(lw, int(work[0]), 1)
	work = make([]float64, lw)
	lapack64.Geqrf(g, tau, work, lw)
	lapack64.Orgqr(g, tau, work, lw)
	return nil
}
