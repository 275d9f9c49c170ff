package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

func init() {
	commands["extract"] = command{summary: "extract the text of a file read on stdin as NAME (the console runs it as a child process)", run: runExtract}
}

// runExtract is the child of the console's isolated extraction
// (ingest.Isolated): `rcpd extract NAME < FILE` prints the file's
// documents as JSON.
func runExtract(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: rcpd extract NAME < FILE   (NAME's extension picks the format; prints the documents as JSON)")
		if len(args) == 1 {
			return 0
		}
		return 2
	}
	if err := ingest.ChildMain(ctx, args[0], stdin, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// isolatedExtract runs the console's extractions in a child rcpd (this
// executable), falling back to in-process extraction when it cannot name
// itself.
func isolatedExtract() func(ctx context.Context, name string, b []byte) ([]rcp.Document, error) {
	exe, err := os.Executable()
	if err != nil {
		return ingest.ReadUpload
	}
	return ingest.Isolated{Argv: []string{exe, "extract"}}.ReadUpload
}
