package rcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// fuzzHandler answers quickly whatever it is asked.
type fuzzHandler struct{}

func (fuzzHandler) Describe(context.Context) Description {
	return Description{Server: PeerInfo{Name: "fuzz"}, Capabilities: testCaps()}
}

func (fuzzHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodRetrieve:
		var p RetrieveParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		_ = ReportProgress(ctx, ProgressParams{Stage: "recall"})
		Log(ctx, LogInfo, "x", nil)
		return &RetrieveResult{Hits: []Hit{{ID: StringID("a"), Score: 1}}, Meta: RequestMeta(ctx)}, nil
	case MethodEmbed:
		var p EmbedParams
		return nil, DecodeParams(params, &p)
	}
	return params, nil
}

// FuzzDispatch feeds arbitrary frames to a session (both fresh and
// initialized) and checks that every frame gets at most one answer, that
// answers are JSON-RPC responses with valid ids, and nothing panics.
func FuzzDispatch(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"q","k":1,"_meta":{"progressToken":1,"logLevel":"debug","deadlineMs":5}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":1}},{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":1}},7]`,
		`{"jsonrpc":"2.0","id":"s","method":"x-acme/echo","params":{"a":[1]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"embed","params":{"inputs":[{"type":"image"}]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"shutdown"}`,
		`{"method":"ping"}`, `[]`, `{`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	srv := NewServer(fuzzHandler{}, &ServerOptions{Logger: quietLogger(), RequestTimeout: time.Second, MaxBatch: 64})
	f.Fuzz(func(t *testing.T, frame []byte, initialized bool) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sess := srv.newSession(ctx, sessionStream)
		notes := make(chan []byte, 1024)
		sess.write = func(b []byte) error {
			select {
			case notes <- b:
			default:
			}
			return nil
		}
		if initialized {
			sess.handleFrame([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"capabilities":{"log":{}}}}`), func([]byte) error { return nil }, frameOpts{})
		}
		answers := make(chan []byte, 2)
		sess.handleFrame(frame, func(b []byte) error { answers <- b; return nil }, frameOpts{notify: sess.writeNotification})
		var out []byte
		select {
		case out = <-answers:
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer (not even nil) for %q", frame)
		}
		sess.wait()
		select {
		case extra := <-answers:
			t.Fatalf("second answer %s for %q", extra, frame)
		default:
		}
		if out == nil {
			return
		}
		fr := jsonrpc.Decode(out, jsonrpc.Options{MaxDepth: 10000})
		if fr.Code != 0 {
			t.Fatalf("answer is not JSON-RPC: %s", out)
		}
		for _, m := range fr.Messages {
			if m.Kind != jsonrpc.KindResponse {
				t.Fatalf("answer member is not a response: %s", out)
			}
		}
		close(notes)
		for n := range notes {
			if nf := jsonrpc.Decode(n, jsonrpc.Options{}); nf.Code != 0 || nf.Messages[0].Kind != jsonrpc.KindNotification {
				t.Fatalf("bad notification %s", n)
			}
		}
	})
}
