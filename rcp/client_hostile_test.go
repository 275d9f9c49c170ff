package rcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A client refuses answers that are not correlated with its request, and
// answers larger than MaxResponseBytes without reading them into memory
// (item 6: the gateway fused a response with id "other", and passed on a
// 200 MB hit).
func TestClientRejectsUncorrelatedAndOversizedAnswers(t *testing.T) {
	var mode atomic.Value
	mode.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		if req.Method == MethodInitialize {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"server":{"name":"h","version":"1"},"capabilities":{"retrieve":{"maxK":10}},"conformance":"L0"}}`, req.ID)
			return
		}
		switch mode.Load() {
		case "other":
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"other","result":{"hits":[{"id":"x","score":1}]}}`)
		case "huge":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"hits":[{"id":"x","score":1,"text":"%s"}]}}`, req.ID, strings.Repeat("x", 2<<20))
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"hits":[{"id":"x","score":1}]}}`, req.ID)
		}
	}))
	defer srv.Close()
	c, err := ConnectHTTP(context.Background(), srv.URL, &ClientOptions{MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	params := &RetrieveParams{Query: TextQuery("q"), K: 1}
	if _, err := c.Retrieve(context.Background(), params); err != nil {
		t.Fatalf("a correlated answer: %v", err)
	}
	mode.Store("other")
	if _, err := c.Retrieve(context.Background(), params); err == nil {
		t.Fatal("an answer with id \"other\" was accepted")
	}
	mode.Store("huge")
	_, err = c.Retrieve(context.Background(), params)
	if re, ok := AsError(err); !ok || re.Code != CodePayloadTooLarge {
		t.Fatalf("a 2 MB answer over a 1 MB cap: %v", err)
	}
}
