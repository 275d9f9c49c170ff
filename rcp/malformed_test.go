package rcp

import (
	"strings"
	"testing"
	"time"
)

// noAnswer marks frames that must not be answered at all.
const noAnswer = 1

func deep(n int, open, close string) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// malformedFrames is the §4/§11/§4.6 malformed-input table: each frame with
// the exact code it must be answered with (0: a result, noAnswer: silence),
// and the id the answer must carry ("" to skip the check).
var malformedFrames = []struct {
	name  string
	frame string
	code  int
	id    string
	init  bool // send on an initialized session
}{
	{"truncated object", `{`, -32700, "null", false},
	{"unterminated request", `{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "null", false},
	{"bare word", `nope`, -32700, "null", false},
	{"trailing comma", `{"jsonrpc":"2.0","id":1,"method":"ping",}`, -32700, "null", false},
	{"single quotes", `{'jsonrpc':'2.0','id':1,'method':'ping'}`, -32700, "null", false},
	{"unterminated batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}`, -32700, "null", false},
	{"two objects on one line", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, -32700, "null", false},
	{"NUL byte", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\x00", -32700, "null", false},
	{"raw control character in a string", "{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"ping\"}", -32700, "null", false},
	{"invalid UTF-8 in a string", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}", -32700, "null", false},
	{"invalid UTF-8 in params", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"nonce\":\"\xc3\x28\"}}", -32700, "null", false},
	{"overlong UTF-8 encoding", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"nonce\":\"\xc0\xaf\"}}", -32700, "null", false},
	{"UTF-8 encoded surrogate", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"nonce\":\"\xed\xa0\x80\"}}", -32700, "null", false},
	{"BOM in the middle of the stream", "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", -32700, "null", false},
	{"10000-deep arrays", deep(10000, "[", "]"), -32700, "null", false},
	{"10000-deep objects in params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":` + deep(10000, `{"a":`, "}") + `}}`, -32700, "null", false},
	{"10000-deep arrays in params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":` + deep(10000, "[", "]") + `}}`, -32700, "null", false},
	{"oversize frame", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"` + strings.Repeat("z", 70<<10) + `"}}`, -32013, "null", false},
	{"a JSON string", `"just a string"`, -32600, "null", false},
	{"a JSON number", `42`, -32600, "null", false},
	{"JSON null", `null`, -32600, "null", false},
	{"JSON true", `true`, -32600, "null", false},
	{"empty object", `{}`, -32600, "null", false},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600, "1", false},
	{"jsonrpc as a number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`, -32600, "1", false},
	{"jsonrpc missing", `{"id":1,"method":"ping"}`, -32600, "1", false},
	{"jsonrpc duplicated, last wins", `{"jsonrpc":"2.0","id":1,"method":"ping","jsonrpc":"1.0"}`, -32600, "1", false},
	{"method missing", `{"jsonrpc":"2.0","id":1}`, -32600, "1", false},
	{"method a number", `{"jsonrpc":"2.0","id":1,"method":42}`, -32600, "1", false},
	{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`, -32600, "1", false},
	{"method an object", `{"jsonrpc":"2.0","id":1,"method":{"name":"ping"}}`, -32600, "1", false},
	{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null", false},
	{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "null", false},
	{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null", false},
	{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "null", false},
	{"2^60 id is fine", `{"jsonrpc":"2.0","id":1152921504606846976,"method":"ping"}`, 0, "1152921504606846976", false},
	{"2^70 id is fine", `{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}`, 0, "1180591620717411303424", false},
	{"float id is fine", `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, 0, "2.5", false},
	{"array params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, -32602, "1", false},
	{"string params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, -32600, "1", false},
	{"number params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":5}`, -32600, "1", false},
	{"boolean params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":true}`, -32600, "1", false},
	{"empty batch", `[]`, -32600, "null", false},
	{"compact envelope on stdio", `{"method":"ping","params":{}}`, -32600, "null", false},
	{"object nonce", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":{"a":1}}}`, -32602, "1", false},
	{"array nonce", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":[1]}}`, -32602, "1", false},
	{"boolean nonce", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":false}}`, -32602, "1", false},
	{"string protocolVersion", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}`, -32602, "1", false},
	{"fractional protocolVersion", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1.5}}`, -32602, "1", false},
	{"protocolVersion beyond 2^53", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":9007199254740993}}`, -32602, "1", false},
	{"client as a string", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"client":"me"}}`, -32602, "1", false},
	{"capabilities as an array", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"capabilities":[]}}`, -32602, "1", false},
	{"cancel carrying an id", `{"jsonrpc":"2.0","id":1,"method":"notifications/cancel","params":{"id":1}}`, -32600, "1", false},
	{"a response sent to the server", `{"jsonrpc":"2.0","id":1,"result":{}}`, noAnswer, "", false},
	{"an error response sent to the server", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, noAnswer, "", false},
	{"notification for ping", `{"jsonrpc":"2.0","method":"ping"}`, noAnswer, "", false},
	{"cancel with a malformed id", `{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":{"x":1}}}`, noAnswer, "", false},
	// on an initialized session
	{"k as a string", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":"3"}}`, -32602, "1", true},
	{"k fractional", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":2.5}}`, -32602, "1", true},
	{"k beyond 2^53", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1152921504606846976}}`, -32602, "1", true},
	{"k beyond int64", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":99999999999999999999999}}`, -32602, "1", true},
	{"includeText as a string", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"includeText":"true"}}`, -32602, "1", true},
	{"includeVectors as 0", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"includeVectors":0}}`, -32602, "1", true},
	{"query a number", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":5,"k":1}}`, -32602, "1", true},
	{"query an empty array", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":[],"k":1}}`, -32602, "1", true},
	{"rerank true", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"rerank":true}}`, -32602, "1", true},
	{"mode a number", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"mode":3}}`, -32602, "1", true},
	{"fusion a string", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"fusion":"rrf"}}`, -32602, "1", true},
	{"_meta an array", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":1,"_meta":[]}}`, -32602, "1", true},
	{"embed inputs not an array", `{"jsonrpc":"2.0","id":1,"method":"embed","params":{"inputs":"x"}}`, -32602, "1", true},
	{"embed input a number", `{"jsonrpc":"2.0","id":1,"method":"embed","params":{"inputs":[5]}}`, -32602, "1", true},
	{"rerank passages an object", `{"jsonrpc":"2.0","id":1,"method":"rerank","params":{"query":"q","passages":{}}}`, -32602, "1", true},
	{"very long unknown method", `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 5000) + `"}`, -32004, "1", true},
	{"second initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, -32600, "1", true},
	{"batch of garbage", `[1,"x",null]`, -32600, "", true},
	{"batch holding an empty batch", `[[]]`, -32600, "", true},
}

func TestMalformedFrames(t *testing.T) {
	if len(malformedFrames) < 50 {
		t.Fatalf("the table has %d frames, want >= 50", len(malformedFrames))
	}
	checkNoLeaks(t)
	opts := &ServerOptions{MaxFrameBytes: 64 << 10}
	fresh, _ := newTestConn(t, opts)
	ready, _ := newTestConn(t, opts)
	ready.initialize()
	for i, tc := range malformedFrames {
		t.Run(tc.name, func(t *testing.T) {
			c := fresh
			if tc.init {
				c = ready
			}
			c.t = t
			c.send(tc.frame)
			if tc.code == noAnswer {
				c.expectNone(30 * time.Millisecond)
			} else {
				r := c.recv()
				var w wire
				if strings.HasPrefix(string(r), "[") {
					// a batch: every member carries the code
					var items []wire
					if err := jsonUnmarshal(r, &items); err != nil || len(items) == 0 {
						t.Fatalf("bad batch answer %s", r)
					}
					w = items[0]
					for _, it := range items {
						if it.Error == nil || it.Error.Code != tc.code {
							t.Fatalf("member answered %s, want %d", r, tc.code)
						}
					}
				} else {
					w = decodeWire(t, r)
				}
				got := 0
				if w.Error != nil {
					got = w.Error.Code
				}
				if got != tc.code {
					t.Fatalf("frame %d answered %d, want %d: %.300s", i, got, tc.code, r)
				}
				if tc.id != "" && string(w.ID) != tc.id {
					t.Fatalf("id %s, want %s", w.ID, tc.id)
				}
			}
			// the server keeps serving
			if r := c.call(`{"jsonrpc":"2.0","id":"alive","method":"ping"}`); idOfFrame(r) != `"alive"` {
				t.Fatalf("not serving after frame %d: %s", i, r)
			}
		})
	}
}
