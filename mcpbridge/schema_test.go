package mcpbridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// mcpSchema compiles one definition of the official MCP schema
// (testdata/mcp-2025-11-25.schema.json).
func mcpSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile("testdata/mcp-2025-11-25.schema.json#/$defs/" + def)
	if err != nil {
		t.Fatalf("compiling %s: %v", def, err)
	}
	return s
}

func validateMCP(t *testing.T, def string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpSchema(t, def).Validate(inst); err != nil {
		t.Errorf("%s does not validate against the MCP 2025-11-25 schema:\n%v\n%.2000s", def, err, b)
	}
}

// TestWireAgainstMCPSchema validates what the MCP face sends, as sent over
// streamable HTTP, against the official MCP 2025-11-25 schema: initialize
// (with tasks), tools/list (with execution), a search result with one
// resource_link per hit, and the tasks results.
func TestWireAgainstMCPSchema(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	srv := serveHTTP(t, b, HTTPOptions{})
	_, init := rawInitialize(t, srv.URL)
	validateMCP(t, "InitializeResult", init["result"])
	post := httpSession(t, srv.URL)

	_, tools := post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	validateMCP(t, "ListToolsResult", tools["result"])

	_, search := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"Eiffel tower Paris","k":3}}}`)
	res := result(t, search)
	validateMCP(t, "CallToolResult", res)
	content := res["content"].([]any)
	hits := res["structuredContent"].(map[string]any)["hits"].([]any)
	var links []map[string]any
	for _, c := range content[1:] {
		links = append(links, c.(map[string]any))
	}
	if content[0].(map[string]any)["type"] != "text" || len(hits) == 0 || len(links) != len(hits) {
		t.Fatalf("content: %d blocks for %d hits", len(content), len(hits))
	}
	for i, l := range links {
		h := hits[i].(map[string]any)
		ann, _ := l["annotations"].(map[string]any)
		if l["type"] != "resource_link" || l["uri"] != h["uri"] || l["name"] != h["documentId"] || ann["priority"] == nil ||
			fmt.Sprint(ann["audience"]) != "[assistant]" {
			t.Errorf("link %d = %v for hit %v", i, l, h)
		}
	}
	// The first link opens the document it names.
	_, read := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":%q}}`, links[0]["uri"]))
	validateMCP(t, "ReadResourceResult", result(t, read))

	// Community resources: listed on the first page, readable.
	_, listed := post(`{"jsonrpc":"2.0","id":6,"method":"resources/list"}`)
	validateMCP(t, "ListResourcesResult", result(t, listed))
	_, tpls := post(`{"jsonrpc":"2.0","id":7,"method":"resources/templates/list"}`)
	validateMCP(t, "ListResourceTemplatesResult", result(t, tpls))
	_, comm := post(`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"rcp://memtest/community/0/fr%2Ftour%201"}}`)
	validateMCP(t, "ReadResourceResult", result(t, comm))

	_, created := post(taskCall(4, "s1", 60000))
	validateMCP(t, "CreateTaskResult", result(t, created))
	id := result(t, created)["task"].(map[string]any)["taskId"].(string)
	_, got := post(taskReq("tasks/result", id))
	validateMCP(t, "CallToolResult", result(t, got))
	_, g := post(taskReq("tasks/get", id))
	validateMCP(t, "GetTaskResult", result(t, g))
	_, l := post(`{"jsonrpc":"2.0","id":5,"method":"tasks/list"}`)
	validateMCP(t, "ListTasksResult", result(t, l))
}
