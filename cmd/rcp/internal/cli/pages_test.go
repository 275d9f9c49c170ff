package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/pdftest"
	"github.com/rcpgo/rcpgo/rcp"
)

// pagedPDF builds a PDF with one page per entry of pages (Helvetica text),
// with a correct xref table.
func pagedPDF(pages []string) []byte {
	n := len(pages)
	// Objects: 1 catalog, 2 pages, 3 font, then a (page, contents) pair per page.
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	for i, text := range pages {
		content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 3 0 R >> >> >>", 5+2*i),
			pdftest.Stream("", []byte(content)))
	}
	return pdftest.Assemble(objs, "")
}

// A PDF added with rcp index add is searchable page by page: unit "page"
// returns the page with citation.page, and chunk hits cite their page.
func TestIndexPDFPages(t *testing.T) {
	dir := t.TempDir()
	data, docs := filepath.Join(dir, "data"), filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := []string{"Volcanic basalt flows cooled slowly.", "Glacier moraines record the last advance.", "Coral reefs bleach in warm water."}
	if err := os.WriteFile(filepath.Join(docs, "field.pdf"), pagedPDF(pages), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := func(args ...string) []string { return append(args, serverArgs(t, data)...) }
	if code, out, errs := rcpRun(srv("index", "add", docs)...); code != 0 || !strings.Contains(out, "indexed 1 file") {
		t.Fatalf("add: %d\n%s%s", code, out, errs)
	}
	for _, unit := range []string{"page", ""} {
		args := []string{"query", "--json", "--k", "3"}
		if unit != "" {
			args = append(args, "--unit", unit)
		}
		code, out, errs := rcpRun(srv(append(args, "glacier moraines")...)...)
		var res rcp.RetrieveResult
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) == 0 {
			t.Fatalf("query --unit %q: %d\n%s%s", unit, code, out, errs)
		}
		h := res.Hits[0]
		if h.Citation == nil || h.Citation.Page == nil || *h.Citation.Page != 2 || !strings.Contains(h.TextOf(), "Glacier moraines") ||
			strings.Contains(h.TextOf(), "Coral") {
			t.Fatalf("unit %q: top hit %s", unit, out)
		}
		if unit == "page" && (h.Unit != rcp.UnitPage || !strings.HasSuffix(h.ID.String(), "#p2")) {
			t.Fatalf("page hit %s", out)
		}
	}
}
