//go:build cgo

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/onnxtest"
)

// onnxRuntime returns the ONNX Runtime library or stops the test (see
// internal/testutil/onnxtest).
func onnxRuntime(t *testing.T) string { return onnxtest.Library(t) }

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

// TestONNXProviders starts rcpd with every ONNX provider of the fixtures
// (dense bi-encoder, SPLADE, ColBERT for embed/multi and rerank) and checks
// the capability set and each method end to end.
func TestONNXProviders(t *testing.T) {
	lib := onnxRuntime(t)
	fx := func(name string) string {
		return filepath.Join("..", "..", "engine", "embed", "ortembed", "testdata", name)
	}
	tok := fx("tokenizer.json")
	t.Run("dense+sparse+multi", func(t *testing.T) {
		s := startRcpd(t, "--data", t.TempDir(), "--demo", "--onnx-library", lib,
			"--dense", "onnx", "--embed-model-onnx", fx("encoder.onnx"), "--embed-tokenizer", tok, "--embed-pooling", "mean",
			"--sparse-model", fx("splade.onnx"), "--sparse-tokenizer", tok,
			"--multi-model", fx("colbert.onnx"), "--multi-tokenizer", tok)
		caps := s.capabilities()
		if got, want := capNames(caps), []string{"citations", "embed", "feedback", "filter", "graph", "index", "log", "memory", "multiVector", "pagination", "retrieve", "session", "sparseEmbed", "streaming", "transform"}; !slices.Equal(got, want) {
			t.Fatalf("capabilities %v, want %v", got, want)
		}
		if id := caps["embed"].(map[string]any)["identity"].(string); !strings.HasPrefix(id, "onnx-") || !strings.Contains(id, "encoder") {
			t.Errorf("embed.identity %q", id)
		}
		if id := caps["sparseEmbed"].(map[string]any)["identity"].(string); !strings.Contains(id, "splade") {
			t.Errorf("sparseEmbed.identity %q", id)
		}
		mv := caps["multiVector"].(map[string]any)
		if !strings.Contains(mv["identity"].(string), "colbert") || mv["dimension"].(float64) <= 0 {
			t.Errorf("multiVector %v", mv)
		}
		r := s.call("retrieve", `{"query":"BM25 term frequency","k":3,"mode":"hybrid"}`)
		if len(r["hits"].([]any)) != 3 {
			t.Fatalf("hybrid retrieve %v", r)
		}
		sp := s.call("embed/sparse", `{"texts":["bm25 ranking","graphs"],"kind":"query"}`)["sparse"].([]any)
		if len(sp) != 2 || len(sp[0].(map[string]any)["indices"].([]any)) == 0 {
			t.Fatalf("embed/sparse %v", sp)
		}
		mm := s.call("embed/multi", `{"inputs":["bm25 ranking"],"kind":"query"}`)
		if m := mm["matrices"].([]any); len(m) != 1 || len(m[0].([]any)) == 0 {
			t.Fatalf("embed/multi %v", mm)
		}
		mb := s.call("embed/multi", `{"inputs":["bm25"],"encoding":"f32-base64"}`)
		if mb["encoding"] != "f32-base64" {
			t.Fatalf("embed/multi f32-base64 %v", mb)
		}
		if _, rerr := s.try("rerank", `{"query":"x","passages":["y"]}`); rerr == nil || rerr["code"].(float64) != -32003 {
			t.Errorf("rerank without a reranker: %v", rerr)
		}
	})
	t.Run("colbert rerank", func(t *testing.T) {
		s := startRcpd(t, "--data", t.TempDir(), "--dense", "none", "--onnx-library", lib,
			"--rerank", "onnx-colbert", "--rerank-model", fx("colbert.onnx"), "--rerank-tokenizer", tok)
		caps := s.capabilities()
		if got, want := capNames(caps), []string{"citations", "feedback", "index", "log", "multiVector", "pagination", "rerank", "retrieve", "session", "streaming", "transform"}; !slices.Equal(got, want) {
			t.Fatalf("capabilities %v, want %v", got, want)
		}
		if m := fmt.Sprint(caps["rerank"].(map[string]any)["methods"]); m != "[colbert]" {
			t.Errorf("rerank.methods %s", m)
		}
		rr := s.call("rerank", `{"query":"term weighting","passages":["bm25 weights terms","graphs of entities"]}`)
		if len(rr["scores"].([]any)) != 2 {
			t.Fatalf("rerank %v", rr)
		}
	})
}
