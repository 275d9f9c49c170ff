// Package pdftest writes minimal PDFs for the tests of PDF ingest: the
// tests build their own files instead of carrying binary fixtures.
package pdftest

import (
	"bytes"
	"fmt"
)

// Assemble lays objs out as PDF objects 1…n with their cross-reference
// table. Object 1 is the document catalog; trailer adds entries to the
// trailer dictionary (e.g. "/Info 6 0 R"), or is empty.
func Assemble(objs []string, trailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	if trailer != "" {
		trailer = " " + trailer
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, xref)
	return b.Bytes()
}

// Stream is a stream object holding data; dict adds entries to its
// dictionary (e.g. "/Filter /FlateDecode"), or is empty.
func Stream(dict string, data []byte) string {
	if dict != "" {
		dict += " "
	}
	return fmt.Sprintf("<< %s/Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// OnePage is a PDF whose page tree root is pages (object 2) and whose one
// page (object 3) shows content (object 4, a stream with filter added to
// its dictionary, or none) in Helvetica (object 5, font /F1).
func OnePage(pages string, content []byte, filter string) []byte {
	return Assemble([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		pages,
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		Stream(filter, content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}, "")
}
