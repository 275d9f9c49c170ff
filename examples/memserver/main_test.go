package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/schematest"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

func connect(t *testing.T) *rcp.Client {
	t.Helper()
	c, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(newEngine().router(), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func call(t *testing.T, c *rcp.Client, method string, params any) (json.RawMessage, error) {
	t.Helper()
	var raw json.RawMessage
	err := c.Call(context.Background(), method, params, &raw)
	if err == nil {
		schematest.ValidateResult(t, method, raw)
	}
	return raw, err
}

func TestDescriptionValidates(t *testing.T) {
	c := connect(t)
	b, _ := json.Marshal(c.InitializeResult())
	schematest.ValidateResult(t, rcp.MethodInitialize, b)
	if c.Conformance() != rcp.LevelL2 {
		t.Fatalf("conformance %q", c.Conformance())
	}
}

func TestRetrieve(t *testing.T) {
	c := connect(t)
	tests := []struct {
		name   string
		params string
		code   rcp.Code
		first  string
		n      int
	}{
		{"hybrid", `{"query":"eiffel tower paris","k":2}`, 0, "d1", 2},
		{"sparse", `{"query":"photosynthesis","k":1,"mode":"sparse"}`, 0, "d2", 1},
		{"dense", `{"query":"great wall china","k":1,"mode":"dense"}`, 0, "d3", 1},
		{"k above maxK is clamped", `{"query":"x","k":1000}`, 0, "", len(corpus)},
		{"minScore filters", `{"query":"eiffel","k":5,"mode":"sparse","minScore":0.5}`, 0, "d1", 1},
		{"vectors as JSON", `{"query":"paris","k":1,"includeVectors":true}`, 0, "", 1},
		{"hit vectors in f32-base64 are not advertised", `{"query":"paris","k":1,"includeVectors":true,"encoding":"f32-base64"}`, rcp.CodeOptionUnsupported, "", 0},
		{"negative k", `{"query":"x","k":-5}`, rcp.CodeInvalidParams, "", 0},
		{"funnel violation", `{"query":"x","k":10,"candidateK":2}`, rcp.CodeInvalidParams, "", 0},
		{"missing query", `{"k":1}`, rcp.CodeInvalidParams, "", 0},
		{"unadvertised fusion", `{"query":"x","k":1,"fusion":{"method":"convex"}}`, rcp.CodeOptionUnsupported, "", 0},
		{"unadvertised fusion, strict false", `{"query":"x","k":1,"fusion":{"method":"convex"},"strict":false}`, 0, "", 1},
		{"filter not advertised", `{"query":"x","k":1,"filter":{"field":"a","op":"eq","value":1}}`, rcp.CodeOptionUnsupported, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := call(t, c, rcp.MethodRetrieve, json.RawMessage(tc.params))
			if tc.code != 0 {
				var e *rcp.Error
				if !errors.As(err, &e) || e.Code != tc.code {
					t.Fatalf("err %v, want %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var res rcp.RetrieveResult
			_ = json.Unmarshal(raw, &res)
			if len(res.Hits) != tc.n || (tc.first != "" && res.Hits[0].ID.String() != tc.first) {
				t.Fatalf("hits %s", raw)
			}
			for i := 1; i < len(res.Hits); i++ {
				if res.Hits[i].Score > res.Hits[i-1].Score {
					t.Fatal("not sorted")
				}
			}
		})
	}
}

func TestEmbedAndRerank(t *testing.T) {
	c := connect(t)
	for _, enc := range []string{rcp.EncodingJSON, rcp.EncodingF32Base64} {
		res, err := c.Embed(context.Background(), &rcp.EmbedParams{Inputs: rcp.TextInputs("a b", "c"), Encoding: enc})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		schematest.ValidateResult(t, rcp.MethodEmbed, b)
		vecs, err := vector.DecodeResult(res)
		if err != nil || len(vecs) != 2 || len(vecs[0]) != dim || res.Encoding != enc {
			t.Fatalf("%s: %v %d", enc, err, len(vecs))
		}
	}
	rr, err := c.Rerank(context.Background(), &rcp.RerankParams{Query: rcp.TextQuery("eiffel tower"),
		Passages: rcp.TextInputs("plants", "the eiffel tower"), TopN: ptr(1)})
	if err != nil || rr.Scores[1] != 1 || rr.Order[0] != 1 || len(rr.Order) != 1 {
		t.Fatalf("%v %+v", err, rr)
	}
	_, err = call(t, c, rcp.MethodRerank, json.RawMessage(`{"query":"q","passages":["a"],"method":"llm"}`))
	var e *rcp.Error
	if !errors.As(err, &e) || e.Code != rcp.CodeOptionUnsupported {
		t.Fatalf("err %v", err)
	}
}

func TestProgress(t *testing.T) {
	c := connect(t)
	var stages []string
	ctx := rcp.WithProgress(context.Background(), func(p rcp.ProgressParams) { stages = append(stages, p.Stage) })
	if _, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery("paris"), K: 1}); err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("stages %v", stages)
	}
}

// BenchmarkRetrieve measures pipelined retrieve through the full protocol
// stack in one process.
func BenchmarkRetrieve(b *testing.B) {
	c, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(newEngine().router(), nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := &rcp.RetrieveParams{Query: rcp.TextQuery("eiffel tower paris"), K: 2}
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Retrieve(context.Background(), p); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
