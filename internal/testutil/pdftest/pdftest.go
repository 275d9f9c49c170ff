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
