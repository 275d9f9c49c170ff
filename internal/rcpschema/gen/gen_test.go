package main

import (
	"bytes"
	"testing"

	"github.com/rcpgo/rcpgo/internal/rcpschema"
)

// The committed schema is what the generator writes from today's types.
func TestGenerated(t *testing.T) {
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, rcpschema.JSON) {
		t.Fatal("internal/rcpschema/rcp-1.0.schema.json is stale: run go generate ./internal/rcpschema and commit the result")
	}
}
