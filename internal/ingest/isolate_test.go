package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/pdftest"
)

// The test binary is its own extractor child when RCPGO_INGEST_CHILD
// names a file.
func TestMain(m *testing.M) {
	if name := os.Getenv("RCPGO_INGEST_CHILD"); name != "" {
		if err := ChildMain(context.Background(), name, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child returns an Isolated running this test binary as the extractor.
func child(name string) Isolated {
	return Isolated{Argv: []string{os.Args[0], "-test.run=^$"}, Env: []string{"RCPGO_INGEST_CHILD=" + name}, Timeout: time.Minute} // a loaded CI machine
}

// Extraction in a child process: the documents come back as in process,
// errors keep their message, and a child past its deadline or its memory
// bound is stopped.
func TestIsolatedExtraction(t *testing.T) {
	ctx := context.Background()
	pdf := pdftest.OnePage("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", []byte("BT /F1 12 Tf 72 712 Td (Hello isolated world) Tj ET"), "")
	docs, err := child("x.pdf").ReadUpload(ctx, "x.pdf", pdf)
	if err != nil || len(docs) != 1 || !strings.Contains(docs[0].Text, "Hello isolated world") || docs[0].Meta["format"] != "pdf" {
		t.Fatalf("isolated extraction: %+v, %v", docs, err)
	}
	bomb := pdftest.OnePage("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", deflate([]byte(strings.Repeat("BT (A) Tj ET\n", MaxPDFStreamBytes/12+10))), "/Filter /FlateDecode")
	if _, err := child("b.pdf").ReadUpload(ctx, "b.pdf", bomb); err == nil || !strings.Contains(err.Error(), "expands beyond") {
		t.Fatalf("bomb through the child: %v", err)
	}
	slow := child("x.pdf")
	slow.Timeout = time.Millisecond
	if _, err := slow.ReadUpload(ctx, "x.pdf", pdf); !errors.Is(err, ErrIsolation) {
		t.Fatalf("past the deadline: %v", err)
	}
	small := child("x.txt")
	small.MaxRSS = 1 << 20 // any Go process is bigger
	small.Timeout = 30 * time.Second
	start := time.Now()
	if _, err := small.ReadUpload(ctx, "x.txt", []byte(strings.Repeat("words ", 1<<20))); !errors.Is(err, ErrIsolation) || time.Since(start) > 10*time.Second {
		t.Fatalf("over the memory bound: %v after %v", err, time.Since(start))
	}
}
