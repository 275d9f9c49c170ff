//go:build cgo

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/ortembed"
	"github.com/rcpgo/rcpgo/rcp"
)

// multiEmbedder is what embed/multi needs of a ColBERT reranker.
type multiEmbedder = embed.MultiEmbedder

// openReranker loads the configured local ONNX reranker: a cross-encoder
// (method "cross-encoder") or a ColBERT model scored by MaxSim ("colbert").
// The ONNX Runtime library comes from --onnx-library (rerank.library) or
// $RCPGO_ONNXRUNTIME_LIB.
func openReranker(rc rerankConfig) (embed.Scorer, io.Closer, error) {
	cfg := ortembed.Config{ModelPath: rc.Model, TokenizerPath: rc.Tokenizer, LibraryPath: rc.Library,
		Name: rc.Name, MaxLength: rc.MaxLength}
	switch rc.Method {
	case "", rcp.RerankCrossEncoder:
		ce, err := ortembed.NewCrossEncoder(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("rerank: %w", err)
		}
		return ce, ce, nil
	case rcp.RerankColBERT:
		me, err := ortembed.NewMultiEncoder(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("rerank: %w", err)
		}
		return me, me, nil
	}
	return nil, nil, fmt.Errorf("rerank: method %q is not available with a local ONNX model (cross-encoder, colbert)", rc.Method)
}

// openONNXDense loads a local ONNX bi-encoder (--dense onnx).
func openONNXDense(ctx context.Context, ec embedConfig, lib string) (embed.Provider, io.Closer, error) {
	enc, err := ortembed.NewEncoder(ctx, ortembed.Config{ModelPath: ec.OnnxModel, TokenizerPath: ec.Tokenizer,
		LibraryPath: lib, Name: ec.Name, MaxLength: ec.MaxLength, BatchLimit: ec.BatchLimit,
		QueryPrefix: ec.QueryPrefix, DocumentPrefix: ec.DocumentPrefix, Pooling: ortembed.Pooling(ec.Pooling)})
	if err != nil {
		return nil, nil, fmt.Errorf("dense onnx: %w", err)
	}
	return enc, enc, nil
}

// openONNXMulti loads a late-interaction model for embed/multi.
func openONNXMulti(mc onnxModelConfig, lib string) (embed.MultiEmbedder, io.Closer, error) {
	me, err := ortembed.NewMultiEncoder(ortembed.Config{ModelPath: mc.Model, TokenizerPath: mc.Tokenizer,
		LibraryPath: lib, Name: mc.Name, MaxLength: mc.MaxLength})
	if err != nil {
		return nil, nil, fmt.Errorf("multi-vector model: %w", err)
	}
	return me, me, nil
}

// openONNXSparse loads a SPLADE model for embed/sparse.
func openONNXSparse(sc onnxModelConfig, lib string) (embed.SparseEmbedder, io.Closer, error) {
	se, err := ortembed.NewSparseEncoder(ortembed.Config{ModelPath: sc.Model, TokenizerPath: sc.Tokenizer,
		LibraryPath: lib, Name: sc.Name, MaxLength: sc.MaxLength})
	if err != nil {
		return nil, nil, fmt.Errorf("sparse model: %w", err)
	}
	return se, se, nil
}
