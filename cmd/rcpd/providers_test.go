package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rcpdSession is `rcpd serve --stdio ARGS` run in-process over pipes.
type rcpdSession struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	done chan int
	id   int
}

func startRcpd(t *testing.T, args ...string) *rcpdSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	s := &rcpdSession{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan int, 1)}
	go func() {
		code := dispatch(context.Background(), append([]string{"serve", "--stdio"}, args...), inR, outW, &stderr)
		outW.CloseWithError(fmt.Errorf("rcpd exited with %d: %s", code, stderr.String()))
		s.done <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case code := <-s.done:
			if testing.Verbose() {
				t.Log(stderr.String())
			}
			if code != 0 {
				t.Errorf("rcpd exited with %d: %s", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("rcpd did not stop")
		}
	})
	return s
}

// call sends one request and returns its result (failing on an error).
func (s *rcpdSession) call(method, params string) map[string]any {
	s.t.Helper()
	res, rerr := s.try(method, params)
	if rerr != nil {
		s.t.Fatalf("%s: error %v", method, rerr)
	}
	return res
}

// try sends one request and returns its result or error object.
func (s *rcpdSession) try(method, params string) (map[string]any, map[string]any) {
	s.t.Helper()
	s.id++
	if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params); err != nil {
		s.t.Fatal(err)
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			s.t.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			s.t.Fatalf("%s: %v in %s", method, err, line)
		}
		if _, ok := m["id"]; !ok {
			continue // a notification
		}
		if e, ok := m["error"].(map[string]any); ok {
			return nil, e
		}
		return m["result"].(map[string]any), nil
	}
}

func (s *rcpdSession) capabilities() map[string]any {
	s.t.Helper()
	return s.call("initialize", `{"protocolVersion":1}`)["capabilities"].(map[string]any)
}

func capNames(caps map[string]any) []string {
	var out []string
	for k := range caps {
		if k != "x-rcpgo" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// fakeEmbeddings serves an OpenAI-compatible POST /v1/embeddings: a 32-bit
// hashed bag of lower-cased words (a real, if crude, text encoder).
func fakeEmbeddings(t *testing.T, dim int) (*httptest.Server, *atomic.Int64) {
	var inputs atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "hash-embed" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		inputs.Add(int64(len(req.Input)))
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Data []item `json:"data"`
		}{}
		for i, text := range req.Input {
			v := make([]float32, dim)
			for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
				h := fnv.New32a()
				h.Write([]byte(w))
				v[h.Sum32()%uint32(dim)]++
			}
			resp.Data = append(resp.Data, item{Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &inputs
}

// fakeChat serves an OpenAI-compatible POST /v1/chat/completions grading
// each passage by the number of query words it contains (capped at 10).
func fakeChat(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		user := req.Messages[1].Content
		reply := func(content string) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}}}})
		}
		if strings.Contains(req.Messages[0].Content, "You rewrite search queries") { // query/transform
			if strings.Contains(req.Messages[0].Content, `"passage"`) {
				reply(`{"passage":"BM25 saturates term frequency with k1."}`)
			} else {
				reply(`{"queries":["bm25 term frequency","okapi weighting"]}`)
			}
			return
		}
		var query string
		if m := queryRE.FindStringSubmatch(user); m != nil {
			query = m[1]
		}
		var passages []string
		for _, m := range passageRE.FindAllStringSubmatch(user, -1) {
			passages = append(passages, m[1])
		}
		scores := make([]float64, len(passages))
		for i, p := range passages {
			for _, w := range strings.Fields(strings.ToLower(query)) {
				if strings.Contains(strings.ToLower(p), w) {
					scores[i]++
				}
			}
			scores[i] = math.Min(scores[i], 10)
		}
		b, _ := json.Marshal(map[string]any{"scores": scores})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(b)}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

var (
	queryRE   = regexp.MustCompile(`(?s)<query-[0-9a-f]+>\n(.*?)\n</query-`)
	passageRE = regexp.MustCompile(`(?s)<passage-[0-9a-f]+ id="\d+">\n(.*?)\n</passage-`)
)

// TestProviderCapabilities starts rcpd with each provider configuration
// and checks the initialize capability set against docs/rcpd.md.
func TestProviderCapabilities(t *testing.T) {
	t.Setenv("TEST_EMBED_KEY", "test-key")
	emb, _ := fakeEmbeddings(t, 32)
	chat := fakeChat(t)
	base := []string{"citations", "feedback", "index", "log", "pagination", "retrieve", "session", "streaming", "transform"}
	withFilter := append(slices.Clone(base), "filter", "graph", "memory") // --demo turns the graph on
	sort.Strings(withFilter)
	withGraph := sorted(append(slices.Clone(base), "graph", "memory"))
	cases := []struct {
		name     string
		args     []string
		caps     []string
		modes    []string
		identity string // prefix of embed.identity
		rerank   string
		check    func(t *testing.T, s *rcpdSession)
	}{
		{name: "none", args: []string{"--dense", "none"}, caps: base, modes: []string{"sparse"}},
		{name: "none demo", args: []string{"--dense", "none", "--demo"}, caps: withFilter, modes: []string{"sparse"}},
		{name: "lsa below minFitDocs", args: nil, caps: base, modes: []string{"sparse"}},
		{name: "graph", args: []string{"--dense", "none", "--graph"}, caps: withGraph, modes: []string{"sparse"}},
		{name: "lsa demo", args: []string{"--demo"}, caps: sorted(append(slices.Clone(withFilter), "embed")),
			modes: []string{"dense", "sparse", "hybrid"}, identity: "lsa-"},
		{name: "openai", args: []string{"--dense", "openai", "--embed-url", emb.URL + "/v1", "--embed-model", "hash-embed",
			"--embed-api-key-env", "TEST_EMBED_KEY", "--embed-query-prefix", "query: "},
			caps: sorted(append(slices.Clone(base), "embed")), modes: []string{"dense", "sparse", "hybrid"},
			identity: "openai:hash-embed@" + strings.TrimPrefix(emb.URL, "http://") + ":dim=32:prefix=",
			check: func(t *testing.T, s *rcpdSession) {
				s.call("index/add", `{"documents":[{"id":"a","text":"graphs of entities and relations"},{"id":"b","text":"bm25 saturates term frequency"}]}`)
				// index/add does not wait for embedding: poll until the
				// writes are embedded (usage.notes says while they are not).
				var r map[string]any
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					r = s.call("retrieve", `{"query":"term frequency","k":1,"mode":"dense"}`)
					if notes := fmt.Sprint(r["usage"].(map[string]any)["notes"]); !strings.Contains(notes, "not yet embedded") || time.Now().After(deadline) {
						break
					}
				}
				if hits := r["hits"].([]any); len(hits) != 1 || hits[0].(map[string]any)["id"] != "b" {
					t.Fatalf("dense retrieve %v", r)
				}
				e := s.call("embed", `{"inputs":["x y"],"kind":"query"}`)
				if e["dimension"].(float64) != 32 {
					t.Fatalf("embed %v", e)
				}
			}},
		{name: "llm rerank", args: []string{"--dense", "none", "--demo", "--rerank", "llm", "--llm-url", chat.URL + "/v1", "--llm-model", "grader"},
			caps: sorted(append(slices.Clone(withFilter), "rerank")), modes: []string{"sparse"}, rerank: "llm",
			check: func(t *testing.T, s *rcpdSession) {
				r := s.call("rerank", `{"query":"term frequency","passages":["graphs","bm25 term frequency","term"]}`)
				if fmt.Sprint(r["order"]) != "[1 2 0]" {
					t.Fatalf("rerank %v", r)
				}
				res := s.call("retrieve", `{"query":"BM25 term frequency saturation","k":2,"rerank":{"method":"llm","topN":5}}`)
				if res["usage"].(map[string]any)["reranked"].(float64) != 5 {
					t.Fatalf("retrieve %v", res)
				}
				h := s.call("query/transform", `{"query":"what does k1 do in bm25","method":"hyde"}`)
				if h["hypothetical"] != "BM25 saturates term frequency with k1." {
					t.Fatalf("hyde %v", h)
				}
				m := s.call("query/transform", `{"query":"what does k1 do in bm25","method":"multi-query","n":2}`)
				if fmt.Sprint(m["queries"]) != "[bm25 term frequency okapi weighting]" {
					t.Fatalf("llm multi-query %v", m)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startRcpd(t, append([]string{"--data", t.TempDir()}, tc.args...)...)
			caps := s.capabilities()
			if got := capNames(caps); !slices.Equal(got, tc.caps) {
				t.Fatalf("capabilities %v, want %v", got, tc.caps)
			}
			ret := caps["retrieve"].(map[string]any)
			if got := fmt.Sprint(ret["modes"]); got != fmt.Sprint(tc.modes) {
				t.Errorf("modes %s, want %v", got, tc.modes)
			}
			if tc.identity != "" {
				if id, _ := caps["embed"].(map[string]any)["identity"].(string); !strings.HasPrefix(id, tc.identity) {
					t.Errorf("embed.identity %q, want prefix %q", id, tc.identity)
				}
			}
			// transform serves hyde exactly when a chat model is configured.
			wantTransform := "[rewrite multi-query decompose step-back]"
			if slices.Contains(tc.args, "--llm-url") {
				wantTransform = "[rewrite hyde multi-query decompose step-back]"
			}
			if got := fmt.Sprint(caps["transform"].(map[string]any)["methods"]); got != wantTransform {
				t.Errorf("transform.methods %s, want %s", got, wantTransform)
			}
			if tc.rerank != "" {
				if m := fmt.Sprint(caps["rerank"].(map[string]any)["methods"]); m != "["+tc.rerank+"]" || ret["rerankBuiltin"] != true {
					t.Errorf("rerank %v", caps["rerank"])
				}
			}
			for _, m := range []string{"embed/multi", "embed/sparse"} {
				if _, rerr := s.try(m, `{"texts":["x"],"inputs":["x"]}`); rerr == nil || rerr["code"].(float64) != -32003 {
					t.Errorf("%s: %v, want -32003", m, rerr)
				}
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func sorted(s []string) []string { sort.Strings(s); return s }

// TestOpenAIVectorsPersist: vectors of an external encoder are stored with
// its identity; a restart embeds nothing, a changed identity re-embeds all.
func TestOpenAIVectorsPersist(t *testing.T) {
	t.Setenv("TEST_EMBED_KEY", "test-key")
	emb, inputs := fakeEmbeddings(t, 16)
	dir := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"--data", dir, "--on-locked", "fail", "--dense", "openai", "--embed-url", emb.URL + "/v1",
			"--embed-model", "hash-embed", "--embed-api-key-env", "TEST_EMBED_KEY", "--embed-dimension", "16"}, extra...)
	}
	// run starts rcpd, re-adds the documents and stops it once the encoder
	// has seen want inputs in all (the re-embedding after an identity
	// change runs in the background, and shutdown abandons it), or after a
	// minute.
	run := func(want int64, extra ...string) {
		t.Run(strings.Join(extra, " "), func(t *testing.T) {
			s := startRcpd(t, args(extra...)...)
			s.capabilities()
			s.call("index/add", `{"documents":[{"id":"a","text":"alpha beta"},{"id":"b","text":"gamma delta"},{"id":"c","text":"alpha gamma"}]}`)
			for deadline := time.Now().Add(time.Minute); inputs.Load() < want && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			s.call("shutdown", `{}`)
		})
	}
	run(3)
	if n := inputs.Load(); n != 3 {
		t.Fatalf("first start embedded %d inputs, want 3", n)
	}
	run(3) // same identity, same texts (re-adding identical documents changes nothing)
	if n := inputs.Load(); n != 3 {
		t.Fatalf("restart embedded %d inputs, want 0", n-3)
	}
	run(6, "--embed-document-prefix", "passage: ") // new identity
	if n := inputs.Load(); n != 6 {
		t.Fatalf("identity change embedded %d inputs, want 3", n-3)
	}
}

func TestProviderConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dense", "openai"}, "--embed-url"},
		{[]string{"--dense", "onnx"}, "--embed-model-onnx"},
		{[]string{"--dense", "bogus"}, "unknown dense provider"},
		{[]string{"--rerank", "llm"}, "--llm-url"},
		{[]string{"--rerank", "onnx-colbert"}, "--rerank-model"},
		{[]string{"--rerank", "magic"}, "want onnx-cross-encoder"},
		{[]string{"--embed-url", "http://x/v1"}, "--dense is \"lsa\""},
		{[]string{"--multi-model", "m.onnx"}, "--multi-tokenizer"},
	} {
		var stderr strings.Builder
		code := dispatch(context.Background(), append([]string{"serve", "--stdio", "--data", t.TempDir()}, tc.args...), strings.NewReader(""), io.Discard, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
