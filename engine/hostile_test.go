package engine

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

func words(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("q" + strconv.Itoa(i) + " ")
	}
	return b.String()
}

// Oversized queries are refused with -32602 (field query) before any
// analysis; a query within the byte cap but over the distinct-term cap too.
func TestQueryCaps(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	cases := []struct {
		name  string
		query string
		code  rcp.Code
	}{
		{"at the term cap", words(MaxQueryTerms), 0},
		{"over the term cap", words(MaxQueryTerms + 1), rcp.CodeInvalidParams},
		{"over the byte cap", strings.Repeat("bm25 ", MaxQueryBytes/5+1), rcp.CodeInvalidParams},
		{"10 MB", strings.Repeat("x", 10<<20), rcp.CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": tc.query, "k": 3})
			switch {
			case tc.code == 0 && rerr != nil:
				t.Fatalf("error %v", rerr)
			case tc.code != 0 && (rerr == nil || rerr.Code != tc.code || rerr.Data == nil || rerr.Data.Field != "query"):
				t.Fatalf("got %+v, want code %d field query", rerr, tc.code)
			}
			// Decoding 10 MB of JSON takes its time; analysing it (what
			// the caps prevent) took minutes.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A cancelled retrieve stops promptly (the analysis and
// scoring loops check the context).
func TestRetrieveHonoursCancel(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := e.Call(ctx, rcp.MethodRetrieve, []byte(`{"query":"`+words(MaxQueryTerms)+`","k":3}`))
	if err == nil {
		t.Fatal("a retrieve already cancelled succeeded")
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("a retrieve already cancelled ran %v", d)
	}
}

// Deleting the data directory under a running engine fails writes with
// -32010 and makes Health report it (item 13: index/add was still
// acknowledged as durable).
func TestDataDirDeletedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone; c.Dir = dir; c.Preload = nil })
	if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "a", "text": "alpha"}}}); rerr != nil {
		t.Fatal(rerr)
	}
	if err := e.Health(); err != nil {
		t.Fatalf("healthy engine: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := e.Health(); err == nil {
		t.Fatal("Health is nil after the data directory was deleted")
	}
	_, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "b", "text": "beta"}}})
	if rerr == nil || rerr.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("index/add into a deleted directory: %+v, want -32010", rerr)
	}
	_, rerr = call(t, e, rcp.MethodIndexDelete, map[string]any{"ids": []string{"a"}})
	if rerr == nil || rerr.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("index/delete into a deleted directory: %+v, want -32010", rerr)
	}
}
