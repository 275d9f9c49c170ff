// Package wiretest checks the frames and values the SDK's tests put on the
// wire. The SDK is a module with no requirements, so it cannot validate
// them against the normative JSON Schema itself: here every one is checked
// for what the standard library can tell (well-formed JSON, a JSON-RPC 2.0
// envelope), and, when $RCPGO_WIRE_LOG names a directory, appended to
// frames.jsonl in it. The root module's internal/repocheck runs the SDK's
// tests that way and validates every logged entry against the schema
// (TestSDKWireMatchesSchema), so the SDK's traffic is held to the schema
// as before without the SDK depending on a validator.
//
// The checks report with tb.Errorf only: they run on server goroutines.
package wiretest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// LogEnv names the directory the checked entries are logged to.
const LogEnv = "RCPGO_WIRE_LOG"

// LogFile is the name of the log inside that directory.
const LogFile = "frames.jsonl"

// Entry is one logged check. Check is "message" (JSON is a frame: one
// message or a batch), "result" (JSON is the result of Method) or "value"
// (JSON is an instance of the schema's $defs/Def).
type Entry struct {
	Check  string `json:"check"`
	Method string `json:"method,omitempty"`
	Def    string `json:"def,omitempty"`
	JSON   string `json:"json"`
}

// Message checks that frame is one JSON-RPC 2.0 message or a batch of
// them, as a peer would accept it.
func Message(tb testing.TB, frame []byte) {
	tb.Helper()
	f := jsonrpc.Decode(frame, jsonrpc.Options{MaxDepth: 10000})
	if f.Code != 0 {
		tb.Errorf("wiretest: %s is not a JSON-RPC frame: %s", truncate(frame), f.Reason)
		return
	}
	for _, m := range f.Messages {
		if m.Kind == jsonrpc.KindInvalid || m.Compact {
			tb.Errorf("wiretest: %s is not a JSON-RPC 2.0 message: %s", truncate(frame), m.Reason)
			return
		}
	}
	record(tb, Entry{Check: "message", JSON: string(frame)})
}

// Result checks that result, the result of a call to method, is JSON.
func Result(tb testing.TB, method string, result []byte) {
	tb.Helper()
	if !json.Valid(result) {
		tb.Errorf("wiretest: the result of %s is not JSON: %s", method, truncate(result))
		return
	}
	record(tb, Entry{Check: "result", Method: method, JSON: string(result)})
}

// Response checks a whole response frame for method: the frame as a
// message and, for a success, its result.
func Response(tb testing.TB, method string, frame []byte) {
	tb.Helper()
	Message(tb, frame)
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(frame, &r) == nil && r.Result != nil {
		Result(tb, method, r.Result)
	}
}

// Value checks that b, an instance of the schema's $defs/def, is JSON.
func Value(tb testing.TB, def string, b []byte) {
	tb.Helper()
	if !json.Valid(b) {
		tb.Errorf("wiretest: %s is not JSON: %s", def, truncate(b))
		return
	}
	record(tb, Entry{Check: "value", Def: def, JSON: string(b)})
}

var (
	mu  sync.Mutex
	log *os.File
)

// record appends e to the log when $RCPGO_WIRE_LOG is set.
func record(tb testing.TB, e Entry) {
	tb.Helper()
	dir := os.Getenv(LogEnv)
	if dir == "" {
		return
	}
	line, err := json.Marshal(e)
	if err == nil {
		err = appendLine(dir, line)
	}
	if err != nil {
		tb.Errorf("wiretest: logging to %s: %v", dir, err)
	}
}

func appendLine(dir string, line []byte) error {
	mu.Lock()
	defer mu.Unlock()
	if log == nil {
		f, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		log = f // closed when the test binary exits
	}
	if _, err := log.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}
