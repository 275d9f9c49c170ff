package tasks

import (
	"encoding/json"
	"testing"
)

func TestLift(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"task moves to _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.rcpgo/task":{"ttl":5}},"name":"x"}}`},
		{"existing _meta kept", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"task":{}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.rcpgo/task":{},"progressToken":"p"}}}`},
		{"other methods untouched", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"task":{}}}`, ``},
		{"no task untouched", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task"}}`, ``},
		{"invalid JSON untouched", `{"method":"tools/call","task"`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Lift([]byte(tt.in)))
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got != want {
				t.Errorf("Lift = %s\nwant   %s", got, want)
			}
		})
	}
}

// FuzzLift: Lift never panics, and valid JSON stays valid JSON.
func FuzzLift(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"_meta":null,"task":1}}`))
	f.Add([]byte(`[{"method":"tools/call"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Lift(b)
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("Lift(%q) = %q: not JSON", b, out)
		}
	})
}
