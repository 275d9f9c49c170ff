package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/embed"
)

// fakeVec is the deterministic "embedding" the fake server returns.
func fakeVec(text string, dim int) []float64 {
	v := make([]float64, dim)
	for i, r := range text {
		v[(i+int(r))%dim] += float64(r%7) + 1
	}
	return v
}

type fakeServer struct {
	t        *testing.T
	dim      int
	mu       sync.Mutex
	requests []map[string]json.RawMessage
	inputs   [][]string
	auth     []string
	// fail returns a non-zero status for the n-th request (0-based).
	fail    func(n int, w http.ResponseWriter) bool
	base64  bool
	shuffle bool
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", 404)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	body, _ := io.ReadAll(r.Body)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Errorf("request is not a JSON object: %s", body)
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	json.Unmarshal(body, &req)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, raw)
	f.inputs = append(f.inputs, req.Input)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if f.fail != nil && f.fail(n, w) {
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	var data []item
	for i, in := range req.Input {
		v := fakeVec(in, f.dim)
		var emb any = v
		if f.base64 {
			buf := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(float32(x)))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		data = append(data, item{"embedding", i, emb})
	}
	if f.shuffle {
		slices.Reverse(data)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
}

func newFake(t *testing.T, dim int) (*fakeServer, *httptest.Server) {
	f := &fakeServer{t: t, dim: dim}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func fastRetry(base string) ClientConfig {
	return ClientConfig{BaseURL: base + "/v1", APIKeyEnv: "RCPGO_TEST_KEY", InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}
}

func TestEmbedderWireFormatAndBatching(t *testing.T) {
	t.Setenv("RCPGO_TEST_KEY", "sk-test")
	f, srv := newFake(t, 8)
	f.shuffle = true
	ctx := context.Background()
	e, err := NewEmbedder(ctx, EmbedderConfig{ClientConfig: fastRetry(srv.URL), Model: "nomic-embed-text",
		BatchLimit: 2, EncodingFormat: "float", QueryPrefix: "search_query: ", DocumentPrefix: "search_document: "})
	if err != nil {
		t.Fatal(err)
	}
	if e.Dimension() != 8 || len(f.requests) != 1 {
		t.Fatalf("dimension %d after %d probe requests", e.Dimension(), len(f.requests))
	}
	if !strings.HasPrefix(e.Identity(), "openai:nomic-embed-text@127.0.0.1:") || !strings.Contains(e.Identity(), ":dim=8:prefix=") {
		t.Errorf("identity %q", e.Identity())
	}
	texts := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	vs, err := e.Embed(ctx, texts, embed.KindDocument)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 4 {
		t.Fatalf("%d requests, want probe + 3 batches", len(f.requests))
	}
	for _, raw := range f.requests {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range raw {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, []string{"encoding_format", "input", "model"}) {
			t.Errorf("request keys %v", keys)
		}
		if string(raw["model"]) != `"nomic-embed-text"` || string(raw["encoding_format"]) != `"float"` {
			t.Errorf("model %s encoding_format %s", raw["model"], raw["encoding_format"])
		}
	}
	wantBatches := [][]string{{"search_document: alpha", "search_document: beta"}, {"search_document: gamma", "search_document: delta"}, {"search_document: epsilon"}}
	for i, want := range wantBatches {
		if !slices.Equal(f.inputs[i+1], want) {
			t.Errorf("batch %d = %q, want %q", i, f.inputs[i+1], want)
		}
	}
	for _, a := range f.auth {
		if a != "Bearer sk-test" {
			t.Errorf("Authorization %q", a)
		}
	}
	for i, v := range vs {
		want := fakeVec("search_document: "+texts[i], 8)
		embed.Normalize(v) // already unit: idempotent
		var n float64
		for _, x := range want {
			n += x * x
		}
		for j := range v {
			if math.Abs(float64(v[j])-want[j]/math.Sqrt(n)) > 1e-6 {
				t.Fatalf("vector %d out of order or wrong: %v", i, v)
			}
		}
	}
	q, err := e.Embed(ctx, []string{"what"}, embed.KindQuery)
	if err != nil || len(q) != 1 {
		t.Fatal(err)
	}
	if got := f.inputs[len(f.inputs)-1]; !slices.Equal(got, []string{"search_query: what"}) {
		t.Errorf("query input %q", got)
	}
}

func TestEmbedderOmitsOptionalFields(t *testing.T) {
	t.Setenv("RCPGO_TEST_KEY", "")
	f, srv := newFake(t, 4)
	e, err := NewEmbedder(context.Background(), EmbedderConfig{ClientConfig: fastRetry(srv.URL), Model: "m", Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 0 {
		t.Fatal("known dimension must not probe")
	}
	if _, err := e.Embed(context.Background(), []string{"x"}, embed.KindDocument); err != nil {
		t.Fatal(err)
	}
	if len(f.requests[0]) != 2 || f.auth[0] != "" {
		t.Errorf("request %v auth %q", f.requests[0], f.auth[0])
	}
}

func TestEmbedderBase64(t *testing.T) {
	f, srv := newFake(t, 6)
	f.base64 = true
	e, err := NewEmbedder(context.Background(), EmbedderConfig{ClientConfig: fastRetry(srv.URL), Model: "m", EncodingFormat: "base64", NoNormalize: true})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.Embed(context.Background(), []string{"hello"}, embed.KindDocument)
	if err != nil {
		t.Fatal(err)
	}
	want := fakeVec("hello", 6)
	for j := range want {
		if float64(vs[0][j]) != want[j] {
			t.Fatalf("got %v want %v", vs[0], want)
		}
	}
	if string(f.requests[0]["encoding_format"]) != `"base64"` || e.Normalized() {
		t.Error("base64 not requested or normalized wrongly reported")
	}
}

func TestEmbedderRetries(t *testing.T) {
	tests := []struct {
		name     string
		fail     func(n int, w http.ResponseWriter) bool
		retries  int
		wantErr  bool
		wantReqs int
		status   int
	}{
		{"429 then ok", func(n int, w http.ResponseWriter) bool {
			if n == 0 {
				w.Header().Set("Retry-After", "0")
				http.Error(w, `{"error":"rate limited"}`, http.StatusTooManyRequests)
				return true
			}
			return false
		}, 3, false, 2, 0},
		{"503 twice then ok", func(n int, w http.ResponseWriter) bool {
			if n < 2 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return true
			}
			return false
		}, 3, false, 3, 0},
		{"400 is final", func(n int, w http.ResponseWriter) bool {
			http.Error(w, `{"error":{"message":"bad model"}}`, 400)
			return true
		}, 3, true, 1, 400},
		{"retries exhausted", func(n int, w http.ResponseWriter) bool {
			http.Error(w, "down", 500)
			return true
		}, 2, true, 3, 500},
		{"malformed body", func(n int, w http.ResponseWriter) bool {
			io.WriteString(w, `{"data":[`)
			return true
		}, 3, true, 1, 0},
		{"count mismatch", func(n int, w http.ResponseWriter) bool {
			io.WriteString(w, `{"data":[]}`)
			return true
		}, 3, true, 1, 0},
		{"duplicate index", func(n int, w http.ResponseWriter) bool {
			io.WriteString(w, `{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":0,"embedding":[1,2,3,4]}]}`)
			return true
		}, 3, true, 1, 0},
		{"wrong dimension", func(n int, w http.ResponseWriter) bool {
			io.WriteString(w, `{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,2,3]}]}`)
			return true
		}, 3, true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, 4)
			f.fail = tt.fail
			cfg := fastRetry(srv.URL)
			cfg.MaxRetries = tt.retries
			e, err := NewEmbedder(context.Background(), EmbedderConfig{ClientConfig: cfg, Model: "m", Dimension: 4})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(context.Background(), []string{"a", "b"}, embed.KindDocument)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if len(f.requests) != tt.wantReqs {
				t.Errorf("%d requests, want %d", len(f.requests), tt.wantReqs)
			}
			var se *StatusError
			if tt.status != 0 && (!errors.As(err, &se) || se.StatusCode != tt.status) {
				t.Errorf("err %v, want status %d", err, tt.status)
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	f, srv := newFake(t, 4)
	f.fail = func(n int, w http.ResponseWriter) bool {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
			return true
		}
		return false
	}
	cfg := fastRetry(srv.URL)
	cfg.MaxBackoff = 5 * time.Second
	e, _ := NewEmbedder(context.Background(), EmbedderConfig{ClientConfig: cfg, Model: "m", Dimension: 4})
	start := time.Now()
	if _, err := e.Embed(context.Background(), []string{"a"}, embed.KindDocument); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("retried after %v, Retry-After was 1s", d)
	}
	// The context bounds the wait.
	var calls atomic.Int32
	f.fail = func(n int, w http.ResponseWriter) bool {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(503)
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := e.Embed(ctx, []string{"a"}, embed.KindDocument)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}

func TestRetryAfterParse(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"2", 2 * time.Second}, {"1.5", 1500 * time.Millisecond}, {"junk", 0}, {"-3", 0},
		{time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.in); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	future := time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)
	if got := retryAfter(future); got < 8*time.Second || got > 11*time.Second {
		t.Errorf("HTTP-date: %v", got)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []EmbedderConfig{
		{Model: "m"},
		{ClientConfig: ClientConfig{BaseURL: "http://x"}},
		{ClientConfig: ClientConfig{BaseURL: "http://x"}, Model: "m", EncodingFormat: "int8"},
		{ClientConfig: ClientConfig{BaseURL: "http://x"}, Model: "m", Dimension: 3, Dimensions: 4},
	} {
		if _, err := NewEmbedder(ctx, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

func FuzzEmbeddingValue(f *testing.F) {
	f.Add([]byte(`[1,2.5,-3e2]`))
	f.Add([]byte(`"AACAPwAAAEA="`))
	f.Add([]byte(`"AAA="`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v embeddingValue
		if err := v.UnmarshalJSON(b); err != nil {
			return
		}
		var resp embeddingsResponse
		json.Unmarshal([]byte(fmt.Sprintf(`{"data":[{"index":0,"embedding":%s}]}`, b)), &resp)
	})
}
