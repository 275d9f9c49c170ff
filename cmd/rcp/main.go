// Command rcp is the Retrieval Context Protocol command line: query and
// ingest into any RCP server, certify servers (conformance), evaluate
// retrieval quality (eval) and benchmark (bench). See `rcp help`.
package main

import (
	"os"

	"github.com/rcpgo/rcpgo/cmd/rcp/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
