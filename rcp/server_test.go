package rcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	checkNoLeaks(t)
	type step struct {
		frame string
		code  int    // expected error code, 0 for a result
		check string // substring the answer must contain
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"info, ping and shutdown before initialize", []step{
			{`{"jsonrpc":"2.0","id":1,"method":"info"}`, 0, `"server":{"name":"test"`},
			{`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"nonce":777}}`, 0, `"nonce":777`},
			{`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"nonce":"n-1"}}`, 0, `"nonce":"n-1"`},
			{`{"jsonrpc":"2.0","id":4,"method":"ping"}`, 0, `"result":{}`},
		}},
		{"gated, unknown and vendor methods before initialize are -32001", []step{
			{`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","k":1}}`, -32001, ""},
			{`{"jsonrpc":"2.0","id":2,"method":"does/not/exist"}`, -32001, ""},
			{`{"jsonrpc":"2.0","id":3,"method":"x-acme/echo"}`, -32001, ""},
		}},
		{"failed negotiation leaves the session uninitialized; retry accepted", []step{
			{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`, -32002, ""},
			{`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"x","k":1}}`, -32001, ""},
			{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":-4}}`, -32002, ""},
			{`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":7,"capabilities":{"x-new":{}}}}`, 0, `"protocolVersion":1`},
			{`{"jsonrpc":"2.0","id":5,"method":"retrieve","params":{"query":"x","k":1}}`, 0, `"hits"`},
		}},
		{"second initialize after success is -32600", []step{
			{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, 0, `"conformance":"L0"`},
			{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`, -32600, ""},
		}},
		{"initialize with malformed params is -32602 and retryable", []step{
			{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}`, -32602, `"field":"protocolVersion"`},
			{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`, 0, ""},
		}},
		{"info reports the frozen session capabilities and conformance", []step{
			{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, 0, `"x-acme":{"flavour":"test"}`},
			{`{"jsonrpc":"2.0","id":2,"method":"info"}`, 0, `"x-acme":{"flavour":"test"}`},
			{`{"jsonrpc":"2.0","id":3,"method":"info"}`, 0, `"_meta":{"conformance":"L0","x-test":true}`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestConn(t, nil)
			for i, s := range tc.steps {
				r := c.call(s.frame)
				if got := errCode(r); got != s.code {
					t.Fatalf("step %d %s: code %d, want %d: %s", i, s.frame, got, s.code, r)
				}
				if s.check != "" && !strings.Contains(string(r), s.check) {
					t.Fatalf("step %d: %s lacks %s", i, r, s.check)
				}
			}
		})
	}
}

func TestCapabilitiesFrozenForSession(t *testing.T) {
	c, h := newTestConn(t, nil)
	c.call(`{"jsonrpc":"2.0","id":0,"method":"info"}`)
	c.initialize()
	h.mu.Lock()
	h.caps.Rerank = nil // a config change after the session started
	h.mu.Unlock()
	r := c.call(`{"jsonrpc":"2.0","id":1,"method":"info"}`)
	if !strings.Contains(string(r), `"rerank"`) {
		t.Fatalf("info changed mid-session: %s", r)
	}
	if h.describ != 1 {
		t.Fatalf("Describe called %d times, want 1 per session", h.describ)
	}
}

func TestDispatch(t *testing.T) {
	checkNoLeaks(t)
	c, _ := newTestConn(t, nil)
	c.initialize()
	tests := []struct {
		name  string
		frame string
		code  int
		check string
	}{
		{"advertised method", `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","k":2}}`, 0, `"hits":[`},
		{"undefined method is -32004", `{"jsonrpc":"2.0","id":2,"method":"does/not/exist","params":{}}`, -32004, ""},
		{"-32004 is preferred over -32003", `{"jsonrpc":"2.0","id":3,"method":"retrieve/v2","params":{}}`, -32004, ""},
		{"reserved -32601 is never used", `{"jsonrpc":"2.0","id":4,"method":"foo","params":{}}`, -32004, ""},
		{"defined but unadvertised is -32003", `{"jsonrpc":"2.0","id":5,"method":"index/add","params":{"documents":[]}}`, -32003, ""},
		{"unadvertised graph", `{"jsonrpc":"2.0","id":6,"method":"graph","params":{"op":"local"}}`, -32003, ""},
		{"vendor method with its capability", `{"jsonrpc":"2.0","id":7,"method":"x-acme/echo","params":{"a":1}}`, 0, `"result":{"a":1}`},
		{"vendor method without its capability", `{"jsonrpc":"2.0","id":8,"method":"x-other/echo","params":{}}`, -32003, ""},
		{"malformed vendor name is undefined", `{"jsonrpc":"2.0","id":9,"method":"x-/echo","params":{}}`, -32004, ""},
		{"array params are -32602", `{"jsonrpc":"2.0","id":10,"method":"retrieve","params":["q",1]}`, -32602, `"field":"params"`},
		{"string params are -32600", `{"jsonrpc":"2.0","id":11,"method":"retrieve","params":"q"}`, -32600, ""},
		{"null params are absent", `{"jsonrpc":"2.0","id":12,"method":"ping","params":null}`, 0, `"result":{}`},
		{"unknown fields are ignored", `{"jsonrpc":"2.0","id":13,"method":"retrieve","params":{"query":"q","k":1,"x-future":{"a":[1]},"_meta":{"who":"knows"}},"extra":true}`, 0, `"hits"`},
		{"handler InvalidParams names the field", `{"jsonrpc":"2.0","id":14,"method":"retrieve","params":{"query":"q","k":"3"}}`, -32602, `"field":"k"`},
		{"53-bit integers are enforced", `{"jsonrpc":"2.0","id":15,"method":"retrieve","params":{"query":"q","k":9007199254740993}}`, -32602, `"field":"k"`},
		{"booleans are strict", `{"jsonrpc":"2.0","id":16,"method":"retrieve","params":{"query":"q","k":1,"includeText":1}}`, -32602, `"field":"includeText"`},
		{"plain handler errors are -32603 without detail", `{"jsonrpc":"2.0","id":17,"method":"retrieve","params":{"query":"fail","k":1}}`, -32603, ""},
		{"handler panics are -32603", `{"jsonrpc":"2.0","id":18,"method":"retrieve","params":{"query":"panic","k":1}}`, -32603, ""},
		{"NaN scores never reach the wire", `{"jsonrpc":"2.0","id":19,"method":"retrieve","params":{"query":"nan","k":1}}`, 0, `"score":-1.7976931348623157e+308`},
		{"notifications/cancel with an id is -32600", `{"jsonrpc":"2.0","id":20,"method":"notifications/cancel","params":{"id":1}}`, -32600, ""},
		{"other notifications/* with an id are -32600", `{"jsonrpc":"2.0","id":21,"method":"notifications/progress","params":{}}`, -32600, ""},
		{"rerank", `{"jsonrpc":"2.0","id":22,"method":"rerank","params":{"query":"q","passages":["a","bbb"]}}`, 0, `"scores":[1,3]`},
		{"embed", `{"jsonrpc":"2.0","id":23,"method":"embed","params":{"inputs":["a",{"type":"text","text":"b"}]}}`, 0, `"vectors":[[1,0],[1,0]]`},
		{"embed legacy texts", `{"jsonrpc":"2.0","id":24,"method":"embed","params":{"texts":["a"]}}`, 0, `"vectors":[[1,0]]`},
		{"_meta must be an object", `{"jsonrpc":"2.0","id":25,"method":"retrieve","params":{"query":"q","k":1,"_meta":7}}`, -32602, `"field":"_meta"`},
		{"null optional fields are absent", `{"jsonrpc":"2.0","id":26,"method":"retrieve","params":{"query":"q","k":1,"mode":null,"fusion":null,"includeText":null}}`, 0, `"hits"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.call(tc.frame)
			if got := errCode(r); got != tc.code {
				t.Fatalf("code %d, want %d: %s", got, tc.code, r)
			}
			if tc.check != "" && !strings.Contains(string(r), tc.check) {
				t.Fatalf("%s lacks %s", r, tc.check)
			}
			if strings.Contains(string(r), "secret") {
				t.Fatalf("internal detail leaked: %s", r)
			}
		})
	}
}

func TestNotificationsAreNeverAnswered(t *testing.T) {
	checkNoLeaks(t)
	c, _ := newTestConn(t, nil)
	frames := []string{
		`{"jsonrpc":"2.0","method":"retrieve","params":{"query":"x","k":1}}`,
		`{"jsonrpc":"2.0","method":"info"}`,
		`{"jsonrpc":"2.0","method":"does/not/exist"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":12345}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":null}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancel","params":[1]}`,
		`{"jsonrpc":"2.0","method":"notifications/cancel"}`,
		`{"jsonrpc":"2.0","method":"notifications/future-thing","params":{"x":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1}}`,
	}
	for _, f := range frames {
		c.send(f)
	}
	c.expectNone(200 * time.Millisecond)
	// The initialize notification did not initialize the session.
	if code := errCode(c.call(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","k":1}}`)); code != -32001 {
		t.Fatalf("code %d, want -32001", code)
	}
}

func TestIDsEchoedWithTheirJSONType(t *testing.T) {
	c, _ := newTestConn(t, nil)
	for _, id := range []string{`1`, `0`, `-7`, `"s"`, `""`, `"\u00e9\n"`, `1152921504606846976`, `12345678901234567890123`, `1.5`, `1e3`, `-0.0`, `9007199254740993`} {
		r := c.call(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if got := idOfFrame(r); got != id {
			t.Errorf("id %s echoed as %s", id, got)
		}
	}
}

func TestBatching(t *testing.T) {
	checkNoLeaks(t)
	c, _ := newTestConn(t, nil)
	c.initialize()

	// empty array: one non-array -32600 with id null
	r := c.call(`[]`)
	if w := decodeWire(t, r); w.Error == nil || w.Error.Code != -32600 || string(w.ID) != "null" {
		t.Fatalf("empty batch: %s", r)
	}
	// all notifications: no output at all
	c.send(`[{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":1}},{"jsonrpc":"2.0","method":"notifications/x"}]`)
	c.expectNone(150 * time.Millisecond)

	// mixed: malformed members answered -32600 id null, the rest run
	r = c.call(`[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":1}},1,{"jsonrpc":"2.0","method":"notifications/x"},{"foo":"bar"},{"jsonrpc":"2.0","id":"r","method":"retrieve","params":{"query":"q","k":1}},{"jsonrpc":"2.0","id":3,"method":"nope"}]`)
	var items []wire
	if err := json.Unmarshal(r, &items); err != nil {
		t.Fatalf("batch answer is not an array: %s", r)
	}
	got := map[string]int{}
	nulls := 0
	for _, it := range items {
		code := 0
		if it.Error != nil {
			code = it.Error.Code
		}
		if string(it.ID) == "null" {
			nulls++
			if code != -32600 {
				t.Errorf("malformed member answered %d", code)
			}
			continue
		}
		got[string(it.ID)] = code
	}
	want := map[string]int{`1`: 0, `"r"`: 0, `3`: -32004}
	if nulls != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batch answers %v (nulls %d), want %v and 2 nulls: %s", got, nulls, want, r)
	}

	// order-free: a slow member does not hold back a fast one inside the
	// batch, and the array still holds both
	r = c.call(`[{"jsonrpc":"2.0","id":"slow","method":"retrieve","params":{"query":"sleep:50ms","k":1}},{"jsonrpc":"2.0","id":"fast","method":"ping"}]`)
	if err := json.Unmarshal(r, &items); err != nil || len(items) != 2 {
		t.Fatalf("batch: %s", r)
	}
	ids := []string{string(items[0].ID), string(items[1].ID)}
	slices.Sort(ids)
	if ids[0] != `"fast"` || ids[1] != `"slow"` {
		t.Fatalf("ids %v", ids)
	}
}

func TestBatchLimit(t *testing.T) {
	c, _ := newTestConn(t, &ServerOptions{MaxBatch: 2})
	r := c.call(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	if errCode(r) != -32602 {
		t.Fatalf("oversized batch: %s", r)
	}
	if errCode(c.call(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)) != 0 {
		t.Fatal("server stopped serving")
	}
}

func TestConcurrentRequestsAndInitializeOrdering(t *testing.T) {
	checkNoLeaks(t)
	c, h := newTestConn(t, nil)
	// initialize and a retrieve written back to back: initialize is answered
	// (and takes effect) before the retrieve is processed.
	c.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1}}` + "\n" + `{"jsonrpc":"2.0","id":"r","method":"retrieve","params":{"query":"q","k":1}}`)
	first, second := c.recv(), c.recv()
	if idOfFrame(first) != `"i"` || errCode(second) != 0 {
		t.Fatalf("got %s then %s", first, second)
	}
	<-h.started
	// A blocked request does not stop later ones: responses are correlated
	// by id, not arrival order.
	c.send(`{"jsonrpc":"2.0","id":"b","method":"retrieve","params":{"query":"block","k":1}}`)
	if q := <-h.started; q != "block" {
		t.Fatalf("started %q", q)
	}
	if r := c.call(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); idOfFrame(r) != `"p"` {
		t.Fatalf("ping overtaken: %s", r)
	}
	r := c.call(`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":"b","reason":"test"}}`)
	if idOfFrame(r) != `"b"` || errCode(r) != -32006 {
		t.Fatalf("cancel: %s", r)
	}
}

func TestCancellation(t *testing.T) {
	checkNoLeaks(t)
	c, h := newTestConn(t, nil)
	c.initialize()
	// cancel of an unknown id is a no-op
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":999}}`)
	c.expectNone(50 * time.Millisecond)
	// a string id and an escaped form of the same id match
	c.send(`{"jsonrpc":"2.0","id":"ab","method":"retrieve","params":{"query":"block","k":1}}`)
	<-h.started
	r := c.call(`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":"a\u0062"}}`)
	if errCode(r) != -32006 || idOfFrame(r) != `"ab"` {
		t.Fatalf("cancel: %s", r)
	}
	// exactly one response: nothing follows
	c.expectNone(100 * time.Millisecond)
	// cancel after completion is a no-op, the result stands
	r = c.call(`{"jsonrpc":"2.0","id":5,"method":"retrieve","params":{"query":"q","k":1}}`)
	if errCode(r) != 0 {
		t.Fatal(string(r))
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":5}}`)
	c.expectNone(50 * time.Millisecond)
	// a request with a duplicate in-flight id is rejected; the original stands
	c.send(`{"jsonrpc":"2.0","id":7,"method":"retrieve","params":{"query":"block","k":1}}`)
	<-h.started
	// notifications/cancel carrying an id is malformed: rejected, not applied
	if r := c.call(`{"jsonrpc":"2.0","id":8,"method":"notifications/cancel","params":{"id":7}}`); errCode(r) != -32600 || idOfFrame(r) != "8" {
		t.Fatalf("cancel with an id: %s", r)
	}
	c.expectNone(50 * time.Millisecond) // 7 is still running
	if r := c.call(`{"jsonrpc":"2.0","id":7,"method":"ping"}`); errCode(r) != -32600 {
		t.Fatalf("duplicate id: %s", r)
	}
	if r := c.call(`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":7}}`); errCode(r) != -32006 {
		t.Fatalf("cancel 7: %s", r)
	}
}

func TestDeadlines(t *testing.T) {
	checkNoLeaks(t)
	c, h := newTestConn(t, &ServerOptions{RequestTimeout: 100 * time.Millisecond})
	c.initialize()
	start := time.Now()
	r := c.call(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"block","k":1}}`)
	<-h.started
	if errCode(r) != -32014 {
		t.Fatalf("server deadline: %s", r)
	}
	if w := decodeWire(t, r); w.Error.Data == nil || w.Error.Data.Retryable == nil || !*w.Error.Data.Retryable {
		t.Fatalf("timeout not marked retryable: %s", r)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %v", el)
	}
	// _meta.deadlineMs shortens it
	start = time.Now()
	r = c.call(`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"block","k":1,"_meta":{"deadlineMs":20}}}`)
	<-h.started
	if errCode(r) != -32014 || time.Since(start) > 90*time.Millisecond+time.Second {
		t.Fatalf("deadlineMs: %s", r)
	}
	// a handler that ignores its context is still answered once, on time;
	// its late result is discarded
	r = c.call(`{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"sleep:300ms","k":1}}`)
	<-h.started
	if errCode(r) != -32014 {
		t.Fatalf("ignoring handler: %s", r)
	}
	c.expectNone(400 * time.Millisecond)
}

func TestProgressAndLog(t *testing.T) {
	checkNoLeaks(t)
	t.Run("token echoed verbatim, log honours the level", func(t *testing.T) {
		c, _ := newTestConn(t, nil)
		c.call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"capabilities":{"log":{}},"_meta":{"logLevel":"info"}}}`)
		for _, tok := range []string{`"tok-1"`, `42`, `12345678901234567890`} {
			c.send(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"progress","k":1,"_meta":{"progressToken":` + tok + `}}}`)
			var progress, logs int
			for {
				f := c.recv()
				w := decodeWire(t, f)
				if w.Method == NotifyProgress {
					progress++
					var p ProgressParams
					_ = json.Unmarshal(w.Params, &p)
					if string(p.ProgressToken) != tok {
						t.Fatalf("token %s echoed as %s", tok, p.ProgressToken)
					}
					continue
				}
				if w.Method == NotifyLog {
					logs++
					if !strings.Contains(string(f), `"level":"info"`) {
						t.Fatalf("log below the level: %s", f)
					}
					continue
				}
				if idOfFrame(f) != "1" || w.Error != nil {
					t.Fatalf("final: %s", f)
				}
				break
			}
			if progress != 2 || logs != 1 {
				t.Fatalf("progress %d logs %d, want 2 and 1", progress, logs)
			}
		}
	})
	t.Run("nothing without a token or an opt-in", func(t *testing.T) {
		c, _ := newTestConn(t, nil)
		c.call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
		for _, meta := range []string{`{}`, `{"progressToken":null}`, `{"progressToken":1.5}`, `{"progressToken":{"a":1}}`} {
			r := c.call(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"progress","k":1,"_meta":` + meta + `}}`)
			if idOfFrame(r) != "1" {
				t.Fatalf("meta %s: got %s before the response", meta, r)
			}
		}
		// per-request logLevel opts in
		c.send(`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"progress","k":1,"_meta":{"logLevel":"debug"}}}`)
		var logs int
		for f := c.recv(); idOfFrame(f) != "2"; f = c.recv() {
			logs++
		}
		if logs != 2 {
			t.Fatalf("logs %d, want 2", logs)
		}
	})
	t.Run("no progress when streaming is not advertised", func(t *testing.T) {
		h := newTestHandler()
		h.caps.Streaming = nil
		h.caps.Log = nil
		c := newConn(t, NewServer(h, &ServerOptions{Logger: quietLogger()}))
		c.call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"capabilities":{"log":{}}}}`)
		r := c.call(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"progress","k":1,"_meta":{"progressToken":1,"logLevel":"debug"}}}`)
		if idOfFrame(r) != "1" {
			t.Fatalf("got %s", r)
		}
	})
	t.Run("RequestMeta passes _meta through", func(t *testing.T) {
		c, _ := newTestConn(t, nil)
		c.initialize()
		r := c.call(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"meta","k":1,"_meta":{"traceId":"abc"}}}`)
		if !strings.Contains(string(r), `"traceId":"abc"`) {
			t.Fatalf("got %s", r)
		}
	})
}

func TestShutdown(t *testing.T) {
	checkNoLeaks(t)
	t.Run("nothing is processed after the shutdown response", func(t *testing.T) {
		c, h := newTestConn(t, nil)
		c.initialize()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"sleep:100ms","k":1}}`)
		<-h.started
		c.send(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		got := map[string]bool{}
		for range 2 {
			got[idOfFrame(c.recv())] = true
		}
		if !got["1"] || !got["2"] {
			t.Fatalf("got %v: in-flight work must finish and shutdown be answered", got)
		}
		c.expectNone(100 * time.Millisecond)
		select {
		case err := <-c.done:
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
			c.done <- nil
		case <-time.After(2 * time.Second):
			t.Fatal("server did not stop after shutdown")
		}
	})
	t.Run("EOF finishes in-flight work and flushes", func(t *testing.T) {
		c, h := newTestConn(t, nil)
		c.initialize()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"sleep:100ms","k":1}}`)
		<-h.started
		c.w.Close()
		if r := c.recv(); idOfFrame(r) != "1" || errCode(r) != 0 {
			t.Fatalf("in-flight answer lost: %s", r)
		}
	})
}

func TestFrameCapKeepsServing(t *testing.T) {
	checkNoLeaks(t)
	c, _ := newTestConn(t, &ServerOptions{MaxFrameBytes: 1024})
	r := c.call(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"` + strings.Repeat("x", 4096) + `"}}`)
	if w := decodeWire(t, r); w.Error == nil || w.Error.Code != -32013 || string(w.ID) != "null" {
		t.Fatalf("oversize: %s", r)
	}
	if r := c.call(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); idOfFrame(r) != "2" {
		t.Fatalf("after oversize: %s", r)
	}
}

func TestDefaultFrameCapAtLeast16MiB(t *testing.T) {
	if DefaultMaxFrameBytes < 16<<20 {
		t.Fatalf("default frame cap %d < 16 MiB", DefaultMaxFrameBytes)
	}
	c, _ := newTestConn(t, nil)
	c.timeout = 2 * time.Minute // 15 MiB through the race detector is slow
	big := strings.Repeat("y", 15<<20)
	r := c.call(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"` + big + `"}}`)
	if errCode(r) != 0 || len(r) < 15<<20 {
		t.Fatalf("15 MiB frame rejected: %.200s", r)
	}
}

func TestLoadShedding(t *testing.T) {
	checkNoLeaks(t)
	c, h := newTestConn(t, &ServerOptions{MaxInFlight: 1})
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"block","k":1}}`)
	<-h.started
	r := c.call(`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"q","k":1}}`)
	if w := decodeWire(t, r); w.Error == nil || w.Error.Code != -32011 || w.Error.Data.RetryAfterMs == nil {
		t.Fatalf("shed: %s", r)
	}
	c.call(`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":1}}`)
}

// pastDeadline is a context whose deadline has passed while its Err is still
// nil: what a handler sees between its deadline and the timer that ends it.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A handler that fails because its deadline passed by the clock, before the
// context's timer fired, is answered -32014, not with its own error (the
// Weaviate backend's gRPC calls made conformance deadline.tiny see -32603).
func TestEndedCauseDeadlineByClock(t *testing.T) {
	if c := endedCause(newRequestContext(context.Background(), nil, time.Minute)); c != nil {
		t.Fatalf("running context: got %v", c)
	}
	c := endedCause(newRequestContext(pastDeadline{context.Background()}, nil, 0))
	if !errors.Is(c, errTimeout) {
		t.Fatalf("deadline passed, timer not fired: got %v, want errTimeout", c)
	}
	var e struct {
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(contextErrorFrame(json.RawMessage(`1`), c), &e); err != nil || e.Error == nil || e.Error.Code != CodeTimeout {
		t.Fatalf("frame: %+v %v, want -32014", e.Error, err)
	}
	cctx := newRequestContext(context.Background(), nil, time.Minute)
	cctx.cancel(errCancelled)
	if c := endedCause(cctx); !errors.Is(c, errCancelled) {
		t.Fatalf("cancelled: got %v", c)
	}
}
