package ortembed

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/internal/tokenizer"
)

// ---- dense ----

// Encoder is a dense bi-encoder; it implements embed.Provider.
type Encoder struct {
	*model
	dim int
	id  string
}

var _ embed.Provider = (*Encoder)(nil)

// NewEncoder opens a dense encoder. The dimension is read from the output
// shape, or discovered with one probe run when it is dynamic.
func NewEncoder(ctx context.Context, cfg Config) (*Encoder, error) {
	if cfg.Pooling == "" {
		cfg.Pooling = PoolMean
	}
	switch cfg.Pooling {
	case PoolMean, PoolCLS, PoolNone:
	default:
		return nil, fmt.Errorf("ortembed: unknown pooling %q", cfg.Pooling)
	}
	m, err := open(cfg)
	if err != nil {
		return nil, err
	}
	e := &Encoder{model: m}
	want := 3
	if cfg.Pooling == PoolNone {
		want = 2
	}
	if len(m.outShape) != want {
		m.Close()
		return nil, fmt.Errorf("ortembed: output %q has rank %d, pooling %q needs %d", m.output, len(m.outShape), cfg.Pooling, want)
	}
	if d := m.outShape[want-1]; d > 0 {
		e.dim = int(d)
	} else {
		vs, err := e.Embed(ctx, []string{"dimension probe"}, embed.KindDocument)
		if err != nil {
			m.Close()
			return nil, err
		}
		e.dim = len(vs[0])
	}
	norm := "norm"
	if cfg.NoNormalize {
		norm = "raw"
	}
	e.id = m.identity("dense", string(m.cfg.Pooling), norm, fmt.Sprintf("dim=%d", e.dim))
	return e, nil
}

// Identity implements embed.Provider.
func (e *Encoder) Identity() string { return e.id }

// Dimension implements embed.Provider.
func (e *Encoder) Dimension() int { return e.dim }

// Normalized implements embed.Provider.
func (e *Encoder) Normalized() bool { return !e.cfg.NoNormalize }

// BatchLimit implements embed.Provider.
func (e *Encoder) BatchLimit() int { return e.cfg.BatchLimit }

// Close releases the session.
func (e *Encoder) Close() error { return e.model.Close() }

// Embed implements embed.Provider.
func (e *Encoder) Embed(ctx context.Context, texts []string, kind embed.Kind) ([][]float32, error) {
	texts = e.prefixed(texts, kind)
	out := make([][]float32, 0, len(texts))
	err := e.batches(len(texts), func(lo, hi int) error {
		res, err := e.runTexts(ctx, texts[lo:hi])
		if err != nil {
			return err
		}
		vs, err := e.pool(res)
		if err != nil {
			return err
		}
		out = append(out, vs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Encoder) pool(res *batchOut) ([][]float32, error) {
	b := len(res.lens)
	out := make([][]float32, b)
	switch e.cfg.Pooling {
	case PoolNone:
		if len(res.shape) != 2 {
			return nil, fmt.Errorf("ortembed: pooled output shape %v", res.shape)
		}
		h := int(res.shape[1])
		for i := range out {
			out[i] = slices.Clone(res.data[i*h : (i+1)*h])
		}
	default:
		if len(res.shape) != 3 || int(res.shape[1]) != res.seq {
			return nil, fmt.Errorf("ortembed: token output shape %v for sequence length %d", res.shape, res.seq)
		}
		t, h := int(res.shape[1]), int(res.shape[2])
		for i := range out {
			v := make([]float32, h)
			if e.cfg.Pooling == PoolCLS {
				copy(v, res.data[i*t*h:i*t*h+h])
			} else {
				acc := make([]float64, h)
				n := 0
				for j := 0; j < t; j++ {
					if !res.mask[i][j] {
						continue
					}
					n++
					row := res.data[(i*t+j)*h : (i*t+j+1)*h]
					for c, x := range row {
						acc[c] += float64(x)
					}
				}
				for c := range v {
					v[c] = float32(acc[c] / float64(max(n, 1)))
				}
			}
			out[i] = v
		}
	}
	if !e.cfg.NoNormalize {
		for _, v := range out {
			embed.Normalize(v)
		}
	}
	return out, nil
}

// ---- cross-encoder ----

// CrossEncoder scores (query, passage) pairs; it implements embed.Scorer.
// The score is the model's logit (the last column when the output has
// several classes).
type CrossEncoder struct {
	*model
	id string
}

var _ embed.Scorer = (*CrossEncoder)(nil)

// NewCrossEncoder opens a cross-encoder whose output is [batch] or
// [batch, classes].
func NewCrossEncoder(cfg Config) (*CrossEncoder, error) {
	m, err := open(cfg)
	if err != nil {
		return nil, err
	}
	if r := len(m.outShape); r != 1 && r != 2 {
		m.Close()
		return nil, fmt.Errorf("ortembed: cross-encoder output %q has rank %d, want 1 or 2", m.output, r)
	}
	return &CrossEncoder{model: m, id: m.identity("cross")}, nil
}

// Identity names the model.
func (c *CrossEncoder) Identity() string { return c.id }

// Close releases the session.
func (c *CrossEncoder) Close() error { return c.model.Close() }

// Score implements embed.Scorer.
func (c *CrossEncoder) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	q := c.prefixed([]string{query}, embed.KindQuery)[0]
	ps := c.prefixed(passages, embed.KindDocument)
	out := make([]float32, 0, len(ps))
	err := c.batches(len(ps), func(lo, hi int) error {
		encs := make([]tokenizer.Encoding, hi-lo)
		for i, p := range ps[lo:hi] {
			encs[i] = c.tok.EncodePair(q, p)
		}
		res, err := c.run(ctx, encs)
		if err != nil {
			return err
		}
		cols := 1
		if len(res.shape) == 2 {
			cols = int(res.shape[1])
		}
		if cols < 1 || len(res.data) != (hi-lo)*cols {
			return fmt.Errorf("ortembed: cross-encoder output shape %v", res.shape)
		}
		for i := 0; i < hi-lo; i++ {
			out = append(out, res.data[i*cols+cols-1])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ---- multi-vector ----

// MultiEncoder produces per-token matrices (ColBERT). It implements
// embed.MultiEmbedder, and embed.Scorer through MaxSim.
type MultiEncoder struct {
	*model
	dim int
	id  string
}

var (
	_ embed.MultiEmbedder = (*MultiEncoder)(nil)
	_ embed.Scorer        = (*MultiEncoder)(nil)
)

// NewMultiEncoder opens a model whose output is [batch, seq, dim].
func NewMultiEncoder(cfg Config) (*MultiEncoder, error) {
	m, err := open(cfg)
	if err != nil {
		return nil, err
	}
	if len(m.outShape) != 3 || m.outShape[2] <= 0 {
		m.Close()
		return nil, fmt.Errorf("ortembed: multi-vector output %q has shape %v, want [batch, seq, dim]", m.output, m.outShape)
	}
	e := &MultiEncoder{model: m, dim: int(m.outShape[2])}
	skip := "all"
	if cfg.SkipSpecial {
		skip = "nospecial"
	}
	e.id = m.identity("multi", string(e.Similarity()), skip, fmt.Sprintf("dim=%d", e.dim))
	return e, nil
}

// Identity names the model.
func (e *MultiEncoder) Identity() string { return e.id }

// MultiDimension implements embed.MultiEmbedder.
func (e *MultiEncoder) MultiDimension() int { return e.dim }

// Similarity is "cosine" (rows are normalised) unless NoNormalize.
func (e *MultiEncoder) Similarity() embed.Similarity {
	if e.cfg.NoNormalize {
		return embed.SimilarityDot
	}
	return embed.SimilarityCosine
}

// Close releases the session.
func (e *MultiEncoder) Close() error { return e.model.Close() }

// EmbedMulti implements embed.MultiEmbedder: one row per attended token.
func (e *MultiEncoder) EmbedMulti(ctx context.Context, texts []string, kind embed.Kind) ([][][]float32, error) {
	texts = e.prefixed(texts, kind)
	out := make([][][]float32, 0, len(texts))
	err := e.batches(len(texts), func(lo, hi int) error {
		res, err := e.runTexts(ctx, texts[lo:hi])
		if err != nil {
			return err
		}
		if len(res.shape) != 3 || int(res.shape[1]) != res.seq || int(res.shape[2]) != e.dim {
			return fmt.Errorf("ortembed: multi-vector output shape %v", res.shape)
		}
		t, d := res.seq, e.dim
		for i := 0; i < hi-lo; i++ {
			var rows [][]float32
			for j := 0; j < t; j++ {
				if !res.mask[i][j] || (e.cfg.SkipSpecial && res.spec[i][j]) {
					continue
				}
				row := slices.Clone(res.data[(i*t+j)*d : (i*t+j+1)*d])
				if !e.cfg.NoNormalize {
					embed.Normalize(row)
				}
				rows = append(rows, row)
			}
			out = append(out, rows)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Score implements embed.Scorer with MaxSim (RCP §7.5), for rerank method
// "colbert".
func (e *MultiEncoder) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	qm, err := e.EmbedMulti(ctx, []string{query}, embed.KindQuery)
	if err != nil {
		return nil, err
	}
	dm, err := e.EmbedMulti(ctx, passages, embed.KindDocument)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(dm))
	for i, d := range dm {
		// Rows are already normalised for cosine, so dot is exact.
		if out[i], err = ann.MaxSim(qm[0], d, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ---- sparse ----

// SparseEncoder is a SPLADE model: from MLM logits [batch, seq, vocab] it
// takes w_v = max_t log(1 + ReLU(logit_tv)) over attended tokens. It
// implements embed.SparseEmbedder.
type SparseEncoder struct {
	*model
	vocab int
	id    string
}

var _ embed.SparseEmbedder = (*SparseEncoder)(nil)

// NewSparseEncoder opens a SPLADE model.
func NewSparseEncoder(cfg Config) (*SparseEncoder, error) {
	m, err := open(cfg)
	if err != nil {
		return nil, err
	}
	if len(m.outShape) != 3 || m.outShape[2] <= 0 {
		m.Close()
		return nil, fmt.Errorf("ortembed: sparse output %q has shape %v, want [batch, seq, vocab]", m.output, m.outShape)
	}
	e := &SparseEncoder{model: m, vocab: int(m.outShape[2])}
	e.id = m.identity("splade", fmt.Sprintf("vocab=%d", e.vocab))
	return e, nil
}

// Identity names the model.
func (e *SparseEncoder) Identity() string { return e.id }

// Vocabulary implements embed.SparseEmbedder.
func (e *SparseEncoder) Vocabulary() int { return e.vocab }

// Close releases the session.
func (e *SparseEncoder) Close() error { return e.model.Close() }

// EmbedSparse implements embed.SparseEmbedder.
func (e *SparseEncoder) EmbedSparse(ctx context.Context, texts []string, kind embed.Kind) ([]embed.SparseVector, error) {
	texts = e.prefixed(texts, kind)
	out := make([]embed.SparseVector, 0, len(texts))
	err := e.batches(len(texts), func(lo, hi int) error {
		res, err := e.runTexts(ctx, texts[lo:hi])
		if err != nil {
			return err
		}
		if len(res.shape) != 3 || int(res.shape[1]) != res.seq || int(res.shape[2]) != e.vocab {
			return fmt.Errorf("ortembed: sparse output shape %v", res.shape)
		}
		t, v := res.seq, e.vocab
		w := make([]float32, v)
		for i := 0; i < hi-lo; i++ {
			clear(w)
			for j := 0; j < t; j++ {
				if !res.mask[i][j] {
					continue
				}
				for k, x := range res.data[(i*t+j)*v : (i*t+j+1)*v] {
					if x > 0 {
						if s := float32(math.Log1p(float64(x))); s > w[k] {
							w[k] = s
						}
					}
				}
			}
			var sv embed.SparseVector
			for k, x := range w {
				if x > 0 {
					sv.Indices = append(sv.Indices, uint32(k))
					sv.Values = append(sv.Values, x)
				}
			}
			out = append(out, sv)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
