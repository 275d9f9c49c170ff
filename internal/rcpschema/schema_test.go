package rcpschema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/shared"
)

type corpusLine struct {
	Def string          `json:"def"`
	Msg json.RawMessage `json:"msg"`
	Why string          `json:"why"`
}

func corpus(t *testing.T, name string) []corpusLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusLine
	for _, l := range shared.Lines(b) {
		var c corpusLine
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatalf("%s: %v: %s", name, err, l)
		}
		out = append(out, c)
	}
	return out
}

// checkCorpus holds s to the verdicts of testdata/valid.jsonl and
// testdata/invalid.jsonl.
func checkCorpus(t *testing.T, s *Schema, who string) {
	for _, c := range corpus(t, "valid.jsonl") {
		if err := s.Validate(c.Def, c.Msg); err != nil {
			t.Errorf("%s rejects a valid %s %s: %v", who, c.Def, c.Msg, err)
		}
	}
	for _, c := range corpus(t, "invalid.jsonl") {
		if err := s.Validate(c.Def, c.Msg); err == nil {
			t.Errorf("%s accepts an invalid %s (%s): %s", who, c.Def, c.Why, c.Msg)
		}
	}
}

func TestEmbeddedVerdicts(t *testing.T) {
	checkCorpus(t, Embedded(), "our schema")
}

// The specification's normative schema gives the same verdicts on the
// corpus; the conformance runs against this repository's servers
// (conformance.TestOurServersCertify) and every schematest check in the
// tree add the real messages of our servers to that comparison.
func TestAgreesWithNormative(t *testing.T) {
	doc, err := os.ReadFile(shared.Path(t, "rcp", "rcp-1.0.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	normative, err := Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	checkCorpus(t, normative, "the normative schema")
}
