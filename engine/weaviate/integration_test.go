package weaviate

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/internal/testutil/weaviatetest"
	"github.com/rcpgo/rcpgo/rcp/filter"
)

// hashEncoder is a deterministic bag-of-words encoder for the tests:
// words hashed into 32 dimensions, L2-normalised.
type hashEncoder struct{}

func (hashEncoder) Embed(_ context.Context, texts []string, _ embed.Kind) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 32)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%32]++
		}
		n := 0.0
		for _, x := range v {
			n += float64(x * x)
		}
		if n > 0 {
			for j := range v {
				v[j] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, nil
}
func (hashEncoder) Dimension() int   { return 32 }
func (hashEncoder) Identity() string { return "test-hash-32" }
func (hashEncoder) Normalized() bool { return true }
func (hashEncoder) BatchLimit() int  { return 64 }

var testDocs = []search.Document{
	{ID: "a", Title: "Wings", Text: "lift on a wing at low speed", Meta: map[string]any{"lang": "en", "year": 1999.0, "score": 0.9, "ok": true, "tags": []any{"aero", "lift"}, "title": "wing lift", "day": "2020-01-01T00:00:00Z"}},
	{ID: "b", Title: "Flügel", Text: "Auftrieb am Flügel", Meta: map[string]any{"lang": "de", "year": 2005.0, "score": 0.2, "ok": false, "tags": []any{"aero"}, "day": "2021-06-01T00:00:00Z"}},
	{ID: "c", Text: "boundary layer transition on a flat plate", Meta: map[string]any{"lang": "en", "year": 1970.0, "tags": []any{"flow"}, "title": "plate"}},
	{ID: "d", Text: "heat transfer in hypersonic flow", Meta: map[string]any{"lang": "fr", "score": 0.5, "ok": true}},
	{ID: "e", Text: "no metadata at all about a wing"},
	{ID: "f", Text: "shock waves and wing drag", Meta: map[string]any{"lang": "en", "year": 2010.0, "tags": []any{}, "title": "Wing drag"}},
}

func TestBackendOnWeaviate(t *testing.T) {
	cl := weaviatetest.Start(t, 1)
	node := cl.Nodes[0]
	ctx := context.Background()
	open := func(class, tenant string) *Backend {
		b, err := Open(Config{URL: node.URL(), GRPCAddr: node.GRPC(), Class: class, Tenant: tenant, Fields: testFields, Dense: hashEncoder{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := b.WaitConnected(wctx); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := open("RcpTest", "")
	if _, err := b.Add(ctx, slices.Clone(testDocs)); err != nil {
		t.Fatal(err)
	}

	t.Run("bm25", func(t *testing.T) {
		res, err := b.Search(ctx, search.Query{Text: "wing", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		got := hitIDs(res)
		sort.Strings(got)
		if !slices.Equal(got, []string{"a", "e", "f"}) {
			t.Fatalf("wing: %v", hitIDs(res))
		}
		for i := 1; i < len(res.Hits); i++ {
			if res.Hits[i].Score > res.Hits[i-1].Score {
				t.Fatalf("not ranked: %+v", res.Hits)
			}
		}
		if h := res.Hits[0]; h.Doc == nil || h.Doc.Text == "" || h.Facts.Tokens == 0 || res.Version != b.Version() {
			t.Fatalf("hit without its document or facts: %+v", h)
		}
		if _, err := b.Search(ctx, search.Query{Text: "wing", Version: "weaviate:Other"}); err != search.ErrSnapshotGone {
			t.Fatalf("foreign version: %v", err)
		}
	})

	t.Run("phrases", func(t *testing.T) {
		for _, c := range []struct {
			q    string
			want []string
		}{
			{`"wing drag"`, []string{"f"}},
			{`"drag wing"`, nil},
			{`"drag wing"~2`, []string{"f"}},
			{`"low speed" wing`, []string{"a"}},
			{`"lift wing"~1`, nil},
			{`"lift wing"~2 speed`, []string{"a"}}, // lift, on, a, wing: "on" and "a" keep their places
		} {
			res, err := b.Search(ctx, search.Query{Text: c.q, K: 10})
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIDs(res); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				t.Errorf("%s: %v, want %v", c.q, got, c.want)
			}
		}
	})
	t.Run("filters", func(t *testing.T) {
		// Every operator, alone and combined: Weaviate's answer (with the
		// exact re-check) equals the §8 evaluator over the documents.
		for _, f := range []string{
			`{"field":"lang","op":"eq","value":"en"}`,
			`{"field":"lang","op":"ne","value":"en"}`,
			`{"field":"lang","op":"eq","value":null}`,
			`{"field":"lang","op":"in","value":["de","fr"]}`,
			`{"field":"lang","op":"in","value":["de",null]}`,
			`{"field":"lang","op":"nin","value":["en"]}`,
			`{"field":"year","op":"gt","value":1999}`,
			`{"field":"year","op":"gte","value":1999}`,
			`{"field":"year","op":"lt","value":2005}`,
			`{"field":"year","op":"lte","value":2005}`,
			`{"field":"score","op":"gte","value":0.5}`,
			`{"field":"ok","op":"eq","value":false}`,
			`{"field":"ok","op":"ne","value":true}`,
			`{"field":"tags","op":"eq","value":"aero"}`,
			`{"field":"tags","op":"contains","value":"flow"}`,
			`{"field":"title","op":"contains","value":"ing"}`,
			`{"field":"title","op":"contains","value":"W?ng"}`,
			`{"field":"tags","op":"exists","value":true}`,
			`{"field":"tags","op":"exists","value":false}`,
			`{"field":"day","op":"gte","value":"2020-06-01T00:00:00Z"}`,
			`{"field":"day","op":"lt","value":1590969600000}`,
			`{"and":[{"field":"lang","op":"eq","value":"en"},{"field":"year","op":"lt","value":2000}]}`,
			`{"or":[{"field":"lang","op":"eq","value":"fr"},{"not":{"field":"year","op":"exists","value":true}}]}`,
			`{"not":{"or":[{"field":"lang","op":"eq","value":"en"},{"field":"ok","op":"eq","value":true}]}}`,
			`{"not":{"field":"title","op":"contains","value":"W?ng"}}`,
		} {
			n, err := filter.Validate([]byte(f), testFields, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			cf, _ := b.CompileFilter(n)
			res, err := b.Search(ctx, search.Query{K: 100, Filter: cf})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var want []string
			for _, d := range testDocs {
				if n.Match(d.Meta) {
					want = append(want, d.ID)
				}
			}
			if got := hitIDs(res); !slices.Equal(got, want) {
				t.Errorf("%s: weaviate %v, §8 %v", f, got, want)
			}
		}
	})

	t.Run("dense", func(t *testing.T) {
		cands, err := b.DenseRecall(ctx, "heat transfer in hypersonic flow", 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(cands) == 0 || cands[0].ID != "d" || cands[0].Score < 0.99 || cands[0].Doc == nil {
			t.Fatalf("dense: %+v", cands)
		}
		n, _ := filter.Validate([]byte(`{"field":"lang","op":"eq","value":"en"}`), testFields, nil)
		cands, err = b.DenseRecall(ctx, "heat transfer in hypersonic flow", 10, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cands {
			if c.Doc.Meta["lang"] != "en" {
				t.Fatalf("filtered dense recall returned %s (%v)", c.ID, c.Doc.Meta)
			}
		}
		vecs, err := b.Vectors(ctx, []string{"d", "nope"})
		if err != nil || len(vecs) != 2 || len(vecs[0]) != 32 || vecs[0][0] != vecs[0][0] {
			t.Fatalf("vectors: %v %v", vecs, err)
		}
	})

	t.Run("writes", func(t *testing.T) {
		// Upsert by id: same object, new text.
		if _, err := b.Add(ctx, []search.Document{{ID: "e", Text: "replaced text about gliders"}}); err != nil {
			t.Fatal(err)
		}
		d, err := b.Get(ctx, "e")
		if err != nil || d == nil || d.Text != "replaced text about gliders" {
			t.Fatalf("upsert: %+v %v", d, err)
		}
		// Chunked, then plain again: the chunks go.
		chunks := []search.Document{
			{ID: "p#c0", Text: "first part", Chunk: &search.ChunkRef{DocID: "p", Index: 0, End: 10}},
			{ID: "p#c1", Text: "second part", Chunk: &search.ChunkRef{DocID: "p", Index: 1, Start: 11, End: 22}},
		}
		if _, err := b.Add(ctx, chunks); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Add(ctx, chunks[:1]); err != nil { // re-chunked into one
			t.Fatal(err)
		}
		if d, _ := b.Get(ctx, "p#c1"); d != nil {
			t.Fatal("a stale chunk survived re-chunking")
		}
		if _, err := b.Add(ctx, []search.Document{{ID: "p", Text: "whole again"}}); err != nil {
			t.Fatal(err)
		}
		if d, _ := b.Get(ctx, "p#c0"); d != nil {
			t.Fatal("a chunk survived its document becoming plain")
		}
		n, err := b.Delete(ctx, []string{"p", "a", "a", "missing"})
		if err != nil || n != 2 {
			t.Fatalf("delete: %d %v", n, err)
		}
		if d, _ := b.Get(ctx, "a"); d != nil {
			t.Fatal("deleted document still there")
		}
	})

	t.Run("tenants", func(t *testing.T) {
		t1, t2 := open("RcpTenants", "t1"), open("RcpTenants", "t2")
		if _, err := t1.Add(ctx, []search.Document{{ID: "x", Text: "only in tenant one"}}); err != nil {
			t.Fatal(err)
		}
		r1, err1 := t1.Search(ctx, search.Query{Text: "tenant", K: 5})
		r2, err2 := t2.Search(ctx, search.Query{Text: "tenant", K: 5})
		if err1 != nil || err2 != nil || len(r1.Hits) != 1 || len(r2.Hits) != 0 {
			t.Fatalf("tenant isolation: %v %v / %v %v", r1, err1, r2, err2)
		}
	})

	t.Run("outage", func(t *testing.T) {
		cl.Kill(0)
		_, err := b.Search(ctx, search.Query{Text: "wing", K: 3})
		if !errors.Is(err, search.ErrUnavailable) {
			t.Fatalf("search during an outage: %v", err)
		}
		cl.Restart(0)
		deadline := time.Now().Add(time.Minute)
		for {
			_, err = b.Search(ctx, search.Query{Text: "wing", K: 3})
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("no reconnection after the node returned: %v", err)
		}
	})
}

// TestOpenUnreachable: a backend whose Weaviate is down answers -32010 and
// keeps trying.
func TestOpenUnreachable(t *testing.T) {
	b, err := Open(Config{URL: "http://127.0.0.1:1", GRPCAddr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Search(context.Background(), search.Query{Text: "x"})
	if !errors.Is(err, search.ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.WaitConnected(ctx); err == nil {
		t.Fatal("connected to nothing")
	}
}

func hitIDs(r *search.Result) []string {
	out := []string{}
	for _, h := range r.Hits {
		out = append(out, h.ID)
	}
	return out
}
