// Package bench is a load generator for RCP servers. It drives one target,
// or two interleaved for an A/B comparison, with a workload (ping,
// retrieve, index, or a weighted mix) at a fixed concurrency until a
// request count or a duration is reached, and reports latency percentiles
// from HDR histograms, throughput, and errors by RCP error code.
//
// Targets are reached through the Caller interface, so the package does
// not depend on a transport; an rcp client adapts to it in a few lines.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/rcpgo/rcpgo/bench/gen"
	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/rcp"
)

// Caller sends one RCP request and returns its raw result. An error that
// carries an *rcp.Error is counted under its code.
type Caller interface {
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// CallerFunc adapts a function to Caller.
type CallerFunc func(ctx context.Context, method string, params any) (json.RawMessage, error)

// Call calls f.
func (f CallerFunc) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return f(ctx, method, params)
}

// CallFunc has the shape of (*rcp.Client).Call: it decodes the result into
// result, which may be a *json.RawMessage.
type CallFunc func(ctx context.Context, method string, params, result any) error

// FromCall adapts a CallFunc — typically the method value client.Call of an
// *rcp.Client — to a Caller. The returned CallerFunc also satisfies
// eval.Caller, so one adapter serves `rcp bench` and `rcp eval`.
func FromCall(call CallFunc) CallerFunc {
	return func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		var raw json.RawMessage
		if err := call(ctx, method, params, &raw); err != nil {
			return nil, err
		}
		return raw, nil
	}
}

// Op is one request of a workload.
type Op struct {
	Method string
	Params any
	// Items is the number of units the request carries (documents of an
	// index batch; 1 otherwise), for items-per-second figures.
	Items int
}

// Workload produces the requests of a run. Next must be safe for
// concurrent use; rng belongs to the calling worker and seq numbers the
// operations of the run from 0.
type Workload interface {
	Name() string
	Next(rng *rand.Rand, seq int64) Op
}

// Ping is the ping workload: round trips without server work (§7.15).
type Ping struct{}

// Name implements Workload.
func (Ping) Name() string { return "ping" }

// Next implements Workload.
func (Ping) Next(_ *rand.Rand, seq int64) Op {
	return Op{Method: rcp.MethodPing, Params: map[string]any{"nonce": seq}, Items: 1}
}

// Retrieve sends retrieve requests, cycling through Queries in order.
type Retrieve struct {
	Queries []string
	K       int            // default 10
	Options map[string]any // extra retrieve params (mode, fusion, filter, seed, …)
}

// Name implements Workload.
func (w *Retrieve) Name() string { return "retrieve" }

// Next implements Workload.
func (w *Retrieve) Next(_ *rand.Rand, seq int64) Op {
	p := make(map[string]any, len(w.Options)+2)
	maps.Copy(p, w.Options)
	p["query"] = w.Queries[seq%int64(len(w.Queries))]
	k := w.K
	if k <= 0 {
		k = 10
	}
	p["k"] = k
	return Op{Method: rcp.MethodRetrieve, Params: p, Items: 1}
}

// QueriesFromFile reads queries from a BEIR queries.jsonl (when the file
// name ends in .jsonl or .json) or from a text file with one query a line.
func QueriesFromFile(path string) ([]string, error) {
	var out []string
	if strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json") {
		qs, err := eval.ReadQueriesFile(path)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			out = append(out, q.Text)
		}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: no queries in %s", path)
	}
	return out, nil
}

// GeneratedQueries returns n queries of a synthetic corpus (see bench/gen).
func GeneratedQueries(g *gen.Generator, n int) []string {
	out := make([]string, n)
	for j := range out {
		out[j] = g.Query(j).Text
	}
	return out
}

// Index sends index/add batches of synthetic documents. Batch i carries
// documents i·Batch … of the generator, wrapping around its corpus, with
// ids IDPrefix+gen.DocID: repeated runs upsert the same documents instead
// of growing the index (§7.10).
type Index struct {
	Gen      *gen.Generator
	Batch    int    // documents per request (default 32)
	IDPrefix string // default "bench-"
}

// Name implements Workload.
func (w *Index) Name() string { return fmt.Sprintf("index(batch=%d)", w.batch()) }

func (w *Index) batch() int {
	if w.Batch <= 0 {
		return 32
	}
	return w.Batch
}

// Next implements Workload.
func (w *Index) Next(_ *rand.Rand, seq int64) Op {
	n := w.batch()
	total := int64(max(w.Gen.Config().Docs, 1))
	prefix := w.IDPrefix
	if prefix == "" {
		prefix = "bench-"
	}
	docs := make([]rcp.Document, n)
	for k := range docs {
		d := w.Gen.Doc(int((seq*int64(n) + int64(k)) % total))
		docs[k] = rcp.Document{ID: prefix + d.ID, Text: d.Title + "\n\n" + d.Text, Meta: d.Meta.MetaMap()}
	}
	return Op{Method: rcp.MethodIndexAdd, Params: rcp.IndexAddParams{Documents: docs}, Items: n}
}

// Weighted is a part of a Mixed workload.
type Weighted struct {
	Workload Workload
	Weight   int
}

// Mixed draws each operation from one of its parts with probability
// proportional to the weights.
type Mixed struct {
	Parts []Weighted
}

// NewMixed checks the weights.
func NewMixed(parts ...Weighted) (*Mixed, error) {
	total := 0
	for _, p := range parts {
		if p.Weight < 0 || p.Workload == nil {
			return nil, errors.New("bench: mixed: negative weight or nil workload")
		}
		total += p.Weight
	}
	if total == 0 {
		return nil, errors.New("bench: mixed: weights sum to 0")
	}
	return &Mixed{Parts: parts}, nil
}

// Name implements Workload.
func (w *Mixed) Name() string {
	var s []string
	for _, p := range w.Parts {
		s = append(s, fmt.Sprintf("%s:%d", p.Workload.Name(), p.Weight))
	}
	return "mixed(" + strings.Join(s, ",") + ")"
}

// Next implements Workload.
func (w *Mixed) Next(rng *rand.Rand, seq int64) Op {
	total := 0
	for _, p := range w.Parts {
		total += p.Weight
	}
	x := rng.IntN(total)
	for _, p := range w.Parts {
		if x < p.Weight {
			return p.Workload.Next(rng, seq)
		}
		x -= p.Weight
	}
	panic("unreachable")
}
