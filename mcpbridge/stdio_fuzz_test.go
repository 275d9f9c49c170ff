package mcpbridge

import (
	"io"
	"testing"
)

// FuzzStdioFrame: whatever one line holds, the stdio transport answers or
// forwards it without panicking.
func FuzzStdioFrame(f *testing.F) {
	for _, s := range []string{`not json`, `[1,2`, `{"id":1,"method":"ping"}`, `[]`, `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"task":{"ttl":1}}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := &stdioConn{w: io.Discard, open: map[string]bool{}, cancelled: map[string]bool{}, drained: make(chan struct{}, 1), closed: make(chan struct{})}
		_ = c.accept(frame)
	})
}
