package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/chunk"
	"github.com/rcpgo/rcpgo/rcp"
)

// pagedText is a three-page document as internal/ingest delivers a PDF:
// pages separated by form feeds, each longer than a chunk.
func pagedText() (string, []string) {
	topics := []string{"volcanic basalt eruptions", "glacier moraine deposits", "coral reef bleaching"}
	var pages []string
	for _, tp := range topics {
		var sb strings.Builder
		for i := 0; i < 12; i++ {
			sb.WriteString("This sentence describes " + tp + " observed in the field season. ")
		}
		pages = append(pages, strings.TrimSpace(sb.String()))
	}
	return strings.Join(pages, "\f"), pages
}

func TestRetrievePageUnit(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, func(c *Config) { c.Chunk = chunk.Options{Size: 40, Overlap: 10} })
	defer e.Close()
	if !rcp.Contains(e.Describe(ctx).Capabilities.Retrieve.Units, rcp.UnitPage) {
		t.Fatal("page not advertised")
	}
	text, pages := pagedText()
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"chunk": true,
		"documents": []map[string]any{{"id": "report", "title": "Field report", "text": text}}})
	type hit struct {
		ID       string        `json:"id"`
		Text     string        `json:"text"`
		Unit     string        `json:"unit"`
		Citation *rcp.Citation `json:"citation"`
		Chunk    *rcp.ChunkRef `json:"chunk"`
	}
	var r struct{ Hits []hit }
	json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": "glacier moraine", "k": 3, "unit": "page"}), &r)
	if len(r.Hits) == 0 {
		t.Fatal("no page hits")
	}
	h := r.Hits[0]
	if h.ID != "report#p2" || h.Unit != "page" || h.Citation == nil || h.Citation.Page == nil || *h.Citation.Page != 2 || h.Chunk != nil {
		t.Fatalf("page hit %+v", h)
	}
	if h.Text != pages[1] {
		t.Fatalf("page text\n%q\nwant\n%q", h.Text, pages[1])
	}
	// Chunk hits of a paged document cite their page and never straddle two.
	json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": "coral reef", "k": 10}), &r)
	for _, c := range r.Hits {
		if c.Citation == nil || c.Citation.Page == nil || strings.Contains(c.Text, "\f") {
			t.Fatalf("chunk hit %+v", c)
		}
		if strings.Contains(c.Text, "coral") && *c.Citation.Page != 3 {
			t.Fatalf("coral chunk on page %d", *c.Citation.Page)
		}
	}
	// Without chunk:true a paged document is stored one unit per page.
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []map[string]any{{"id": "plain", "text": text}}})
	json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": "volcanic basalt", "k": 5, "unit": "page"}), &r)
	got := map[string]hit{}
	for _, h := range r.Hits {
		got[h.ID] = h
	}
	if h, ok := got["plain#p1"]; !ok || h.Text != pages[0] || *h.Citation.Page != 1 || *h.Citation.Start != 0 {
		t.Fatalf("whole-page hits %+v", r.Hits)
	}
	var doc struct{ Documents []struct{ Text string } }
	json.Unmarshal(mustCall(t, e, rcp.MethodRCPGoGet, map[string]any{"ids": []string{"plain"}}), &doc)
	if len(doc.Documents) != 1 || doc.Documents[0].Text != text {
		t.Fatalf("get of a paged document %+v", doc)
	}
}

// TestPageUnitOnlyPaginated (issue 34, finding 7): unit "page" returns the
// pages of paginated documents only — a PDF's, also when it has one page —
// and leaves out HTML and Markdown documents (whose sections are chunks),
// saying so in usage.notes; before, an unpaged document was one "page".
func TestPageUnitOnlyPaginated(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Chunk = chunk.Options{Size: 40, Overlap: 10}; c.Preload = nil })
	defer e.Close()
	text, _ := pagedText()
	basalt := "Basalt forms when volcanic lava cools quickly at the surface."
	mustCall(t, e, rcp.MethodIndexAdd, map[string]any{"documents": []map[string]any{
		{"id": "report", "text": text, "meta": map[string]any{"format": "pdf"}},
		{"id": "leaflet", "text": basalt + " A one-page PDF.", "meta": map[string]any{"format": "pdf"}},
		{"id": "guide.html", "text": basalt + " " + basalt, "meta": map[string]any{"format": "html"}},
		{"id": "notes.md", "text": "# Basalt\n\n" + basalt, "meta": map[string]any{"format": "markdown"}},
	}})
	var r struct {
		Hits []struct {
			ID       string        `json:"id"`
			Unit     string        `json:"unit"`
			Citation *rcp.Citation `json:"citation"`
		}
		Usage rcp.Usage
	}
	json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": "volcanic basalt", "k": 10, "unit": "page"}), &r)
	var got []string
	for _, h := range r.Hits {
		got = append(got, h.ID)
		if h.Unit != rcp.UnitPage || h.Citation == nil || h.Citation.Page == nil {
			t.Errorf("page hit %s: unit %q, citation %+v", h.ID, h.Unit, h.Citation)
		}
	}
	if strings.Join(got, " ") != "leaflet#p1 report#p1" && strings.Join(got, " ") != "report#p1 leaflet#p1" {
		t.Fatalf("unit page hits %q, want the PDF pages only (leaflet#p1, report#p1)", got)
	}
	if !strings.Contains(strings.Join(r.Usage.Notes, "; "), "only paginated formats such as PDF have pages") {
		t.Fatalf("notes %q: want the unpaged documents' omission explained", r.Usage.Notes)
	}
	json.Unmarshal(mustCall(t, e, rcp.MethodRetrieve, map[string]any{"query": "volcanic basalt", "k": 10, "unit": "chunk"}), &r)
	if len(r.Hits) < 4 {
		t.Fatalf("unit chunk: %d hits, want every document's", len(r.Hits))
	}
}
