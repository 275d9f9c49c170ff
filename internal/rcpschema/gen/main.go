// Command gen writes internal/rcpschema/rcp-1.0.schema.json, rcpgo's own
// JSON Schema of RCP/1 messages, from the wire types of package rcp. It is
// run by `go generate ./internal/rcpschema` (in that directory);
// TestGenerated fails while the committed file differs from its output.
package main

import (
	"log"
	"os"
)

func main() {
	b, err := Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("rcp-1.0.schema.json", b, 0o644); err != nil {
		log.Fatal(err)
	}
}
