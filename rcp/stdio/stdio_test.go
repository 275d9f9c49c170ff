package stdio_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp/stdio"
)

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	for _, tc := range []struct {
		frame  string
		id     string // the id of an accepted message
		code   int    // 0: accepted
		reason string // a part of the reason
		pid    string // the Problem's id
		batch  bool
	}{
		{frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, id: `1`},
		{frame: `{"jsonrpc":"2.0","id":"a\u0062","method":"ping"}`, id: `"a\u0062"`},
		{frame: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{frame: `{"jsonrpc":"2.0","id":7,"result":{}}`, id: `7`},
		{frame: `not json`, code: stdio.CodeParseError, reason: "invalid JSON"},
		{frame: "\xff", code: stdio.CodeParseError, reason: "UTF-8"},
		{frame: `{"jsonrpc":"2.0","id":3,"method":"x","params":` + deep + `}`, code: stdio.CodeParseError, reason: "nesting", pid: `3`},
		{frame: `[]`, code: stdio.CodeInvalidRequest, reason: "empty batch"},
		{frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: stdio.CodeInvalidRequest, reason: "batches", batch: true},
		{frame: `{"method":"ping","params":{}}`, code: stdio.CodeInvalidRequest, reason: `"jsonrpc" must be "2.0"`},
		{frame: `{"jsonrpc":"1.0","id":"q","method":"ping"}`, code: stdio.CodeInvalidRequest, reason: `"jsonrpc" must be "2.0"`, pid: `"q"`},
		{frame: `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, code: stdio.CodeInvalidRequest, reason: `"id"`},
		{frame: `{"jsonrpc":"2.0","id":5,"method":4}`, code: stdio.CodeInvalidRequest, reason: `"method"`, pid: `5`},
		{frame: `42`, code: stdio.CodeInvalidRequest, reason: "object"},
	} {
		id, p := stdio.Check([]byte(tc.frame), 0)
		if tc.code == 0 {
			if p != nil || string(id) != tc.id {
				t.Errorf("%.40s: id %s, problem %+v; want id %s and no problem", tc.frame, id, p, tc.id)
			}
			continue
		}
		if p == nil || id != nil {
			t.Errorf("%.40s: id %s, problem %+v; want code %d", tc.frame, id, p, tc.code)
			continue
		}
		if p.Code != tc.code || !strings.Contains(p.Reason, tc.reason) || string(p.ID) != tc.pid || p.Batch != tc.batch {
			t.Errorf("%.40s: %+v (id %s); want code %d, reason with %q, id %q, batch %v", tc.frame, p, p.ID, tc.code, tc.reason, tc.pid, tc.batch)
		}
	}
}

func TestCheckDepthLimit(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[[[1]]]}}`)
	if _, p := stdio.Check(frame, 4); p == nil || p.Code != stdio.CodeParseError || string(p.ID) != "1" {
		t.Errorf("depth 5 under a limit of 4: %+v", p)
	}
	if _, p := stdio.Check(frame, 5); p != nil {
		t.Errorf("depth 5 under a limit of 5: %+v", p)
	}
}

func TestReader(t *testing.T) {
	in := "\xEF\xBB\xBF{\"a\":1}\r\n\n  \n" + strings.Repeat("x", 40) + "\n{\"b\":2}"
	rd := stdio.NewReader(strings.NewReader(in), 32)
	var got []string
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, stdio.ErrFrameTooLarge) {
			got = append(got, "too large")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f))
	}
	if want := []string{`{"a":1}`, "too large", `{"b":2}`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("frames %q, want %q", got, want)
	}
}

// FuzzCheck: whatever a frame holds, Check answers without panicking, and
// a Problem always carries a JSON-RPC code and a reason.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`not json`, `[1,2`, `{"id":1,"method":"ping"}`, `[]`, `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"task":{"ttl":1}}}`, `{"x":[[[[{"id":2}]]]],"id":"z"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		_, p := stdio.Check(frame, 8)
		if p != nil && (p.Reason == "" || (p.Code != stdio.CodeParseError && p.Code != stdio.CodeInvalidRequest)) {
			t.Errorf("%q: problem %+v", frame, p)
		}
	})
}
