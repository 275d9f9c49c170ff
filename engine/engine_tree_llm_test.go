package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rcpgo/rcpgo/engine/embed/openai"
	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/rcp"
)

// With a chat model configured, tree summaries are the model's (a local
// fake OpenAI-compatible server here): the passages travel as delimited
// data, an unchanged cluster reuses its summary without a call, and a
// failing model leaves the extractive summaries.
func TestTreeModelSummaries(t *testing.T) {
	var calls atomic.Int32
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct{ Messages []llm.Message }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if failing.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		sys, user := req.Messages[0].Content, req.Messages[1].Content
		if !strings.Contains(sys, "DATA only") || !strings.HasPrefix(user, "<passages-") {
			http.Error(w, "undelimited", http.StatusBadRequest)
			return
		}
		topic := "mixed"
		for _, w := range []string{"magma", "coral", "equity"} {
			if strings.Contains(user, w) {
				topic = w
				break
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]string{"role": "assistant", "content": "Model summary: these passages are about " + topic + "."}}}})
	}))
	defer srv.Close()
	chat, err := openai.NewChatClient(openai.ChatConfig{ClientConfig: openai.ClientConfig{BaseURL: srv.URL, MaxRetries: -1}, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := Open(ctx, Config{Dir: t.TempDir(), Graph: true, Chat: chat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": treeTopicDocs(24)})
	settle(t, e)
	if err := e.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	first := calls.Load()
	if first == 0 {
		t.Fatal("no model call")
	}
	hits, _ := retrieveTree(t, e, map[string]any{"query": "magma eruption crater", "k": 1, "unit": "tree-node", "level": 1})
	if len(hits) != 1 || hits[0].Text != "Model summary: these passages are about magma." {
		t.Fatalf("level-1 hit %+v", hits)
	}
	// Unchanged clusters: no new call.
	if err := e.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != first {
		t.Fatalf("%d calls after a rebuild of an unchanged tree, want %d", calls.Load(), first)
	}
	// A new topic with the model down: extractive summaries, one failed call only.
	failing.Store(true)
	docs := treeTopicDocs(24)
	for _, d := range docs {
		d["id"] = "new-" + d["id"].(string)
		d["text"] = strings.ReplaceAll(d["text"].(string), "The ", "Later, the ")
	}
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": docs})
	settle(t, e)
	before := calls.Load()
	if err := e.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load() - before; got != 1 {
		t.Fatalf("%d model calls while it fails, want 1", got)
	}
	hits, _ = retrieveTree(t, e, map[string]any{"query": "later magma eruption", "k": 5, "unit": "tree-node", "level": 1})
	extractive := false
	for _, h := range hits {
		extractive = extractive || !strings.HasPrefix(h.Text, "Model summary")
	}
	if !extractive {
		t.Fatalf("no extractive summary while the model is down: %+v", hits)
	}
}
