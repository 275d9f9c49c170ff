package ortembed

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/internal/tokenizer"
	"github.com/rcpgo/rcpgo/internal/testutil/onnxtest"
)

// requireRuntime loads ONNX Runtime or stops the test (see internal/testutil/onnxtest).
func requireRuntime(t *testing.T) {
	t.Helper()
	if err := InitRuntime(onnxtest.Library(t)); err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
}

func fixture(name string) string { return filepath.Join("testdata", name) }

func cfg(model string) Config {
	return Config{ModelPath: fixture(model), TokenizerPath: fixture("tokenizer.json"), BatchLimit: 3}
}

// ref recomputes the fixture models in Go from weights.json.
type ref struct {
	E, P, S, W1, Wm, Wv, wc [][]float64
	b1, bc, bv              []float64
}

func loadRef(t *testing.T) *ref {
	t.Helper()
	data, err := os.ReadFile(fixture("weights.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	r := &ref{}
	for name, dst := range map[string]*[][]float64{"E": &r.E, "P": &r.P, "S": &r.S, "W1": &r.W1, "Wm": &r.Wm, "Wv": &r.Wv, "wc": &r.wc} {
		if err := json.Unmarshal(raw[name], dst); err != nil {
			t.Fatal(name, err)
		}
	}
	for name, dst := range map[string]*[]float64{"b1": &r.b1, "bc": &r.bc, "bv": &r.bv} {
		if err := json.Unmarshal(raw[name], dst); err != nil {
			t.Fatal(name, err)
		}
	}
	return r
}

func matvec(x []float64, w [][]float64) []float64 {
	out := make([]float64, len(w[0]))
	for i, xi := range x {
		for j, wij := range w[i] {
			out[j] += xi * wij
		}
	}
	return out
}

func (r *ref) hidden(e tokenizer.Encoding) [][]float64 {
	h := make([][]float64, e.Len())
	for t := range h {
		x := make([]float64, len(r.b1))
		for c := range x {
			x[c] = r.E[e.IDs[t]][c] + r.P[t][c] + r.S[e.TypeIDs[t]][c]
		}
		y := matvec(x, r.W1)
		for c := range y {
			y[c] = math.Tanh(y[c] + r.b1[c])
		}
		h[t] = y
	}
	return h
}

func normalize64(v []float64) []float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / n
	}
	return out
}

func close32(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i])-want[i]) > 1e-5 {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

var texts = []string{
	"How does a wing stall?",
	"Airfoil drag at high speed",
	"unplayable cafés",
	"the boundary-layer flow of air (mach 2)",
	strings.Repeat("wing lift drag ", 20), // truncated to 32 tokens
}

func loadTok(t *testing.T) *tokenizer.Tokenizer {
	tok, err := tokenizer.Load(fixture("tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncoderMatchesReference(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	r, tok := loadRef(t), loadTok(t)
	for _, pooling := range []Pooling{PoolMean, PoolCLS} {
		t.Run(string(pooling), func(t *testing.T) {
			c := cfg("encoder.onnx")
			c.Pooling = pooling
			enc, err := NewEncoder(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			if enc.Dimension() != 16 || !enc.Normalized() || enc.BatchLimit() != 3 {
				t.Fatalf("dim %d", enc.Dimension())
			}
			if !strings.HasPrefix(enc.Identity(), "onnx-dense:encoder:") || !strings.Contains(enc.Identity(), ":"+string(pooling)+":") {
				t.Errorf("identity %q", enc.Identity())
			}
			// 5 texts with batch limit 3: two runs, padded to different lengths.
			vs, err := enc.Embed(ctx, texts, embed.KindDocument)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				h := r.hidden(tok.Encode(text))
				want := make([]float64, 16)
				if pooling == PoolCLS {
					copy(want, h[0])
				} else {
					for _, row := range h {
						for c, x := range row {
							want[c] += x / float64(len(h))
						}
					}
				}
				close32(t, text, vs[i], normalize64(want))
			}
			// Padding invariance: alone equals in batch.
			alone, _ := enc.Embed(ctx, texts[2:3], embed.KindDocument)
			close32(t, "alone", alone[0], toF64(vs[2]))
		})
	}
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func TestEncoderPrefixes(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	c := cfg("encoder.onnx")
	c.QueryPrefix, c.DocumentPrefix = "how ", "the "
	enc, err := NewEncoder(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	plain, _ := NewEncoder(ctx, cfg("encoder.onnx"))
	defer plain.Close()
	if enc.Identity() == plain.Identity() {
		t.Error("prefixes must change the identity")
	}
	q, _ := enc.Embed(ctx, []string{"wing"}, embed.KindQuery)
	d, _ := enc.Embed(ctx, []string{"wing"}, embed.KindDocument)
	wantQ, _ := plain.Embed(ctx, []string{"how wing"}, embed.KindQuery)
	wantD, _ := plain.Embed(ctx, []string{"the wing"}, embed.KindQuery)
	close32(t, "query", q[0], toF64(wantQ[0]))
	close32(t, "document", d[0], toF64(wantD[0]))
}

func TestCrossEncoderMatchesReference(t *testing.T) {
	requireRuntime(t)
	r, tok := loadRef(t), loadTok(t)
	ce, err := NewCrossEncoder(cfg("cross.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	var s embed.Scorer = ce
	query := "wing stall speed"
	scores, err := s.Score(context.Background(), query, texts)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(texts))
	for i, p := range texts {
		e := tok.EncodePair(query, p)
		if e.Len() > 32 {
			t.Fatalf("pair not truncated: %d", e.Len())
		}
		want[i] = matvec(r.hidden(e)[0], r.wc)[0] + r.bc[0]
	}
	close32(t, "scores", scores, want)
}

func TestMultiEncoderMatchesReference(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	r, tok := loadRef(t), loadTok(t)
	for _, skip := range []bool{false, true} {
		c := cfg("colbert.onnx")
		c.SkipSpecial = skip
		me, err := NewMultiEncoder(c)
		if err != nil {
			t.Fatal(err)
		}
		defer me.Close()
		if me.MultiDimension() != 8 || me.Similarity() != embed.SimilarityCosine {
			t.Fatalf("dim %d sim %s", me.MultiDimension(), me.Similarity())
		}
		ms, err := me.EmbedMulti(ctx, texts, embed.KindDocument)
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			e := tok.Encode(text)
			h := r.hidden(e)
			var rows [][]float64
			for tt := range h {
				if skip && e.Special[tt] {
					continue
				}
				rows = append(rows, normalize64(matvec(h[tt], r.Wm)))
			}
			if len(ms[i]) != len(rows) {
				t.Fatalf("skip=%v %q: %d rows, want %d", skip, text, len(ms[i]), len(rows))
			}
			for j := range rows {
				close32(t, text, ms[i][j], rows[j])
			}
		}
		// colbert rerank = MaxSim of the matrices
		scores, err := me.Score(ctx, "wing stall", texts)
		if err != nil {
			t.Fatal(err)
		}
		qm, _ := me.EmbedMulti(ctx, []string{"wing stall"}, embed.KindQuery)
		for i := range texts {
			want, _ := ann.MaxSim(qm[0], ms[i], true)
			if math.Abs(float64(scores[i]-want)) > 1e-4 {
				t.Errorf("MaxSim[%d] = %v, want %v", i, scores[i], want)
			}
		}
	}
}

func TestSparseEncoderMatchesReference(t *testing.T) {
	requireRuntime(t)
	r, tok := loadRef(t), loadTok(t)
	se, err := NewSparseEncoder(cfg("splade.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	if se.Vocabulary() != tok.VocabSize() {
		t.Fatalf("vocabulary %d, want %d", se.Vocabulary(), tok.VocabSize())
	}
	svs, err := se.EmbedSparse(context.Background(), texts, embed.KindDocument)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		w := make([]float64, se.Vocabulary())
		for _, row := range r.hidden(tok.Encode(text)) {
			logits := matvec(row, r.Wv)
			for k := range logits {
				if x := logits[k] + r.bv[k]; x > 0 {
					w[k] = math.Max(w[k], math.Log1p(x))
				}
			}
		}
		var idx []uint32
		var vals []float64
		for k, x := range w {
			if x > 0 {
				idx = append(idx, uint32(k))
				vals = append(vals, x)
			}
		}
		if !slices.Equal(svs[i].Indices, idx) {
			t.Fatalf("%q: indices %v, want %v", text, svs[i].Indices, idx)
		}
		close32(t, text, svs[i].Values, vals)
	}
}

func TestConfigErrors(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	tests := []struct {
		name string
		cfg  Config
		open func(Config) error
	}{
		{"missing paths", Config{}, func(c Config) error { _, err := NewEncoder(ctx, c); return err }},
		{"no such model", Config{ModelPath: "testdata/nope.onnx", TokenizerPath: fixture("tokenizer.json")}, func(c Config) error { _, err := NewEncoder(ctx, c); return err }},
		{"bad pooling", Config{ModelPath: fixture("encoder.onnx"), TokenizerPath: fixture("tokenizer.json"), Pooling: "max"}, func(c Config) error { _, err := NewEncoder(ctx, c); return err }},
		{"pooled output of rank 3", Config{ModelPath: fixture("encoder.onnx"), TokenizerPath: fixture("tokenizer.json"), Pooling: PoolNone}, func(c Config) error { _, err := NewEncoder(ctx, c); return err }},
		{"cross on token output", cfg("encoder.onnx"), func(c Config) error { _, err := NewCrossEncoder(c); return err }},
		{"multi on logits", cfg("cross.onnx"), func(c Config) error { _, err := NewMultiEncoder(c); return err }},
		{"unknown output", Config{ModelPath: fixture("encoder.onnx"), TokenizerPath: fixture("tokenizer.json"), Output: "pooled"}, func(c Config) error { _, err := NewEncoder(ctx, c); return err }},
		{"other runtime library", Config{ModelPath: fixture("encoder.onnx"), TokenizerPath: fixture("tokenizer.json"), LibraryPath: "/nonexistent/libonnxruntime.so"}, func(c Config) error { _, err := NewEncoder(ctx, c); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.open(tt.cfg); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	requireRuntime(t)
	enc, err := NewEncoder(context.Background(), cfg("encoder.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := enc.Embed(ctx, texts, embed.KindDocument); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}
