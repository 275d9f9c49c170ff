//go:build !cgo

package main

import (
	"context"
	"errors"
	"io"

	"github.com/rcpgo/rcpgo/engine/embed"
)

type multiEmbedder = embed.MultiEmbedder

var errNoCgo = errors.New("this rcpd was built without cgo, so ONNX models (ONNX Runtime) are unavailable")

func openReranker(rerankConfig) (embed.Scorer, io.Closer, error) { return nil, nil, errNoCgo }

func openONNXDense(context.Context, embedConfig, string) (embed.Provider, io.Closer, error) {
	return nil, nil, errNoCgo
}

func openONNXMulti(onnxModelConfig, string) (embed.MultiEmbedder, io.Closer, error) {
	return nil, nil, errNoCgo
}

func openONNXSparse(onnxModelConfig, string) (embed.SparseEmbedder, io.Closer, error) {
	return nil, nil, errNoCgo
}
