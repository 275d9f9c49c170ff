package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/rcp"
)

// fileDocs are two documents as `rcp index add` sends files: a file://
// id, meta.source the same URI, a title.
var fileDocs = []map[string]any{
	{"id": "file:///docs/mem.html", "title": "mem", "meta": map[string]any{"source": "file:///docs/mem.html", "format": "html"},
		"text": "The Memory Model\n\nA goroutine is a function running concurrently with other goroutines. " +
			"Channel communication is the main method of synchronization between goroutines. " +
			"A send on a channel is synchronized before the completion of the corresponding receive. " +
			"The Once type provides safe initialization. The sync package provides the Once type. A channel connects goroutines. " +
			"Programs that modify shared data must serialize access with channel operations or the sync package."},
	{"id": "file:///docs/spec.html", "title": "spec", "meta": map[string]any{"source": "file:///docs/spec.html", "format": "html"},
		"text": "Statements\n\nThe go statement starts a goroutine. A goroutine runs in the same address space. " +
			"A select statement chooses which of a set of possible channel operations will proceed. " +
			"Channels are typed conduits. A channel provides a mechanism for concurrently executing functions."},
}

// citeEngine indexes fileDocs, chunked (chunk: true) or not.
func citeEngine(t *testing.T, chunked bool) *Engine {
	t.Helper()
	e, err := Open(context.Background(), Config{Dir: t.TempDir(), Graph: true, Dense: DenseNone,
		Chunk: chunk.Options{Size: 40, Overlap: 8}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": fileDocs, "chunk": chunked})
	if err := e.SyncGraph(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGraphHitsCiteTheirFiles: every hit of every graph op, graph unit
// and memory/recall cites the file its unit came from — source, offsets —
// exactly as retrieve cites the same unit, never the RCP method that
// wrote it; chunked and unchunked.
func TestGraphHitsCiteTheirFiles(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		e := citeEngine(t, chunked)
		query := "how do goroutines synchronize with channels"
		byID := map[string]*rcp.Citation{}
		for _, h := range citeHits(t, mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": query, "k": 20})) {
			byID[h.ID.String()] = h.Citation
		}
		calls := map[string]json.RawMessage{
			"graph local": mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "local", "query": query}),
			"graph drift": mustCall(t, e, rcp.MethodGraph, map[string]any{"op": "drift", "query": query}),
			"recall":      mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": query}),
		}
		for _, unit := range []string{rcp.UnitNode, rcp.UnitTriplet, rcp.UnitPath, rcp.UnitSubgraph, rcp.UnitCommunity} {
			calls["retrieve "+unit] = mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": query, "unit": unit, "k": 10})
		}
		for name, raw := range calls {
			hits := citeHits(t, raw)
			if len(hits) == 0 {
				t.Errorf("chunked %v: %s answered no hit", chunked, name)
			}
			for _, h := range hits {
				c := h.Citation
				if c == nil || !strings.HasPrefix(c.Source, "file:///docs/") || c.Start == nil || c.End == nil || *c.End <= *c.Start {
					t.Errorf("chunked %v: %s hit %s cites %+v", chunked, name, h.ID, c)
					continue
				}
				if h.Unit == rcp.UnitTriplet {
					ev, _ := h.Meta["evidence"].(string)
					if doc := fileText(c.Source); ev == "" || string([]rune(doc)[*c.Start:*c.End]) != ev {
						t.Errorf("chunked %v: triplet %s: evidence %q is not the cited span [%d,%d)", chunked, h.ID, ev, *c.Start, *c.End)
					}
				}
				if want, ok := byID[h.ID.String()]; ok && (want.Source != c.Source || *want.Start != *c.Start || *want.End != *c.End) {
					t.Errorf("chunked %v: %s hit %s cites %s [%d,%d), retrieve %s [%d,%d)", chunked, name, h.ID,
						c.Source, *c.Start, *c.End, want.Source, *want.Start, *want.End)
				}
			}
		}
	}
}

func citeHits(t *testing.T, raw json.RawMessage) []rcp.Hit {
	t.Helper()
	var r struct{ Hits []rcp.Hit }
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Hits
}

func fileText(id string) string {
	for _, d := range fileDocs {
		if d["id"] == id {
			return d["text"].(string)
		}
	}
	return ""
}
