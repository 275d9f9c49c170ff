package lsa

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"gonum.org/v1/gonum/mat"

	"github.com/rcpgo/rcpgo/engine/embed"
)

func simpleTokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// topicCorpus makes documents from three disjoint vocabularies.
func topicCorpus(n int, seed uint64) []string {
	topics := [][]string{
		{"wing", "airfoil", "lift", "drag", "flow", "mach", "boundary", "layer"},
		{"protein", "cell", "gene", "expression", "mouse", "tumor", "receptor", "immune"},
		{"court", "law", "judge", "appeal", "contract", "statute", "plaintiff", "ruling"},
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	docs := make([]string, n)
	for i := range docs {
		t := topics[i%3]
		var words []string
		for range 12 {
			words = append(words, t[rng.IntN(len(t))])
		}
		docs[i] = strings.Join(words, " ")
	}
	return docs
}

func TestRandomizedSVDMatchesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols, k := 60, 40, 5
	// A low-rank-plus-noise sparse matrix.
	a := &csr{rows: rows, cols: cols, indptr: []int{0}}
	dense := mat.NewDense(rows, cols, nil)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			v := 0.0
			if (i+j)%3 == 0 {
				v = float64((i%5)+1) * float64((j%4)+1)
			}
			if rng.Float64() < 0.2 {
				v += rng.Float64()
			}
			if v != 0 {
				a.indices = append(a.indices, int32(j))
				a.data = append(a.data, v)
				dense.Set(i, j, v)
			}
		}
		a.rows = i + 1
		a.indptr = append(a.indptr, len(a.data))
	}
	res, err := randomizedSVD(context.Background(), a, k, 10, 4, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	var svd mat.SVD
	if !svd.Factorize(dense, mat.SVDThin) {
		t.Fatal("exact SVD failed")
	}
	want := svd.Values(nil)
	var v mat.Dense
	svd.VTo(&v)
	for c := 0; c < k; c++ {
		if rel := math.Abs(res.sigma[c]-want[c]) / want[c]; rel > 1e-3 {
			t.Errorf("sigma[%d] = %g, want %g", c, res.sigma[c], want[c])
		}
		// |<v_c, v*_c>| ≈ 1
		var dot float64
		for r := 0; r < cols; r++ {
			dot += res.v[r*res.k+c] * v.At(r, c)
		}
		if math.Abs(math.Abs(dot)-1) > 1e-3 {
			t.Errorf("singular vector %d: |cos| = %g", c, math.Abs(dot))
		}
	}
}

func TestFitEmbedTopics(t *testing.T) {
	ctx := context.Background()
	docs := topicCorpus(300, 1)
	m, err := FitTexts(ctx, docs, simpleTokenize, Options{Dimension: 8, Snapshot: "v1", TokenizerID: "simple"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Dimension() != 8 || !strings.HasPrefix(m.Identity(), "lsa-8:fit=") {
		t.Fatalf("dimension %d identity %q", m.Dimension(), m.Identity())
	}
	q, err := m.Embed(ctx, []string{"airfoil drag at high mach", "tumor receptor", "unknownword"}, embed.KindQuery)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := m.Embed(ctx, docs[:3], embed.KindDocument)
	for i, want := range []int{0, 1} {
		best := -1
		bestS := float32(-2)
		for j := range d {
			if s := embed.Dot(q[i], d[j]); s > bestS {
				best, bestS = j, s
			}
		}
		if best != want {
			t.Errorf("query %d nearest doc %d, want %d", i, best, want)
		}
		var n float64
		for _, x := range q[i] {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("query %d norm² %g", i, n)
		}
	}
	if slices.ContainsFunc(q[2], func(x float32) bool { return x != 0 }) {
		t.Errorf("out-of-vocabulary query should embed to zero")
	}
	// Determinism: a refit on the same data gives the same identity; a
	// different corpus or snapshot gives another.
	m2, err := FitTexts(ctx, docs, simpleTokenize, Options{Dimension: 8, Snapshot: "v1", TokenizerID: "simple", Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Identity() != m.Identity() {
		t.Errorf("refit identity %q != %q", m2.Identity(), m.Identity())
	}
	m3, _ := FitTexts(ctx, docs, simpleTokenize, Options{Dimension: 8, Snapshot: "v2", TokenizerID: "simple"})
	m4, _ := FitTexts(ctx, topicCorpus(300, 2), simpleTokenize, Options{Dimension: 8, Snapshot: "v1", TokenizerID: "simple"})
	if m3.Identity() == m.Identity() || m4.Identity() == m.Identity() {
		t.Errorf("identities should differ: %q %q %q", m.Identity(), m3.Identity(), m4.Identity())
	}
	if err := embed.CheckIdentity(m.Identity(), m4); !errors.Is(err, embed.ErrIdentityMismatch) {
		t.Errorf("CheckIdentity = %v", err)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	ctx := context.Background()
	docs := topicCorpus(120, 5)
	m, err := FitTexts(ctx, docs, simpleTokenize, Options{Dimension: 6, Snapshot: "snap", TokenizerID: "simple"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.lsa")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path, simpleTokenize)
	if err != nil {
		t.Fatal(err)
	}
	if got.Identity() != m.Identity() || got.Snapshot() != "snap" || got.TokenizerID() != "simple" ||
		got.Dimension() != 6 || got.NumDocs() != 120 || got.VocabularySize() != m.VocabularySize() {
		t.Fatalf("round trip changed the model: %q vs %q", got.Identity(), m.Identity())
	}
	a, _ := m.Embed(ctx, docs[:5], embed.KindDocument)
	b, _ := got.Embed(ctx, docs[:5], embed.KindDocument)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("vector %d differs after reload", i)
		}
	}
	data, _ := m.MarshalBinary()
	noTok, err := Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noTok.Embed(ctx, []string{"x"}, embed.KindQuery); !errors.Is(err, ErrNoTokenizer) {
		t.Errorf("Embed without tokenizer: %v", err)
	}
	// Corruption anywhere is detected: in the header, meta or block
	// table at once, in the projection when it is read or verified.
	for _, off := range []int{0, 7, 20, len(data) / 2, len(data) - 60, len(data) - 1} {
		bad := bytes.Clone(data)
		bad[off] ^= 0x40
		m, err := Decode(bad, nil)
		if err == nil {
			err = m.Verify()
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("flip at %d: err = %v", off, err)
		}
	}
	if _, err := Decode(data[:len(data)-9], nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated: err = %v", err)
	}
}

func TestFitErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		docs []string
		tok  Tokenizer
	}{
		{"no tokenizer", []string{"a b", "a b"}, nil},
		{"one doc", []string{"a b c"}, simpleTokenize},
		{"no shared terms", []string{"a", "b", "c"}, simpleTokenize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := FitTexts(ctx, tt.docs, tt.tok, Options{}); err == nil {
				t.Fatal("want an error")
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := FitTexts(cctx, topicCorpus(30, 1), simpleTokenize, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled fit: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	m, err := FitTexts(context.Background(), topicCorpus(30, 9), simpleTokenize, Options{Dimension: 3})
	if err != nil {
		f.Fatal(err)
	}
	data, _ := m.MarshalBinary()
	f.Add(data)
	f.Add([]byte(magic + "\x01\x00"))
	if v1, err := os.ReadFile("testdata/v1.model"); err == nil {
		f.Add(v1)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b, simpleTokenize)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		// A decoded model must embed without panicking (or fail with
		// ErrCorrupt when a block it reads is damaged); one that verifies
		// re-encodes to a model of the same identity.
		if _, err := m.Embed(context.Background(), []string{"wing lift", ""}, embed.KindQuery); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
		verr := m.Verify()
		if verr != nil {
			if !errors.Is(verr, ErrCorrupt) {
				t.Fatalf("verify: %v", verr)
			}
			if _, err := m.MarshalBinary(); err == nil {
				t.Fatal("a damaged model re-encoded")
			}
			return
		}
		// The identity is the one of the model's contents.
		if m.Identity() != m.computeIdentity() {
			t.Fatalf("identity %q, re-encoded %q", m.Identity(), m.computeIdentity())
		}
		again, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if m2, err := Decode(again, simpleTokenize); err != nil || m2.Verify() != nil || m2.Identity() != m.Identity() {
			t.Fatalf("re-encoded model: %v", err)
		}
		// The header read alone agrees with the full decode.
		if h, err := DecodeHeader(b); err != nil || h.Dimension != m.Dimension() || h.BatchLimit != m.BatchLimit() || h.NumDocs != m.NumDocs() {
			t.Fatalf("header %+v, %v; model dim %d", h, err, m.Dimension())
		}
	})
}

// A fit abandoned (rcpd shutting down) stops between the steps of the
// decomposition instead of running it to the end.
func TestRandomizedSVDStopsWhenCancelled(t *testing.T) {
	a := &csr{rows: 3, cols: 3, indptr: []int{0, 1, 2, 3}, indices: []int32{0, 1, 2}, data: []float64{1, 2, 3}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := randomizedSVD(ctx, a, 2, 1, 2, 1, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled decomposition: err = %v, want context.Canceled", err)
	}
	if _, err := randomizedSVD(context.Background(), a, 2, 1, 2, 1, 1); err != nil {
		t.Fatal(err)
	}
}
