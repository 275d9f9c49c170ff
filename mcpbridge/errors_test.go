package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestErrorCodes: every error leaves with a JSON-RPC code (the go-sdk sends
// 0 for plain Go errors): what the caller got wrong is -32602 naming the
// argument, engine failures are -32603 with the RCP code in error.data.
func TestErrorCodes(t *testing.T) {
	b, e := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	ctx := context.Background()
	e.mu.Lock()
	e.failGet = &rcp.Error{Code: rcp.CodeTimeout, Message: "deadline exceeded in the engine"}
	e.mu.Unlock()
	tests := []struct {
		name      string
		call      func() error
		code      int64
		field     string
		rcpCode   int
		retryable bool
	}{
		{"prompt k not a number", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: PromptGroundedAnswer, Arguments: map[string]string{"question": "q", "k": "nineteen"}})
			return err
		}, jsonrpc.CodeInvalidParams, "arguments.k", int(rcp.CodeInvalidParams), false},
		{"prompt question missing", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: PromptGroundedAnswer, Arguments: map[string]string{}})
			return err
		}, jsonrpc.CodeInvalidParams, "arguments.question", int(rcp.CodeInvalidParams), false},
		{"prompt filter value of the wrong type", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: PromptGroundedAnswer, Arguments: map[string]string{"question": "q", "filterField": "year", "filterValue": "nineteen"}})
			return err
		}, jsonrpc.CodeInvalidParams, "arguments.filterValue", int(rcp.CodeInvalidParams), false},
		{"resources/read: engine timeout", func() error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://memtest/doc/paris"})
			return err
		}, jsonrpc.CodeInternalError, "", int(rcp.CodeTimeout), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
			}
			if we.Code != tt.code {
				t.Fatalf("code = %d, want %d (%v)", we.Code, tt.code, we)
			}
			var data struct {
				Field     string `json:"field"`
				RCPCode   int    `json:"rcpCode"`
				Retryable bool   `json:"retryable"`
			}
			if err := json.Unmarshal(we.Data, &data); err != nil {
				t.Fatalf("data %s: %v", we.Data, err)
			}
			if data.Field != tt.field || data.RCPCode != tt.rcpCode || data.Retryable != tt.retryable {
				t.Errorf("data = %s", we.Data)
			}
		})
	}
}

// TestIndexAddMetaTypes (defect 6): a filterable field's value must have
// the field's type; "nineteen" for an int field is refused, not stored.
func TestIndexAddMetaTypes(t *testing.T) {
	b, e := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	add := func(meta map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolIndexAdd, Arguments: map[string]any{
			"documents": []map[string]any{{"id": "n1", "text": "nineteen", "meta": meta}}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := add(map[string]any{"year": "nineteen"}); !res.IsError || !strings.Contains(textOf(res), "year") {
		t.Errorf("year=nineteen: %+v", textOf(res))
	}
	e.mu.Lock()
	_, stored := e.docs["n1"]
	e.mu.Unlock()
	if stored {
		t.Error("the ill-typed document reached the engine")
	}
	if res := add(map[string]any{"year": 1919, "lang": "en", "free": map[string]any{"any": "thing"}}); res.IsError {
		t.Errorf("well-typed meta refused: %s", textOf(res))
	}
}

func TestProgressMessage(t *testing.T) {
	for _, tt := range []struct{ stage, msg, want string }{
		{"recall", "recall: 12 sparse, 0 dense candidates", "recall: 12 sparse, 0 dense candidates"},
		{"recall", "12 sparse", "recall: 12 sparse"},
		{"", "12 sparse", "12 sparse"},
		{"fuse", "", "fuse"},
	} {
		if got := progressMessage(tt.stage, tt.msg); got != tt.want {
			t.Errorf("progressMessage(%q, %q) = %q, want %q", tt.stage, tt.msg, got, tt.want)
		}
	}
}
