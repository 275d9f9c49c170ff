package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/rcpgo/rcpgo/rcp"
)

// Caller sends one RCP request and returns its raw result; bench.Caller has
// the same method, so one adapter of the rcp client serves both packages.
type Caller interface {
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// RCPRetriever turns an RCP server into a RetrieveFunc with the
// reproducibility handles of spec §7.7.1: a fixed seed, and a pinned
// indexVersion — the one given, or else the first one the server reports —
// so that every query of every mode is served from the same snapshot. A
// result from another snapshot is an error, never silently scored.
type RCPRetriever struct {
	Caller       Caller
	Seed         *int64 // sent as "seed" unless the mode's options set one
	IndexVersion string // snapshot to pin; empty: pin the first one served

	mu     sync.Mutex
	pinned string
}

// Pinned returns the snapshot the retriever is pinned to ("" before the
// first result when none was given, or when the server reports none).
func (r *RCPRetriever) Pinned() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pinned == "" {
		return r.IndexVersion
	}
	return r.pinned
}

// Retrieve implements RetrieveFunc: it sends opts as retrieve params with
// query and k, and returns the hits as document ids (see rankedDocs: a
// chunk hit is its document, a tree-node or community summary expands into
// its leaves' documents). A document appears once, at its first place. The
// list may be longer than k when summaries expand; the metrics cut it.
func (r *RCPRetriever) Retrieve(ctx context.Context, query string, k int, opts Options) ([]Ranked, error) {
	p := make(map[string]any, len(opts)+4)
	maps.Copy(p, opts)
	p["query"] = query
	p["k"] = k
	if _, ok := p["seed"]; !ok && r.Seed != nil {
		p["seed"] = *r.Seed
	}
	pin := r.Pinned()
	if _, ok := p["indexVersion"]; !ok && pin != "" {
		p["indexVersion"] = pin
	}
	raw, err := r.Caller.Call(ctx, rcp.MethodRetrieve, p)
	if err != nil {
		return nil, err
	}
	var res rcp.RetrieveResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("eval: retrieve result: %w", err)
	}
	if v := res.IndexVersion; v != "" {
		r.mu.Lock()
		if r.pinned == "" && r.IndexVersion == "" {
			r.pinned = v
		}
		want := r.pinned
		if want == "" {
			want = r.IndexVersion
		}
		r.mu.Unlock()
		if v != want {
			return nil, fmt.Errorf("eval: server served indexVersion %q, pinned %q", v, want)
		}
	}
	return rankedDocs(res.Hits), nil
}

// rankedDocs turns hits into the documents they stand for, best first. A
// chunk hit is its document (hit.chunk.docId). A summary hit — unit
// tree-node or community, which carries provenance.leaves — expands into
// the documents of its leaves in leaf order (the server's most central
// first), each at the summary's score; a document already ranked higher is
// not repeated, so a summary adds only the documents it newly brings. Any
// other hit is its own id.
func rankedDocs(hits []rcp.Hit) []Ranked {
	out := make([]Ranked, 0, len(hits))
	seen := make(map[string]bool, len(hits))
	add := func(id string, score float64) {
		if !seen[id] {
			seen[id] = true
			out = append(out, Ranked{DocID: id, Score: score})
		}
	}
	for _, h := range hits {
		switch {
		case h.Chunk != nil && h.Chunk.DocID != "":
			add(h.Chunk.DocID, h.Score)
		case isSummaryUnit(h.Unit) && h.Provenance != nil && len(h.Provenance.Leaves) > 0:
			for _, leaf := range h.Provenance.Leaves {
				add(LeafDocID(leaf), h.Score)
			}
		default:
			add(h.ID.String(), h.Score)
		}
	}
	return out
}

func isSummaryUnit(u string) bool { return u == rcp.UnitTreeNode || u == rcp.UnitCommunity }

// LeafDocID maps a provenance leaf (a unit id) to its document id. rcpd
// names the chunk units of document D "D#cN" (N decimal); any other leaf is
// an unchunked document, its own unit.
func LeafDocID(leaf string) string {
	i := strings.LastIndex(leaf, "#c")
	if i <= 0 || i+2 == len(leaf) {
		return leaf
	}
	for _, r := range leaf[i+2:] {
		if r < '0' || r > '9' {
			return leaf
		}
	}
	return leaf[:i]
}

// RCPIngest returns an IngestFunc that sends each batch as one index/add
// call with the BEIR ids as document ids (an upsert: re-running an ingest
// does not duplicate, §7.10), the title and text as the body (Doc.Body), and
// the BEIR metadata as meta. chunk, when non-nil, is sent as "chunk". It
// fails when the server does not answer with the same ids in the same
// order, since the qrels could then not be matched to its hits.
func RCPIngest(c Caller, chunk *bool) IngestFunc {
	return func(ctx context.Context, docs []Doc) error {
		p := rcp.IndexAddParams{Documents: make([]rcp.Document, len(docs)), Chunk: chunk}
		for i, d := range docs {
			p.Documents[i] = rcp.Document{ID: d.ID, Text: d.Body(), Meta: d.Meta}
		}
		raw, err := c.Call(ctx, rcp.MethodIndexAdd, p)
		if err != nil {
			return err
		}
		var res rcp.IndexAddResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("eval: index/add result: %w", err)
		}
		if len(res.IDs) != len(docs) {
			return fmt.Errorf("eval: index/add returned %d ids for %d documents", len(res.IDs), len(docs))
		}
		for i, id := range res.IDs {
			if id != docs[i].ID {
				return fmt.Errorf("eval: index/add stored %q as %q", docs[i].ID, id)
			}
		}
		return nil
	}
}
