package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/schematest"
	"github.com/rcpgo/rcpgo/rcp"
)

type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rcp.Error      `json:"error"`
	raw    []byte
}

// stdioClient drives an engine behind rcp.Server over in-memory pipes.
type stdioClient struct {
	t    *testing.T
	w    io.WriteCloser
	r    *bufio.Reader
	done chan error
}

func newStdio(t *testing.T, e *Engine) *stdioClient {
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	srv := rcp.NewServer(e, nil)
	c := &stdioClient{t: t, w: cw, r: bufio.NewReader(sr), done: make(chan error, 1)}
	go func() { c.done <- srv.ServeStdio(context.Background(), cr, sw); sw.Close() }()
	return c
}

// call sends one request and returns the frames up to and including its
// response, every one validated against the schema.
func (c *stdioClient) call(id int, method string, params any) []frame {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	var out []frame
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("reading: %v", err)
		}
		schematest.ValidateMessage(c.t, line)
		var f frame
		if err := json.Unmarshal(line, &f); err != nil {
			c.t.Fatal(err)
		}
		f.raw = line
		out = append(out, f)
		if f.Method == "" && string(f.ID) == strings.TrimSpace(string(mustJSON(id))) {
			schematest.ValidateResponse(c.t, method, line)
			return out
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestStdioEndToEnd(t *testing.T) {
	e := newEngine(t, nil)
	c := newStdio(t, e)
	c.call(1, "initialize", map[string]any{"protocolVersion": 1, "client": map[string]any{"name": "test"},
		"capabilities": map[string]any{"log": map[string]any{}}, "_meta": map[string]any{"logLevel": "debug"}})

	frames := c.call(2, "retrieve", map[string]any{"query": "dense retrieval embeddings", "k": 3, "mode": "hybrid",
		"_meta": map[string]any{"progressToken": "tok-1"}})
	stages := map[string]bool{}
	partial, logs := false, 0
	for _, f := range frames[:len(frames)-1] {
		switch f.Method {
		case rcp.NotifyProgress:
			var p rcp.ProgressParams
			_ = json.Unmarshal(f.Params, &p)
			if string(p.ProgressToken) != `"tok-1"` {
				t.Fatalf("token %s", p.ProgressToken)
			}
			stages[p.Stage] = true
			if p.Partial != nil && len(p.Partial.Hits) > 0 {
				partial = true
			}
		case rcp.NotifyLog:
			logs++
		default:
			t.Fatalf("unexpected frame %s", f.raw)
		}
	}
	for _, s := range []string{"recall", "fuse", "rerank", "pack"} {
		if !stages[s] {
			t.Errorf("no progress for stage %s (%v)", s, stages)
		}
	}
	if !partial || logs == 0 {
		t.Errorf("partial %v logs %d", partial, logs)
	}
	last := frames[len(frames)-1]
	var res rcp.RetrieveResult
	if err := json.Unmarshal(last.Result, &res); err != nil || len(res.Hits) == 0 {
		t.Fatalf("result %s", last.raw)
	}

	// Without a token: no progress.
	for _, f := range c.call(3, "retrieve", map[string]any{"query": "bm25", "k": 2}) {
		if f.Method == rcp.NotifyProgress {
			t.Fatal("progress without a token")
		}
	}
	// Writes and errors travel too.
	fs := c.call(4, "index/add", map[string]any{"documents": []any{map[string]any{"id": "e2e", "text": "end to end"}}})
	if fs[len(fs)-1].Error != nil {
		t.Fatal(fs[len(fs)-1].Error)
	}
	fs = c.call(5, "retrieve", map[string]any{"query": "x", "k": -1})
	if f := fs[len(fs)-1]; f.Error == nil || f.Error.Code != rcp.CodeInvalidParams {
		t.Fatalf("%s", f.raw)
	}
	c.w.Close()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop at EOF")
	}
}

func TestHTTPEndToEnd(t *testing.T) {
	e := newEngine(t, nil)
	srv := rcp.NewServer(e, nil)
	h := srv.HTTPHandler(&rcp.HTTPOptions{Sessions: rcp.SessionSingle})
	defer h.Close()
	ts := httptest.NewServer(h)
	defer ts.Close()
	post := func(method string, params any) frame {
		t.Helper()
		body := mustJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, err := http.Post(ts.URL+"/rcp/"+method, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		schematest.ValidateResponse(t, method, b)
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %s", err, b)
		}
		f.raw = b
		return f
	}
	if f := post("retrieve", map[string]any{"query": "x", "k": 1}); f.Error == nil || f.Error.Code != rcp.CodeNotInitialized {
		t.Fatalf("pre-initialize: %s", f.raw)
	}
	post("initialize", map[string]any{"protocolVersion": 1})
	if f := post("index/add", map[string]any{"documents": []any{map[string]any{"id": "h1", "text": "hypertext transfer retrieval"}}}); f.Error != nil {
		t.Fatal(f.Error)
	}
	f := post("retrieve", map[string]any{"query": "hypertext transfer", "k": 2})
	var res rcp.RetrieveResult
	if err := json.Unmarshal(f.Result, &res); err != nil || len(res.Hits) == 0 || res.Hits[0].ID.String() != "h1" {
		t.Fatalf("%s", f.raw)
	}
}
