package weaviate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/weaviate"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestEngineDuringOutage: an engine whose Weaviate cannot be reached opens,
// describes itself (info, initialize) and answers ping, while retrieve and
// index/add fail with -32010, retryable.
func TestEngineDuringOutage(t *testing.T) {
	b, err := weaviate.Open(weaviate.Config{URL: "http://127.0.0.1:1", GRPCAddr: "127.0.0.1:1", Fields: map[string]string{"lang": "keyword"}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(context.Background(), engine.Config{Dir: t.TempDir(), Backend: b, Fields: map[string]string{"lang": "keyword"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := rcp.ConnectInProcess(context.Background(), rcp.NewServer(e, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping during an outage: %v", err)
	}
	if d := e.Describe(context.Background()); d.Capabilities.Retrieve == nil || d.Capabilities.Retrieve.Snapshots {
		t.Fatalf("description: %+v", d.Capabilities.Retrieve)
	}
	for method, params := range map[string]string{
		rcp.MethodRetrieve:    `{"query":"wing","k":3}`,
		rcp.MethodIndexAdd:    `{"documents":[{"id":"a","text":"x"}]}`,
		rcp.MethodIndexDelete: `{"ids":["a"]}`,
	} {
		_, err := e.Call(context.Background(), method, json.RawMessage(params))
		re, ok := rcp.AsError(err)
		if !ok || re.Code != rcp.CodeBackendUnavailable || re.Data == nil || re.Data.Retryable == nil || !*re.Data.Retryable {
			t.Errorf("%s during an outage: %v", method, err)
		}
	}
}
