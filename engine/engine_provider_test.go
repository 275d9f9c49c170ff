package engine

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/rcp"
)

// hashProvider is a real (crude) dense encoder: a hashed bag of lower-cased
// words, L2-normalised. It counts the texts it embeds.
type hashProvider struct {
	id    string
	dim   int
	calls atomic.Int64
}

func (h *hashProvider) Embed(_ context.Context, texts []string, _ embed.Kind) ([][]float32, error) {
	h.calls.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, h.dim)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
			f := fnv.New32a()
			f.Write([]byte(w))
			v[f.Sum32()%uint32(h.dim)]++
		}
		out[i] = embed.Normalize(v)
	}
	return out, nil
}
func (h *hashProvider) Dimension() int   { return h.dim }
func (h *hashProvider) Identity() string { return h.id }
func (h *hashProvider) Normalized() bool { return true }
func (h *hashProvider) BatchLimit() int  { return 8 }

func TestOpenDenseConfig(t *testing.T) {
	p := &hashProvider{id: "hash", dim: 8}
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"lsa", Config{Dense: DenseLSA}, true},
		{"none", Config{Dense: DenseNone}, true},
		{"openai", Config{Dense: DenseOpenAI, DenseProvider: p}, true},
		{"onnx", Config{Dense: DenseONNX, DenseProvider: p}, true},
		{"openai without provider", Config{Dense: DenseOpenAI}, false},
		{"provider with lsa", Config{Dense: DenseLSA, DenseProvider: p}, false},
		{"provider with default", Config{DenseProvider: p}, false},
		{"zero dimension", Config{Dense: DenseONNX, DenseProvider: &hashProvider{id: "z"}}, false},
		{"unknown", Config{Dense: "word2vec"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dir = t.TempDir()
			e, err := Open(context.Background(), tc.cfg)
			if err == nil {
				e.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("Open: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestExternalDenseProvider: an external encoder serves dense/hybrid and
// embed under its identity; its vectors persist with the identity, and a
// changed identity re-embeds the corpus at Open.
func TestExternalDenseProvider(t *testing.T) {
	dir := t.TempDir()
	open := func(p *hashProvider) *Engine {
		t.Helper()
		e, err := Open(context.Background(), Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: p, Fields: demoFields})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a := &hashProvider{id: "hash-a", dim: 64}
	e := open(a)
	docs := demoPreload(t)
	add := rcp.IndexAddParams{}
	for _, d := range docs {
		add.Documents = append(add.Documents, rcp.Document{ID: d.ID, Text: d.Title + "\n\n" + d.Text, Meta: d.Meta})
	}
	if _, rerr := call(t, e, rcp.MethodIndexAdd, add); rerr != nil {
		t.Fatal(rerr)
	}
	settle(t, e)
	n := int64(len(docs))
	if got := a.calls.Load(); got != n {
		t.Fatalf("embedded %d texts, want %d", got, n)
	}
	caps := e.Describe(context.Background()).Capabilities
	if caps.Embed == nil || caps.Embed.Identity != "hash-a" || caps.Embed.Dimension != 64 || len(caps.Retrieve.Modes) != 3 {
		t.Fatalf("capabilities %+v %+v", caps.Embed, caps.Retrieve)
	}
	res, rerr := call(t, e, rcp.MethodRetrieve, `{"query":"BM25 term frequency saturation","k":3,"mode":"dense"}`)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var r rcp.RetrieveResult
	if err := json.Unmarshal(res, &r); err != nil || len(r.Hits) == 0 {
		t.Fatalf("dense retrieve: %s %v", res, err)
	}
	// Re-adding unchanged documents does not call the encoder.
	n = a.calls.Load() // + the query embedded above
	if _, rerr := call(t, e, rcp.MethodIndexAdd, add); rerr != nil {
		t.Fatal(rerr)
	}
	settle(t, e)
	if got := a.calls.Load(); got != n {
		t.Fatalf("re-add embedded %d texts, want 0", got-n)
	}
	e.Close()

	a2 := &hashProvider{id: "hash-a", dim: 64}
	e = open(a2)
	if got := a2.calls.Load(); got != 0 {
		t.Fatalf("reopen with the same identity embedded %d texts", got)
	}
	res2, _ := call(t, e, rcp.MethodRetrieve, `{"query":"BM25 term frequency saturation","k":3,"mode":"dense"}`)
	var r2 rcp.RetrieveResult
	json.Unmarshal(res2, &r2)
	if len(r2.Hits) != len(r.Hits) || r2.Hits[0].ID.String() != r.Hits[0].ID.String() {
		t.Fatalf("stored vectors rank differently: %s vs %s", res2, res)
	}
	e.Close()

	b := &hashProvider{id: "hash-b", dim: 32}
	e = open(b)
	defer e.Close()
	settle(t, e)
	if got := b.calls.Load(); got != int64(len(docs)) {
		t.Fatalf("identity change embedded %d texts, want %d", got, n)
	}
	if id := e.DenseIdentity(); id != "hash-b" {
		t.Fatalf("identity %q", id)
	}
}

// TestFusionDefaults: a hybrid request without fusion options is served
// with the configured defaults (convex, α DefaultAlpha unless configured).
func TestFusionDefaults(t *testing.T) {
	ids := func(e *Engine, params string) string {
		t.Helper()
		res, rerr := call(t, e, rcp.MethodRetrieve, params)
		if rerr != nil {
			t.Fatal(rerr)
		}
		var r rcp.RetrieveResult
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range r.Hits {
			out = append(out, h.ID.String())
		}
		return strings.Join(out, " ")
	}
	const q = `"query":"ranking documents by term weighting","k":10,"mode":"hybrid"`
	def := newEngine(t, nil)
	if got, want := ids(def, `{`+q+`}`), ids(def, `{`+q+`,"fusion":{"method":"convex","alpha":0.2}}`); got != want {
		t.Fatalf("default hybrid %q, convex α 0.2 %q", got, want)
	}
	rrf := newEngine(t, func(c *Config) { c.Fusion = FusionDefaults{Method: rcp.FusionRRF} })
	if got, want := ids(rrf, `{`+q+`}`), ids(rrf, `{`+q+`,"fusion":{"method":"rrf","rrfK":60}}`); got != want {
		t.Fatalf("configured rrf %q, explicit rrf %q", got, want)
	}
}
