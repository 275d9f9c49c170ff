// Package schematest validates RCP messages in tests against the project's
// own schema (internal/rcpschema, generated from the wire types and
// embedded), so every test runs its checks in a fresh clone.
//
// When the normative schema of the specification is in the shared data
// (../shared/rcp/rcp-1.0.schema.json, or under $RCPGO_SHARED), every message
// is validated against it too, and a message the two schemas judge
// differently fails the test: the whole suite then holds our schema to the
// normative one on the real messages of our servers.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/rcpgo/rcpgo/internal/rcpschema"
	"github.com/rcpgo/rcpgo/internal/testutil/shared"
)

// normative returns the specification's schema when the shared data has it.
var normative = sync.OnceValues(func() (*rcpschema.Schema, error) {
	p, ok := shared.Lookup("rcp", "rcp-1.0.schema.json")
	if !ok {
		return nil, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return rcpschema.Load(b)
})

// Check validates b against $defs/defName of our schema and returns the
// error (nil when valid), for tests that expect invalid input. With the
// normative schema at hand, a different verdict from it fails tb.
func Check(tb testing.TB, defName string, b []byte) error {
	tb.Helper()
	err := rcpschema.Embedded().Validate(defName, b)
	spec, lerr := normative()
	if lerr != nil {
		tb.Errorf("schematest: the normative schema: %v", lerr) // not Fatalf: Check may run on any goroutine
	}
	if spec != nil {
		serr := spec.Validate(defName, b)
		if (err == nil) != (serr == nil) {
			tb.Errorf("schematest: our schema and the normative one disagree on %s as $defs/%s:\nours: %v\nnormative: %v",
				truncate(b), defName, verdict(err), verdict(serr))
		}
	}
	return err
}

func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	return err.Error()
}

// Validate fails tb unless b is valid against $defs/defName.
func Validate(tb testing.TB, defName string, b []byte) {
	tb.Helper()
	if err := Check(tb, defName, b); err != nil {
		tb.Errorf("schematest: %s does not validate against $defs/%s:\n%v", truncate(b), defName, err)
	}
}

// ValidateMessage fails tb unless b is one valid RCP frame ($defs/Message),
// or a batch array of them.
func ValidateMessage(tb testing.TB, b []byte) {
	tb.Helper()
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var members []json.RawMessage
		if err := json.Unmarshal(b, &members); err != nil {
			tb.Errorf("schematest: batch is not a JSON array: %v", err)
			return
		}
		for _, m := range members {
			Validate(tb, "Message", m)
		}
		return
	}
	Validate(tb, "Message", b)
}

// ValidateResult fails tb unless result is valid for method ($defs/ResultFor).
func ValidateResult(tb testing.TB, method string, result []byte) {
	tb.Helper()
	env, err := json.Marshal(struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}{method, result})
	if err != nil {
		tb.Errorf("schematest: %v", err)
		return
	}
	Validate(tb, "ResultFor", env)
}

// ValidateResponse validates a whole response frame for method: the frame
// as a Message and, for a success, its result via ResultFor.
func ValidateResponse(tb testing.TB, method string, frame []byte) {
	tb.Helper()
	ValidateMessage(tb, frame)
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(frame, &r) == nil && r.Result != nil {
		ValidateResult(tb, method, r.Result)
	}
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return fmt.Sprintf("%s…", b[:400])
	}
	return string(b)
}
