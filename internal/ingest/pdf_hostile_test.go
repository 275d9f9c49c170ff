package ingest

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/pdftest"
)

func deflate(data []byte) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	_, _ = w.Write(data)
	_ = w.Close()
	return b.Bytes()
}

// Issue 33 items 3 and 4: a Pages node whose Kids point to itself pinned a
// core forever (238 bytes), /Count 2000000000 on one real page made 2e9
// page lookups, and one FlateDecode content stream of 228 KB became a
// 61 MB answer (911 KB: 245 MB, RSS 1.44 GB). Each is now refused or read
// within its bounds in well under a second.
func TestHostilePDFs(t *testing.T) {
	text := []byte("BT /F1 12 Tf 72 712 Td (Hello hostile world) Tj ET")
	bomb := bytes.Repeat([]byte("BT /F1 12 Tf 72 712 Td (AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA) Tj ET\n"), (MaxPDFStreamBytes/80)+1000)
	cases := []struct {
		name    string
		pdf     []byte
		wantErr error  // nil: extracts
		want    string // text it holds
	}{
		{"valid", pdftest.OnePage("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", text, ""), nil, "Hello hostile world"},
		{"kids point to their own node", pdftest.Assemble([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R 2 0 R] /Count 2000000000 >>"}, ""), ErrNoText, ""},
		{"count 2e9 on one page", pdftest.OnePage("<< /Type /Pages /Kids [3 0 R] /Count 2000000000 >>", text, ""), nil, "Hello hostile world"},
		{"two nodes in a cycle", pdftest.Assemble([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 5 >>", "<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 5 >>"}, ""), ErrNoText, ""},
		{"the same page 100 000 times", pdftest.OnePage("<< /Type /Pages /Kids ["+strings.Repeat("3 0 R ", 100000)+"] /Count 100000 >>", text, ""), ErrTooLarge, ""},
		{"flate bomb", pdftest.OnePage("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", deflate(bomb), "/Filter /FlateDecode"), ErrTooLarge, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			docs, err := ReadUpload(ctx, "x.pdf", c.pdf)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%d-byte PDF took %v", len(c.pdf), d)
			}
			switch c.wantErr {
			case nil:
				if err != nil || len(docs) != 1 || !strings.Contains(docs[0].Text, c.want) || len(docs[0].Text) > 1000 {
					t.Fatalf("docs %d, err %v", len(docs), err)
				}
			case ErrNoText: // an upload without text gives no document
				if err != nil || docs != nil {
					t.Fatalf("docs %d, err %v; want none", len(docs), err)
				}
			default:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
			}
		})
	}
}
