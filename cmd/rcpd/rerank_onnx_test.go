//go:build cgo

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// onnxRuntime finds libonnxruntime: $RCPGO_ONNXRUNTIME_LIB, else the cache
// scripts/fetch-onnxruntime.sh fills.
func onnxRuntime(t *testing.T) string {
	if p := os.Getenv("RCPGO_ONNXRUNTIME_LIB"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	m, _ := filepath.Glob(filepath.Join(home, ".cache", "rcpgo", "onnxruntime", "*", "libonnxruntime.so*"))
	if len(m) == 0 {
		t.Skip("ONNX Runtime not installed (scripts/fetch-onnxruntime.sh)")
	}
	return m[0]
}

// TestServeWithONNXReranker serves the demo corpus with the tiny fixture
// cross-encoder of engine/embed/ortembed (a real ONNX forward pass; its
// weights are synthetic, so only the contract is checked, not quality).
func TestServeWithONNXReranker(t *testing.T) {
	lib := onnxRuntime(t)
	fixtures := filepath.Join("..", "..", "engine", "embed", "ortembed", "testdata")
	cfgPath := filepath.Join(t.TempDir(), "rcpd.json")
	cfg, _ := json.Marshal(map[string]any{"rerank": map[string]any{"model": filepath.Join(fixtures, "cross.onnx"),
		"tokenizer": filepath.Join(fixtures, "tokenizer.json"), "library": lib, "maxCandidates": 30}})
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(context.Background(), serveFlags{stdio: true, demo: true, data: t.TempDir(), config: cfgPath}, inR, outW, io.Discard)
		outW.Close()
	}()
	rd := bufio.NewReader(outR)
	send := func(s string) map[string]any {
		t.Helper()
		io.WriteString(inW, s+"\n")
		line, err := rd.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(line, &m)
		if m["error"] != nil {
			t.Fatalf("%s", line)
		}
		return m["result"].(map[string]any)
	}
	caps := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)["capabilities"].(map[string]any)
	if caps["rerank"] == nil || caps["retrieve"].(map[string]any)["rerankBuiltin"] != true {
		t.Fatalf("capabilities %v", caps)
	}
	rr := send(`{"jsonrpc":"2.0","id":2,"method":"rerank","params":{"query":"term weighting","passages":["bm25 weights terms","graphs of entities"],"topN":1}}`)
	if len(rr["scores"].([]any)) != 2 || len(rr["order"].([]any)) != 1 {
		t.Fatalf("rerank %v", rr)
	}
	res := send(`{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"ranking documents","k":3,"rerank":{"method":"cross-encoder","topN":10}}}`)
	if res["usage"].(map[string]any)["reranked"].(float64) != 10 || len(res["hits"].([]any)) != 3 {
		t.Fatalf("retrieve %v", res)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}
