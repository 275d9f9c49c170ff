//go:build !cgo

package main

import (
	"errors"
	"io"

	"github.com/rcpgo/rcpgo/engine/embed"
)

// openReranker needs ONNX Runtime, which needs cgo.
func openReranker(rerankConfig) (embed.Scorer, io.Closer, error) {
	return nil, nil, errors.New("rerank: this rcpd was built without cgo, so ONNX rerankers are unavailable")
}
