// Package rcpschema is rcpgo's own JSON Schema (draft 2020-12) of RCP/1
// messages, generated from the wire types of package rcp and embedded, so
// that `rcp conformance` validates shapes and certifies with nothing beside
// the binary, and tests validate every message they see.
//
// The file rcp-1.0.schema.json is generated: run `go generate
// ./internal/rcpschema` after changing a wire type, and TestGenerated fails
// until the committed file equals a fresh generation. It is held against
// the normative schema of the specification (which the repository does not
// carry) by TestAgreesWithNormative and by the conformance runs against
// this repository's servers.
package rcpschema

import _ "embed"

//go:generate go run ./gen

// ID is the schema's $id.
const ID = "https://github.com/rcpgo/rcpgo/internal/rcpschema/rcp-1.0.schema.json"

// JSON is the generated schema document.
//
//go:embed rcp-1.0.schema.json
var JSON []byte
