package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/rcp"
)

// tripleChat answers every triple request with one fact about Vell Labs.
type tripleChat struct{}

func (tripleChat) Complete(_ context.Context, m []llm.Message) (string, error) {
	if !strings.Contains(m[len(m)-1].Content, "Vell Labs, which Otto Pike founded") {
		return `{"triples":[]}`, nil
	}
	return `{"triples":[{"subject":"Otto Pike","predicate":"founded","object":"Vell Labs","evidence":"Vell Labs, which Otto Pike founded in 1990, makes lenses."}]}`, nil
}

func (tripleChat) Model() string { return "fake" }

// TestModelTriplesReachTripletUnit: with a chat model configured, a fact
// the offline patterns cannot read (a relative clause) is a triplet hit,
// cited by its evidence sentence.
func TestModelTriplesReachTripletUnit(t *testing.T) {
	e, err := Open(context.Background(), Config{Dir: t.TempDir(), Graph: true, Dense: DenseNone, Chat: tripleChat{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	text := "Optics firms. Vell Labs, which Otto Pike founded in 1990, makes lenses. Vell Labs sells lenses worldwide."
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []map[string]any{{"id": "v", "text": text}}})
	if err := e.SyncGraph(context.Background()); err != nil {
		t.Fatal(err)
	}
	var r struct{ Hits []rcp.Hit }
	if err := json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": "who founded Vell Labs", "k": 5, "unit": "triplet"}), &r); err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Hits {
		if strings.HasPrefix(h.TextOf(), "otto pike founded vell labs.") {
			if c := h.Citation; c == nil || c.Start == nil || string([]rune(text)[*c.Start:*c.End]) != "Vell Labs, which Otto Pike founded in 1990, makes lenses." {
				t.Fatalf("model triple cites %+v", c)
			}
			return
		}
	}
	t.Fatalf("no model triple among %d triplet hits: %v", len(r.Hits), r.Hits)
}
