package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/internal/testutil/pdftest"
)

// minimalPDF builds a one-page PDF showing text with the standard Helvetica
// font, with a correct xref table.
func minimalPDF(title, text string) []byte {
	content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		pdftest.Stream("", []byte(content)),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Title (%s) >>", title),
	}
	return pdftest.Assemble(objs, "/Info 6 0 R")
}

// writeFiles writes each of files (name → content) into dir.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadFileFormats(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"notes.txt": []byte("Plain text about inverted indexes.\n"),
		"guide.md":  []byte("# BM25 guide\n\nSaturation with k1.\n"),
		"page.html": []byte(`<html><head><title>Fusion</title><style>p{}</style></head><body><h1>RRF</h1><p>Reciprocal rank <b>fusion</b>.</p><script>alert(1)</script></body></html>`),
		"paper.pdf": minimalPDF("Dense retrieval", "Bi-encoders map text to vectors"),
		"corpus.jsonl": []byte(`{"_id":"d1","title":"T1","text":"one","metadata":{"year":2020}}` + "\n\n" +
			`{"_id":7,"title":"T2","text":"two"}` + "\n" + `{"title":"T3","text":"three"}` + "\n"),
		".hidden.txt": []byte("skip me"),
		"image.png":   []byte("not text"),
	}
	writeFiles(t, dir, files)
	paths, skipped, err := Collect([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 5 {
		t.Fatalf("collected %v, want 5 supported visible files", paths)
	}
	if len(skipped) != 1 || !strings.HasSuffix(skipped[0].Path, "image.png") || skipped[0].Reason != "unsupported type .png" {
		t.Fatalf("skipped %+v, want image.png as an unsupported type", skipped)
	}
	ctx := context.Background()
	tests := []struct {
		file, title, textHas, notHas string
		docs                         int
	}{
		{"notes.txt", "notes", "inverted indexes", "", 1},
		{"guide.md", "BM25 guide", "Saturation", "", 1},
		{"page.html", "Fusion", "Reciprocal rank fusion", "alert", 1},
		{"paper.pdf", "Dense retrieval", "Bi-encoders map text to vectors", "", 1},
		{"corpus.jsonl", "T1", "one", "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			docs, err := ReadFile(ctx, filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != tt.docs {
				t.Fatalf("docs = %d, want %d", len(docs), tt.docs)
			}
			d := docs[0]
			if d.Meta["title"] != tt.title {
				t.Errorf("title = %v, want %q", d.Meta["title"], tt.title)
			}
			if !strings.Contains(d.Text, tt.textHas) {
				t.Errorf("text %q lacks %q", d.Text, tt.textHas)
			}
			if tt.notHas != "" && strings.Contains(d.Text, tt.notHas) {
				t.Errorf("text %q has %q", d.Text, tt.notHas)
			}
			if d.ID == "" {
				t.Error("empty id")
			}
		})
	}
	docs, _ := ReadFile(ctx, filepath.Join(dir, "corpus.jsonl"))
	if docs[0].ID != "d1" || docs[1].ID != "7" || !strings.HasPrefix(docs[2].ID, "sha256:") {
		t.Errorf("jsonl ids = %q %q %q", docs[0].ID, docs[1].ID, docs[2].ID)
	}
	if docs[0].Meta["year"] != float64(2020) {
		t.Errorf("metadata not kept: %v", docs[0].Meta)
	}
}

// A file's document is named by its path, not its content: an edited file
// keeps its id (so re-adding it replaces the old text) and only its content
// hash changes.
func TestReadFileStableIdentity(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.md")
	write := func(s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# Plan\n\nship on Monday\n")
	first, err := ReadFile(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	write("# Plan\n\nship on Friday\n")
	edited, err := ReadFile(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := SourceID(p)
	if first[0].ID != want || edited[0].ID != want || !strings.HasPrefix(want, "file:///") {
		t.Fatalf("ids %q %q, want both %q", first[0].ID, edited[0].ID, want)
	}
	if first[0].Meta[MetaContentHash] == edited[0].Meta[MetaContentHash] {
		t.Fatal("content hash did not change with the text")
	}
	again, _ := ReadFile(context.Background(), p)
	if again[0].Meta[MetaContentHash] != edited[0].Meta[MetaContentHash] {
		t.Fatal("content hash not stable")
	}
}

// Finding 7: what ingest leaves out it reports, binary content is refused
// whatever its extension, UTF-16 and BOMs are decoded, and the common note
// formats are read.
func TestReadFileEncodingsAndFormats(t *testing.T) {
	dir := t.TempDir()
	utf16le := []byte{0xFF, 0xFE}
	for _, r := range "Grüße aus UTF-16" {
		utf16le = append(utf16le, byte(r), byte(r>>8))
	}
	var utf16beNoBOM []byte
	for _, r := range "big endian notes" {
		utf16beNoBOM = append(utf16beNoBOM, byte(r>>8), byte(r))
	}
	elf := append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"), bytes.Repeat([]byte{0, 1, 2, 3}, 64)...)
	files := map[string][]byte{
		"le.txt":      utf16le,
		"be.txt":      utf16beNoBOM,
		"bom.md":      []byte("\xEF\xBB\xBF# Title after BOM\n\nbody"),
		"program.txt": elf,
		"empty.txt":   []byte("  \n"),
		"page.mdx":    []byte("---\ntitle: \"MDX page\"\n---\n\nimport X from 'x'\n\n# Heading\n"),
		"doc.rst":     []byte("Retrieval notes\n===============\n\nSome text.\n"),
		"todo.org":    []byte("#+TITLE: Org agenda\n* TODO write\n"),
		"book.adoc":   []byte("= AsciiDoc book\n\nChapter text.\n"),
		"main.go":     []byte("package main\n\nfunc main() {}\n"),
	}
	writeFiles(t, dir, files)
	paths, skipped, err := Collect([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 9 || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "--code") {
		t.Fatalf("paths %v skipped %+v", paths, skipped)
	}
	if paths, _, _ = Collect([]string{dir}, Options{Code: true}); len(paths) != 10 {
		t.Fatalf("with Code: %v", paths)
	}
	tests := []struct {
		file, title, text string
		err               error
	}{
		{"le.txt", "le", "Grüße aus UTF-16", nil},
		{"be.txt", "be", "big endian notes", nil},
		{"bom.md", "Title after BOM", "# Title after BOM", nil},
		{"program.txt", "", "", ErrBinary},
		{"empty.txt", "", "", ErrNoText},
		{"page.mdx", "MDX page", "# Heading", nil},
		{"doc.rst", "Retrieval notes", "Some text.", nil},
		{"todo.org", "Org agenda", "* TODO write", nil},
		{"book.adoc", "AsciiDoc book", "Chapter text.", nil},
		{"main.go", "main", "func main() {}", nil},
	}
	for _, tt := range tests {
		docs, err := ReadFile(context.Background(), filepath.Join(dir, tt.file))
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err %v, want %v", tt.file, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if d := docs[0]; d.Meta["title"] != tt.title || !strings.HasPrefix(d.Text, strings.SplitN(tt.text, "\n", 2)[0]) && !strings.Contains(d.Text, tt.text) {
			t.Errorf("%s: title %q text %q", tt.file, d.Meta["title"], d.Text)
		}
	}
}

func TestReadFileBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := map[string][]byte{
		"broken.pdf":   []byte("%PDF-1.4\nthis is not a pdf"),
		"broken.jsonl": []byte("{\"_id\": \"a\", \"text\": \n"),
	}
	for name, b := range bad {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(context.Background(), p); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	// A missing path is reported by name and fails the command; the rest
	// is still collected (issue 34: one rule for exit codes).
	files, skipped, err := Collect([]string{filepath.Join(dir, "missing"), filepath.Join(dir, "broken.pdf")}, Options{})
	if err != nil || len(files) != 1 || len(skipped) != 1 || !skipped[0].Failed || !strings.Contains(skipped[0].Reason, "no such file") {
		t.Errorf("missing path: files %v skipped %+v err %v, want a failed skip and the other file", files, skipped, err)
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"_id":"a","text":"x"}`))
	f.Add([]byte(`{"_id":1.5,"title":"t","text":"x","metadata":{"a":[1]}}` + "\n\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		docs, err := ReadJSONL(context.Background(), bytes.NewReader(b), "fuzz")
		if err == nil {
			for _, d := range docs {
				if d.ID == "" {
					t.Fatal("document without id")
				}
			}
		}
	})
}

func FuzzPDFText(f *testing.F) {
	f.Add(minimalPDF("t", "hello"))
	f.Add([]byte("%PDF-1.4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = pdfText(context.Background(), b) // must not panic
	})
}

func TestReadUpload(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		body      []byte
		wantTitle string
		wantText  string
		wantDocs  int
		wantErr   string
	}{
		{name: "notes.txt", body: []byte("  plain words \n"), wantTitle: "notes", wantText: "plain words", wantDocs: 1},
		{name: "Guide.MD", body: []byte("# BM25 guide\n\nk1"), wantTitle: "BM25 guide", wantText: "# BM25 guide\n\nk1", wantDocs: 1},
		{name: "p.html", body: []byte(`<title>Fusion</title><p>RRF <b>fuses</b></p>`), wantTitle: "Fusion", wantText: "RRF fuses", wantDocs: 1},
		{name: "paper.pdf", body: minimalPDF("Dense", "Bi-encoders map text"), wantTitle: "Dense", wantText: "Bi-encoders map text", wantDocs: 1},
		{name: "c.jsonl", body: []byte(`{"_id":"a","text":"x"}` + "\n" + `{"_id":"b","text":"y"}`), wantDocs: 2},
		{name: "blank.txt", body: []byte(" \n\t"), wantDocs: 0},
		{name: "image.png", body: []byte("x"), wantErr: "unsupported file type"},
		{name: "bad.pdf", body: []byte("%PDF-1.4 broken"), wantErr: "bad.pdf"},
		{name: "bad.jsonl", body: []byte("{not json"), wantErr: "bad.jsonl:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := ReadUpload(ctx, tt.name, tt.body)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(docs) != tt.wantDocs {
				t.Fatalf("%d docs, %v", len(docs), err)
			}
			if tt.wantDocs != 1 {
				return
			}
			d := docs[0]
			if d.Meta["title"] != tt.wantTitle || !strings.Contains(d.Text, tt.wantText) || d.ID != ContentID(d.Text) || d.Meta["filename"] != tt.name {
				t.Fatalf("%+v", d)
			}
			if _, ok := d.Meta["path"]; ok {
				t.Fatal("an upload has no server path")
			}
		})
	}
}

func FuzzDecodeBytes(f *testing.F) {
	f.Add([]byte("plain"))
	f.Add([]byte{0xFF, 0xFE, 'a', 0})
	f.Add([]byte{0, 'a', 0, 'b'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if out, _, err := decodeText(b, len(b) > 0 && b[0] == '<'); err == nil && (bytes.IndexByte(out, 0) >= 0 || !utf8.Valid(out)) {
			t.Fatalf("decoded text %q holds NUL", out)
		}
	})
}
