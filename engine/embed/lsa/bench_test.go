package lsa

import (
	"context"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// memoTokenize pre-tokenizes a corpus so benchmarks time the fit, not the
// stemmer.
func memoTokenize(docs []string) Tokenizer {
	cache := make(map[string][]string, len(docs))
	for _, d := range docs {
		cache[d] = stemTokenize(d)
	}
	return func(s string) []string {
		if t, ok := cache[s]; ok {
			return t
		}
		return stemTokenize(s)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// BenchmarkFit times a full 256-dimension fit (matrix + randomized SVD) on
// each dataset.
func BenchmarkFit(b *testing.B) {
	for _, name := range []string{"cranfield", "scifact"} {
		b.Run(name, func(b *testing.B) {
			docs := loadBEIR(b, name).docs
			tok := memoTokenize(docs)
			for b.Loop() {
				if _, err := FitTexts(context.Background(), docs, tok, Options{Dimension: 256, Logger: quiet}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSVD compares the randomized sparse SVD with gonum's dense thin
// SVD of the same Cranfield matrix (the dense one is too slow for SciFact).
func BenchmarkSVD(b *testing.B) {
	docs := loadBEIR(b, "cranfield").docs
	opts := Options{Dimension: 256}
	opts.defaults()
	_, a, err := buildMatrix(context.Background(), slices.Values(docs), stemTokenize, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("randomized-csr", func(b *testing.B) {
		for b.Loop() {
			if _, err := randomizedSVD(context.Background(), a, 256, opts.Oversample, opts.PowerIters, 1, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gonum-dense-thin", func(b *testing.B) {
		d := mat.NewDense(a.rows, a.cols, nil)
		for i := 0; i < a.rows; i++ {
			for p := a.indptr[i]; p < a.indptr[i+1]; p++ {
				d.Set(i, int(a.indices[p]), a.data[p])
			}
		}
		var svd mat.SVD
		for b.Loop() {
			if !svd.Factorize(d, mat.SVDThinV) {
				b.Fatal("svd failed")
			}
		}
		// Report how close the randomized singular values are.
		res, _ := randomizedSVD(context.Background(), a, 256, opts.Oversample, opts.PowerIters, 1, 0)
		exact := svd.Values(nil)
		var worst float64
		for i, s := range res.sigma {
			worst = math.Max(worst, math.Abs(s-exact[i])/exact[i])
		}
		b.ReportMetric(worst, "max-rel-sigma-err")
		b.ReportMetric(math.Abs(res.sigma[0]-exact[0])/exact[0], "rel-sigma1-err")
	})
}

// BenchmarkDecode times loading a 256-dimension model fitted on SciFact
// (what a restart pays before the dense side serves).
func BenchmarkDecode(b *testing.B) {
	docs := loadBEIR(b, "scifact").docs
	m, err := FitTexts(context.Background(), docs, memoTokenize(docs), Options{Dimension: 256, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	data, _ := m.MarshalBinary()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data, stemTokenize); err != nil {
			b.Fatal(err)
		}
	}
}
