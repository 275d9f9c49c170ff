// Package schematest validates RCP messages in tests against the normative
// JSON Schema (../shared/rcp/rcp-1.0.schema.json, draft 2020-12) with
// github.com/santhosh-tekuri/jsonschema/v6. Tests fail loudly when the
// schema is missing.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rcpgo/rcpgo/internal/shared"
)

const schemaURL = "https://rcp.local/rcp-1.0.schema.json"

var (
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	loadErr  error
	compiled = map[string]*jsonschema.Schema{}
)

// SchemaPath returns the path of the shared schema (failing tb when missing).
func SchemaPath(tb testing.TB) string {
	tb.Helper()
	return shared.Path(tb, "rcp", "rcp-1.0.schema.json")
}

func schema(tb testing.TB, loc string) *jsonschema.Schema {
	tb.Helper()
	path := SchemaPath(tb)
	mu.Lock()
	defer mu.Unlock()
	if compiler == nil && loadErr == nil {
		f, err := os.Open(path)
		if err != nil {
			loadErr = err
		} else {
			doc, err := jsonschema.UnmarshalJSON(f)
			f.Close()
			if err != nil {
				loadErr = fmt.Errorf("parsing %s: %w", path, err)
			} else {
				c := jsonschema.NewCompiler()
				if err := c.AddResource(schemaURL, doc); err != nil {
					loadErr = err
				} else {
					compiler = c
				}
			}
		}
	}
	if loadErr != nil {
		tb.Fatalf("schematest: %v", loadErr)
	}
	if s, ok := compiled[loc]; ok {
		return s
	}
	s, err := compiler.Compile(schemaURL + loc)
	if err != nil {
		tb.Fatalf("schematest: compiling %s: %v", loc, err)
	}
	compiled[loc] = s
	return s
}

// Check validates b against $defs/defName and returns the error (nil when
// valid), for tests that expect invalid input.
func Check(tb testing.TB, defName string, b []byte) error {
	tb.Helper()
	s := schema(tb, "#/$defs/"+defName)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
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
		tb.Fatalf("schematest: %v", err)
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
		return string(b[:400]) + "…"
	}
	return string(b)
}
