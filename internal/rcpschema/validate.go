package rcpschema

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled RCP/1 schema document: ours (Embedded) or another
// one with the same $defs names, such as the specification's normative
// schema, which `rcp conformance --schema FILE` adds on top of ours.
type Schema struct {
	url string
	mu  sync.Mutex // the compiler is not safe for concurrent use
	c   *jsonschema.Compiler
	def map[string]*jsonschema.Schema
}

// Load compiles an RCP/1 schema document (draft 2020-12, with $defs).
func Load(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("rcpschema: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("rcpschema: the schema is not a JSON object")
	}
	if _, ok := m["$defs"].(map[string]any); !ok {
		return nil, errors.New("rcpschema: the schema has no $defs (is it an RCP/1 schema?)")
	}
	// One URL per document whatever its $id says, so two schemas with the
	// same $id never meet in one compiler.
	url := fmt.Sprintf("https://rcpgo.invalid/schema-%p.json", m)
	m["$id"] = url
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("rcpschema: %w", err)
	}
	if _, err := c.Compile(url); err != nil {
		return nil, fmt.Errorf("rcpschema: %w", err)
	}
	return &Schema{url: url, c: c, def: map[string]*jsonschema.Schema{}}, nil
}

var embedded = sync.OnceValues(func() (*Schema, error) { return Load(JSON) })

// Embedded returns our generated schema, compiled once.
func Embedded() *Schema {
	s, err := embedded()
	if err != nil {
		panic(err) // the embedded document is tested (TestEmbeddedVerdicts)
	}
	return s
}

// Validate checks raw JSON against $defs/def. An error names what failed.
func (s *Schema) Validate(def string, raw []byte) error {
	s.mu.Lock()
	sch, ok := s.def[def]
	if !ok {
		var err error
		sch, err = s.c.Compile(s.url + "#/$defs/" + def)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("rcpschema: $defs/%s: %w", def, err)
		}
		s.def[def] = sch
	}
	s.mu.Unlock()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return sch.Validate(v)
}
