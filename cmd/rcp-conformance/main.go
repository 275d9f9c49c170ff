// Command rcp-conformance runs the RCP/1 conformance suite; it is the same
// code as "rcp conformance".
package main

import (
	"os"

	"github.com/rcpgo/rcpgo/conformance"
)

func main() {
	os.Exit(conformance.Main(os.Args[1:], os.Stdout, os.Stderr))
}
