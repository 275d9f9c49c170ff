package main

import (
	"context"
	"os"
	"testing"
)

// The test binary stands in for rcpd as the console's extractor child
// (isolatedExtract runs os.Executable() extract NAME).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "extract" {
		os.Exit(runExtract(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
