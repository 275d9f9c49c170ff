//go:build cgo

package main

import (
	"fmt"
	"io"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/ortembed"
	"github.com/rcpgo/rcpgo/rcp"
)

// openReranker loads the configured local ONNX reranker: a cross-encoder
// (method "cross-encoder") or a ColBERT model scored by MaxSim ("colbert").
// The ONNX Runtime library comes from rerank.library or
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
