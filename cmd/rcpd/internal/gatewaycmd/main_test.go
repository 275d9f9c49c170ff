package gatewaycmd

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/rcpgo/rcpgo/internal/ingest"
)

// The test binary stands in for rcpd as the console's extractor child.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "extract" {
		if err := ingest.ChildMain(context.Background(), os.Args[2], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
