// Package ortembed runs local ONNX models through ONNX Runtime
// (github.com/yalue/onnxruntime_go, cgo) with a tokenizer.json tokenizer:
//
//   - Encoder: a dense bi-encoder (embed.Provider), mean or CLS pooling over
//     last_hidden_state, or a model that outputs pooled [batch, dim] vectors;
//   - CrossEncoder: (query, passage) pair scoring (embed.Scorer, rerank
//     method "cross-encoder");
//   - MultiEncoder: per-token ColBERT-style matrices (embed.MultiEmbedder)
//     and MaxSim scoring (embed.Scorer, rerank method "colbert");
//   - SparseEncoder: SPLADE max-pooled log(1+ReLU(logits)) term weights
//     (embed.SparseEmbedder).
//
// The ONNX Runtime shared library (libonnxruntime.so, C API version 24 =
// ONNX Runtime 1.24.x) is found through Config.LibraryPath or the
// RCPGO_ONNXRUNTIME_LIB environment variable; scripts/fetch-onnxruntime.sh
// installs it from the onnxruntime-node npm package. The runtime is
// initialised once per process.
package ortembed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/internal/tokenizer"
)

// LibraryEnv is the environment variable naming libonnxruntime.so.
const LibraryEnv = "RCPGO_ONNXRUNTIME_LIB"

// ErrNoRuntime is returned when the ONNX Runtime library cannot be found.
var ErrNoRuntime = errors.New("ortembed: ONNX Runtime library not found")

var (
	rtMu   sync.Mutex
	rtPath string
)

// InitRuntime loads the ONNX Runtime shared library (path, or
// $RCPGO_ONNXRUNTIME_LIB when empty) and initialises its environment. It is
// idempotent for the same library and fails for a different one.
func InitRuntime(path string) error {
	rtMu.Lock()
	defer rtMu.Unlock()
	if path == "" {
		path = os.Getenv(LibraryEnv)
	}
	if ort.IsInitialized() {
		if path != "" && path != rtPath {
			return fmt.Errorf("ortembed: runtime already initialised from %s, not %s", rtPath, path)
		}
		return nil
	}
	if path == "" {
		return fmt.Errorf("%w: set %s (scripts/fetch-onnxruntime.sh prints the path) or Config.LibraryPath", ErrNoRuntime, LibraryEnv)
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		return fmt.Errorf("%w: %s is not a file (run scripts/fetch-onnxruntime.sh)", ErrNoRuntime, path)
	}
	ort.SetSharedLibraryPath(path)
	if err := ort.InitializeEnvironment(); err != nil {
		return fmt.Errorf("ortembed: initialise ONNX Runtime from %s: %w", path, err)
	}
	rtPath = path
	return nil
}

// Pooling selects how a dense Encoder turns token states into one vector.
type Pooling string

const (
	// PoolMean averages the states of attended tokens (sentence-transformers).
	PoolMean Pooling = "mean"
	// PoolCLS takes the first token's state.
	PoolCLS Pooling = "cls"
	// PoolNone expects the output to be pooled already: [batch, dim].
	PoolNone Pooling = "none"
)

// Config configures every model kind.
type Config struct {
	// ModelPath is the .onnx file (required).
	ModelPath string
	// TokenizerPath is the tokenizer.json file (required).
	TokenizerPath string
	// LibraryPath overrides $RCPGO_ONNXRUNTIME_LIB.
	LibraryPath string
	// Name is used in the identity (default: the model file name without
	// extension).
	Name string
	// Output is the output tensor to read (default: the model's first).
	Output string
	// MaxLength truncates token sequences (default: the tokenizer's
	// truncation length, else 512).
	MaxLength int
	// BatchLimit caps texts per model run (default 32).
	BatchLimit int
	// Threads is ONNX Runtime's intra-op thread count (default 1; the
	// engine parallelises across requests).
	Threads int
	// QueryPrefix and DocumentPrefix are prepended by kind (e5/BGE style).
	QueryPrefix, DocumentPrefix string
	// Pooling for Encoder (default PoolMean).
	Pooling Pooling
	// NoNormalize keeps raw vectors (Encoder) or raw token rows
	// (MultiEncoder, whose similarity is then "dot").
	NoNormalize bool
	// SkipSpecial drops special tokens ([CLS], [SEP]) from MultiEncoder
	// matrices.
	SkipSpecial bool
}

// model is what every kind shares.
type model struct {
	cfg      Config
	tok      *tokenizer.Tokenizer
	sess     *ort.DynamicAdvancedSession
	inputs   []string // subset of input_ids, attention_mask, token_type_ids, in model order
	output   string
	outShape ort.Shape
	hash     string
}

var knownInputs = map[string]bool{"input_ids": true, "attention_mask": true, "token_type_ids": true}

func open(cfg Config) (*model, error) {
	if cfg.ModelPath == "" || cfg.TokenizerPath == "" {
		return nil, errors.New("ortembed: ModelPath and TokenizerPath are required")
	}
	if err := InitRuntime(cfg.LibraryPath); err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(cfg.TokenizerPath)
	if err != nil {
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	if cfg.MaxLength <= 0 {
		cfg.MaxLength = tok.MaxLength()
		if cfg.MaxLength <= 0 {
			cfg.MaxLength = 512
		}
	}
	tok = tok.WithMaxLength(cfg.MaxLength)
	if cfg.BatchLimit <= 0 {
		cfg.BatchLimit = 32
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 1
	}
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(cfg.ModelPath), filepath.Ext(cfg.ModelPath))
	}
	ins, outs, err := ort.GetInputOutputInfo(cfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("ortembed: read %s: %w", cfg.ModelPath, err)
	}
	m := &model{cfg: cfg, tok: tok}
	for _, in := range ins {
		if !knownInputs[in.Name] {
			return nil, fmt.Errorf("ortembed: model input %q is not one of input_ids, attention_mask, token_type_ids", in.Name)
		}
		if in.DataType != ort.TensorElementDataTypeInt64 {
			return nil, fmt.Errorf("ortembed: model input %q is %v, want int64", in.Name, in.DataType)
		}
		m.inputs = append(m.inputs, in.Name)
	}
	if !slices.Contains(m.inputs, "input_ids") {
		return nil, errors.New("ortembed: model has no input_ids input")
	}
	for _, out := range outs {
		if cfg.Output == "" || out.Name == cfg.Output {
			if out.DataType != ort.TensorElementDataTypeFloat {
				return nil, fmt.Errorf("ortembed: output %q is %v, want float32", out.Name, out.DataType)
			}
			m.output, m.outShape = out.Name, out.Dimensions
			break
		}
	}
	if m.output == "" {
		return nil, fmt.Errorf("ortembed: model has no output %q", cfg.Output)
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(cfg.Threads); err != nil {
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	m.sess, err = ort.NewDynamicAdvancedSession(cfg.ModelPath, m.inputs, []string{m.output}, opts)
	if err != nil {
		return nil, fmt.Errorf("ortembed: load %s: %w", cfg.ModelPath, err)
	}
	f, err := os.Open(cfg.ModelPath)
	if err != nil {
		m.sess.Destroy()
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		m.sess.Destroy()
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	tf, _ := os.ReadFile(cfg.TokenizerPath)
	h.Write(tf)
	m.hash = hex.EncodeToString(h.Sum(nil))[:12]
	return m, nil
}

// Close releases the ONNX Runtime session.
func (m *model) Close() error { return m.sess.Destroy() }

func (m *model) identity(kind string, extra ...string) string {
	parts := append([]string{"onnx-" + kind + ":" + m.cfg.Name, m.hash}, extra...)
	if m.cfg.QueryPrefix != "" || m.cfg.DocumentPrefix != "" {
		h := sha256.Sum256([]byte(m.cfg.QueryPrefix + "\x00" + m.cfg.DocumentPrefix))
		parts = append(parts, "prefix="+hex.EncodeToString(h[:4]))
	}
	parts = append(parts, fmt.Sprintf("len=%d", m.cfg.MaxLength))
	return strings.Join(parts, ":")
}

func (m *model) prefixed(texts []string, kind embed.Kind) []string {
	p := m.cfg.DocumentPrefix
	if kind == embed.KindQuery {
		p = m.cfg.QueryPrefix
	}
	if p == "" {
		return texts
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = p + t
	}
	return out
}

// batchOut is one model run's output.
type batchOut struct {
	data  []float32
	shape ort.Shape
	mask  [][]bool // [b][t]: attended tokens
	spec  [][]bool // [b][t]: special tokens
	lens  []int
	seq   int
}

// run pads encodings into a batch and runs the model.
// runTexts tokenizes texts and runs them as one batch.
func (m *model) runTexts(ctx context.Context, texts []string) (*batchOut, error) {
	encs := make([]tokenizer.Encoding, len(texts))
	for i, t := range texts {
		encs[i] = m.tok.Encode(t)
	}
	return m.run(ctx, encs)
}

func (m *model) run(ctx context.Context, encs []tokenizer.Encoding) (*batchOut, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	b := len(encs)
	seq := 1
	for _, e := range encs {
		seq = max(seq, e.Len())
	}
	ids := make([]int64, b*seq)
	mask := make([]int64, b*seq)
	types := make([]int64, b*seq)
	out := &batchOut{mask: make([][]bool, b), spec: make([][]bool, b), lens: make([]int, b), seq: seq}
	pad := m.tok.PadID()
	for i, e := range encs {
		out.mask[i] = make([]bool, seq)
		out.spec[i] = make([]bool, seq)
		out.lens[i] = e.Len()
		for t := 0; t < seq; t++ {
			if t < e.Len() {
				ids[i*seq+t] = e.IDs[t]
				types[i*seq+t] = e.TypeIDs[t]
				mask[i*seq+t] = 1
				out.mask[i][t] = true
				out.spec[i][t] = e.Special[t]
			} else {
				ids[i*seq+t] = pad
			}
		}
	}
	shape := ort.NewShape(int64(b), int64(seq))
	var values []ort.Value
	defer func() {
		for _, v := range values {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for _, name := range m.inputs {
		var data []int64
		switch name {
		case "input_ids":
			data = ids
		case "attention_mask":
			data = mask
		case "token_type_ids":
			data = types
		}
		t, err := ort.NewTensor(shape, data)
		if err != nil {
			return nil, fmt.Errorf("ortembed: %w", err)
		}
		values = append(values, t)
	}
	outputs := []ort.Value{nil}
	ro, err := ort.NewRunOptions()
	if err != nil {
		return nil, fmt.Errorf("ortembed: %w", err)
	}
	defer ro.Destroy()
	stop := context.AfterFunc(ctx, func() { _ = ro.Terminate() })
	err = m.sess.RunWithOptions(values, outputs, ro)
	stop()
	if outputs[0] != nil {
		defer outputs[0].Destroy()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ortembed: %w", ctx.Err())
		}
		return nil, fmt.Errorf("ortembed: run %s: %w", m.cfg.Name, err)
	}
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, fmt.Errorf("ortembed: output %q is not a float32 tensor", m.output)
	}
	out.shape = t.GetShape().Clone()
	out.data = slices.Clone(t.GetData())
	if len(out.shape) == 0 || out.shape[0] != int64(b) {
		return nil, fmt.Errorf("ortembed: output shape %v for batch %d", out.shape, b)
	}
	return out, nil
}

// batches runs fn over texts in BatchLimit-sized slices.
func (m *model) batches(n int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += m.cfg.BatchLimit {
		if err := fn(lo, min(lo+m.cfg.BatchLimit, n)); err != nil {
			return err
		}
	}
	return nil
}
