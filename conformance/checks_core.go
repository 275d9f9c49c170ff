package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// gatedProbe picks a gated core method and minimal params for probes that
// need "some capability-gated method" (pre-initialize, notifications).
func gatedProbe(caps map[string]any) (string, map[string]any) {
	if _, ok := caps["retrieve"]; ok || caps == nil {
		return "retrieve", map[string]any{"query": "conformance", "k": 1}
	}
	if _, ok := caps["embed"]; ok {
		return "embed", map[string]any{"inputs": []string{"conformance"}}
	}
	if _, ok := caps["rerank"]; ok {
		return "rerank", map[string]any{"query": "conformance", "passages": []string{"a"}}
	}
	return "retrieve", map[string]any{"query": "conformance", "k": 1}
}

// ---------------------------------------------------------------- §7.2/§7.15/§13 before initialize

func preInitChecks() []Check {
	return []Check{
		{ID: "preinit.info", Name: "info answers before initialize with an InitializeResult", Level: L0, Section: "§7.2, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "info", map[string]any{})
				if !r.ok() {
					return fail("info before initialize: %s", r)
				}
				if err := s.validateResult("info", r.Result); err != nil {
					return fail("info result violates the schema: %v", err)
				}
				return pass()
			}},
		{ID: "preinit.ping", Name: "ping answers before initialize", Level: L0, Section: "§7.15, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "ping", map[string]any{})
				if !r.ok() {
					return fail("ping before initialize: %s", r)
				}
				return check(s.validateResult("ping", r.Result) == nil, "ping result is not an object: %s", r)
			}},
		{ID: "preinit.ping-nonce-number", Name: "ping echoes a numeric nonce with its JSON type", Level: L0, Section: "§7.15", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome { return pingNonce(ctx, s, 777) }},
		{ID: "preinit.ping-nonce-string", Name: "ping echoes a string nonce verbatim", Level: L0, Section: "§7.15", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome { return pingNonce(ctx, s, "n-ünï✓-42") }},
		{ID: "preinit.gated-rejected", Name: "a gated method before initialize is rejected with -32001", Level: L0, Section: "§13, §14.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				m, p := gatedProbe(nil)
				r := s.call(ctx, m, p)
				return check(r.code() == -32001, "%s before initialize: want -32001, got %s", m, r)
			}},
		{ID: "preinit.notification-gated", Name: "a notification (no id) for a gated method is not answered", Level: L0, Section: "§4.5", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return notAnswered(ctx, s, req(nil, "retrieve", map[string]any{"query": "x", "k": 1}), "retrieve")
			}},
		{ID: "preinit.notification-open", Name: "a notification (no id) for info is not answered", Level: L0, Section: "§4.5", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return notAnswered(ctx, s, req(nil, "info", map[string]any{}), "info")
			}},
		{ID: "preinit.notification-unknown", Name: "a notification for an unknown method is not answered", Level: L0, Section: "§4.5, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return notAnswered(ctx, s, req(nil, "does/not/exist", map[string]any{}), "does/not/exist")
			}},
		{ID: "preinit.notification-reserved", Name: "an unrecognised notifications/* method is silently ignored", Level: L0, Section: "§4.5", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return notAnswered(ctx, s, req(nil, "notifications/x-rcp-conformance-future", map[string]any{"a": 1}), "notifications/x-rcp-conformance-future")
			}},
		{ID: "preinit.cancel-unknown", Name: "notifications/cancel for an unknown id is not answered", Level: L0, Section: "§7.14, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return notAnswered(ctx, s, req(nil, "notifications/cancel", map[string]any{"id": 987654321}), "notifications/cancel")
			}},
		{ID: "preinit.version-mismatch", Name: "initialize with protocolVersion 0 is rejected with -32002", Level: L0, Section: "§7.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				p := s.initParams()
				p["protocolVersion"] = 0
				r := s.call(ctx, "initialize", p)
				s.versionRejected = r.code() == -32002
				return check(s.versionRejected, "want -32002, got %s", r)
			}},
		{ID: "preinit.failed-handshake-locked", Name: "a failed handshake leaves the session uninitialized (-32001)", Level: L0, Section: "§13", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				if !s.versionRejected {
					p := s.initParams()
					p["protocolVersion"] = 0
					if r := s.call(ctx, "initialize", p); r.code() != -32002 {
						return skip("the server did not reject protocolVersion 0")
					}
				}
				m, p := gatedProbe(nil)
				r := s.call(ctx, m, p)
				return check(r.code() == -32001, "%s after a rejected initialize: want -32001, got %s", m, r)
			}},
	}
}

func pingNonce(ctx context.Context, s *suite, nonce any) outcome {
	r := s.call(ctx, "ping", map[string]any{"nonce": nonce})
	if !r.ok() {
		return fail("ping: %s", r)
	}
	var res map[string]json.RawMessage
	_ = json.Unmarshal(r.Result, &res)
	got, ok := res["nonce"]
	if !ok {
		return fail("nonce not echoed: %s", r)
	}
	if idKey(got) != idKey(mustJSON(nonce)) {
		return fail("nonce %s echoed as %s", mustJSON(nonce), got)
	}
	return pass()
}

func notAnswered(ctx context.Context, s *suite, frameObj map[string]any, path string) outcome {
	rep := s.notify(ctx, s.main, frameObj, path)
	if why := unanswered(rep); why != "" {
		return fail("%s", why)
	}
	return pass()
}

// ---------------------------------------------------------------- §7.1 initialize

func initChecks() []Check {
	return []Check{
		{ID: "init.ok", Name: "initialize succeeds and negotiates protocolVersion 1", Level: L0, Section: "§7.1, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				if s.initRes == nil {
					return fail("initialize failed: %s", s.initErr)
				}
				if s.initNote != "" {
					return fail("%s", s.initNote)
				}
				return check(s.initRes.ProtocolVersion == 1, "client offered 1, server negotiated %d (want min(1, server) = 1)", s.initRes.ProtocolVersion)
			}},
		{ID: "init.schema", Name: "initialize result matches the InitializeResult schema", Level: L0, Section: "§7.1, §14.4", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				if err := s.validateResult("initialize", s.initRaw); err != nil {
					return fail("%v", err)
				}
				return pass()
			}},
		{ID: "init.identity", Name: "initialize names the server (server.name)", Level: L0, Section: "§7.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return check(strings.TrimSpace(s.initRes.Server.Name) != "", "server.name is empty")
			}},
		{ID: "init.retrieval-capability", Name: "advertises at least one retrieval capability", Level: L0, Section: "§14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return check(s.profileGap(L0) == "", "none of embed, rerank, retrieve, graph is advertised")
			}},
		{ID: "init.capability-objects", Name: "every core capability value is an object", Level: L0, Section: "§6", Requirement: Should,
			run: func(ctx context.Context, s *suite) outcome {
				var bad []string
				for k, v := range s.caps {
					if strings.HasPrefix(k, "x-") {
						continue
					}
					if _, ok := v.(map[string]any); !ok {
						bad = append(bad, fmt.Sprintf("%s=%v", k, v))
					}
				}
				return check(len(bad) == 0, "non-object capability values: %s", strings.Join(bad, ", "))
			}},
		{ID: "init.declares-level", Name: "declares its level in _meta.conformance", Level: L0, Section: "§14", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				if s.declared == "" {
					return fail("initialize result has no _meta.conformance")
				}
				return check(levelIndex(Level(s.declared)) >= 0, "_meta.conformance=%q is not L0, L1 or L2", s.declared)
			}},
		{ID: "init.repeat-rejected", Name: "a second initialize after success is rejected with -32600", Level: L0, Section: "§13", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "initialize", s.initParams())
				return check(r.code() == -32600, "want -32600, got %s", r)
			}},
		{ID: "init.info-stable", Name: "info after initialize reports the session's capability set", Level: L0, Section: "§13.2", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome { return capsStable(ctx, s) }},
	}
}

func capsStable(ctx context.Context, s *suite) outcome {
	r := s.call(ctx, "info", map[string]any{})
	if !r.ok() {
		return fail("info: %s", r)
	}
	var ir initResult
	if err := json.Unmarshal(r.Result, &ir); err != nil {
		return fail("info result: %v", err)
	}
	var got map[string]any
	_ = json.Unmarshal(ir.Capabilities, &got)
	if !reflect.DeepEqual(got, s.caps) {
		return fail("initialize advertised %s, info reports %s", truncate(string(mustJSON(s.caps)), 250), truncate(string(mustJSON(got)), 250))
	}
	return pass()
}

// ---------------------------------------------------------------- §4 JSON-RPC framing, ids, errors

func jsonrpcChecks() []Check {
	idEcho := func(id any) func(ctx context.Context, s *suite) outcome {
		return func(ctx context.Context, s *suite) outcome {
			r, _ := s.main.callID(ctx, s, id, "ping", map[string]any{}, 0)
			if r == nil {
				return fail("no response for id %s", mustJSON(id))
			}
			return check(bytes.Equal(bytes.TrimSpace(r.ID), mustJSON(id)) || idKey(r.ID) == idKey(mustJSON(id)),
				"sent id %s, response id %s", mustJSON(id), r.ID)
		}
	}
	rawID := func(raw string) func(ctx context.Context, s *suite) outcome {
		return func(ctx context.Context, s *suite) outcome {
			payload := []byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping","params":{}}`)
			key := idKey(json.RawMessage(raw))
			rep := s.sendRaw(ctx, s.main, payload, "ping", key)
			r := rep.find(key)
			if r == nil {
				return fail("no response echoing id %s (got %d frames: %s)", raw, len(rep.frames), framesString(rep))
			}
			return pass()
		}
	}
	return []Check{
		{ID: "jsonrpc.id-string", Name: "echoes a string id unchanged", Level: L0, Section: "§4.7, §14.1", Requirement: Must, run: idEcho("str-id-1")},
		{ID: "jsonrpc.id-string-unicode", Name: "echoes a non-ASCII string id unchanged", Level: L0, Section: "§4.7, §4.6", Requirement: Must, run: idEcho("ид-✓-🙂")},
		{ID: "jsonrpc.id-string-empty", Name: "echoes the empty-string id", Level: L0, Section: "§4.7", Requirement: Must, run: idEcho("")},
		{ID: "jsonrpc.id-numeric-string", Name: "keeps a numeric-looking string id a string", Level: L0, Section: "§4.7", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r, _ := s.main.callID(ctx, s, "42", "ping", map[string]any{}, 0)
				if r == nil {
					return fail("no response")
				}
				return check(idKey(r.ID) == "s:42", "sent id \"42\", response id %s", r.ID)
			}},
		{ID: "jsonrpc.id-int", Name: "echoes an integer id unchanged", Level: L0, Section: "§4.7", Requirement: Must, run: idEcho(31337)},
		{ID: "jsonrpc.id-zero", Name: "echoes id 0", Level: L0, Section: "§4.7", Requirement: Must, run: idEcho(0)},
		{ID: "jsonrpc.id-negative", Name: "echoes a negative integer id", Level: L0, Section: "§4.7", Requirement: Must, run: idEcho(-7)},
		{ID: "jsonrpc.id-large-int", Name: "echoes 2^53-1 exactly", Level: L0, Section: "§4.7, §4.6", Requirement: Must, run: rawID("9007199254740991")},
		{ID: "jsonrpc.id-on-error", Name: "error responses echo the request id", Level: L0, Section: "§4.3, §4.7", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r, _ := s.main.callID(ctx, s, "err-id-1", "does/not/exist", map[string]any{}, 0)
				if r == nil {
					return fail("no response echoing id \"err-id-1\"")
				}
				return check(r.Err != nil, "unknown method answered with a result: %s", r)
			}},
		{ID: "jsonrpc.unknown-method", Name: "an undefined method is rejected with -32004", Level: L0, Section: "§7, §12, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "does/not/exist", map[string]any{})
				return check(r.code() == -32004, "want -32004, got %s", r)
			}},
		{ID: "jsonrpc.unknown-method-plain", Name: "an undefined single-word method is rejected with -32004 (not -32601)", Level: L0, Section: "§12", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "frobnicate", map[string]any{})
				return check(r.code() == -32004, "want -32004, got %s", r)
			}},
		{ID: "jsonrpc.parse-error", Name: "invalid JSON is answered with -32700 and id null", Level: L0, Section: "§12, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				rep := s.sendRaw(ctx, s.main, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping",`), "ping", "null")
				if rep.status == 400 {
					return passf("HTTP 400 (transport-level rejection, §5.2)")
				}
				r := rep.find("null")
				if r == nil {
					return fail("no -32700 response with id null; got %s", framesString(rep))
				}
				return check(r.code() == -32700, "want -32700, got %s", r)
			}},
		{ID: "jsonrpc.bad-version", Name: `a request with jsonrpc "1.0" is rejected with -32600`, Level: L0, Section: "§4, §12", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return invalidRequest(ctx, s, `{"jsonrpc":"1.0","id":"badver","method":"ping","params":{}}`, "s:badver")
			}},
		{ID: "jsonrpc.missing-version", Name: "a request without jsonrpc is rejected with -32600", Level: L0, Section: "§4, §12", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return invalidRequest(ctx, s, `{"id":"nover","method":"ping","params":{}}`, "s:nover")
			}},
		{ID: "jsonrpc.method-not-string", Name: "a request whose method is not a string is rejected with -32600", Level: L0, Section: "§4.1, §12", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return invalidRequest(ctx, s, `{"jsonrpc":"2.0","id":"badmethod","method":42,"params":{}}`, "s:badmethod")
			}},
		{ID: "jsonrpc.params-array", Name: "positional (array) params are rejected with -32602 or -32600", Level: L0, Section: "§4.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				rep := s.sendRawAny(ctx, s.main, []byte(`{"jsonrpc":"2.0","id":"posparams","method":"ping","params":["x"]}`), "ping", "s:posparams", "null")
				r := rep.find("s:posparams")
				if r == nil {
					r = rep.find("null")
				}
				if rep.status == 400 {
					return passf("HTTP 400")
				}
				return check(r.code() == -32602 || r.code() == -32600, "want -32602 or -32600, got %s", r)
			}},
		{ID: "jsonrpc.null-id", Name: "a request with id null is answered with -32600", Level: L0, Section: "§4.7", Requirement: Should,
			run: func(ctx context.Context, s *suite) outcome {
				rep := s.sendRaw(ctx, s.main, []byte(`{"jsonrpc":"2.0","id":null,"method":"ping","params":{}}`), "ping", "null")
				r := rep.find("null")
				if rep.status == 400 {
					return passf("HTTP 400")
				}
				return check(r.code() == -32600, "want a -32600 error, got %s", r)
			}},
		{ID: "jsonrpc.meta-tolerated", Name: "unknown _meta keys are ignored", Level: L0, Section: "§4.4, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "ping", map[string]any{"nonce": 5, "_meta": map[string]any{"x-rcp-conformance": map[string]any{"deep": []int{1, 2}}, "traceId": "t-1"}})
				return check(r.ok(), "ping with unknown _meta keys: %s", r)
			}},
		{ID: "jsonrpc.unknown-fields", Name: "unknown params and envelope fields are ignored", Level: L0, Section: "§4.6, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				rep := s.sendRaw(ctx, s.main, []byte(`{"jsonrpc":"2.0","id":"unk-fields","method":"info","x-envelope":true,"params":{"x-rcp-conformance":1,"futureField":{"a":[1]}}}`), "info", "s:unk-fields")
				r := rep.find("s:unk-fields")
				return check(r.ok(), "info with unknown fields: %s", r)
			}},
		{ID: "jsonrpc.pipelining", Name: "pipelined requests are each answered once, correlated by id", Level: L0, Section: "§4.7, §5.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				var buf bytes.Buffer
				var want []string
				for i := 0; i < 5; i++ {
					id := fmt.Sprintf("pipe-%d", i)
					buf.Write(mustJSON(req(id, "ping", map[string]any{"nonce": i})))
					buf.WriteByte('\n')
					want = append(want, "s:"+id)
				}
				rep := s.sendRaw(ctx, s.main, buf.Bytes(), "", want...)
				for i, k := range want {
					r := rep.find(k)
					if r == nil || !r.ok() {
						return fail("pipelined request %d not answered: %s", i, framesString(rep))
					}
				}
				return pass()
			}},
		{ID: "jsonrpc.blank-lines", Name: "blank lines between messages are ignored", Level: L0, Section: "§5.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				payload := append([]byte("\n\n  \n"), mustJSON(req("blank-1", "ping", map[string]any{}))...)
				payload = append(payload, []byte("\n\n")...)
				rep := s.sendRaw(ctx, s.main, payload, "", "s:blank-1")
				if r := rep.find("s:blank-1"); !r.ok() {
					return fail("request after blank lines not answered: %s", framesString(rep))
				}
				for _, f := range rep.frames {
					if f.isResponse() && idKey(f.obj["id"]) == "null" {
						return fail("blank line answered as an error: %s", truncate(string(f.raw), 200))
					}
				}
				return pass()
			}},
		{ID: "jsonrpc.split-writes", Name: "a message split across writes is reassembled", Level: L0, Section: "§5.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				sc := s.main.c.(*stdioConn)
				msg := mustJSON(req("split-1", "ping", map[string]any{"nonce": "split"}))
				s.main.rec.sent(msg)
				if err := sc.write(msg[:len(msg)/2]); err != nil {
					return fail("write: %v", err)
				}
				time.Sleep(80 * time.Millisecond)
				if err := sc.write(append(msg[len(msg)/2:], '\n')); err != nil {
					return fail("write: %v", err)
				}
				rep, _ := sc.collect(ctx, rtOpts{want: []string{"s:split-1"}, timeout: s.opts.CallTimeout})
				return check(rep.find("s:split-1").ok(), "split message not answered: %s", framesString(rep))
			}},
		{ID: "jsonrpc.survives-garbage", Name: "the server survives malformed input and keeps answering", Level: L0, Section: "§14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				garbage := []string{`]`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `"just a string"`, `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, `nul`, `{"jsonrpc":"2.0","id":"g","method":"ping","params":"str"}`, "\xff\xfe{"}
				if s.transport() == "stdio" {
					s.sendRaw(ctx, s.main, []byte(strings.Join(garbage, "\n")), "")
				} else {
					for _, g := range garbage {
						s.sendRaw(ctx, s.main, []byte(g), "ping")
					}
				}
				r := s.call(ctx, "ping", map[string]any{"nonce": "alive"})
				return check(r.ok(), "ping after malformed frames: %s", r)
			}},
	}
}

func invalidRequest(ctx context.Context, s *suite, payload, key string) outcome {
	rep := s.sendRawAny(ctx, s.main, []byte(payload), "ping", key, "null")
	if rep.status == 400 {
		return passf("HTTP 400 (transport-level rejection, §5.2)")
	}
	r := rep.find(key)
	if r == nil {
		r = rep.find("null")
	}
	return check(r.code() == -32600, "want -32600, got %s", r)
}

func framesString(rep *reply) string {
	if rep == nil {
		return "nothing"
	}
	if rep.timedOut && len(rep.frames) == 0 {
		return "nothing (timed out)"
	}
	var parts []string
	for _, f := range rep.frames {
		parts = append(parts, truncate(string(f.raw), 160))
	}
	if len(parts) == 0 {
		if rep.status != 0 {
			return fmt.Sprintf("HTTP %d, empty body", rep.status)
		}
		return "nothing"
	}
	return strings.Join(parts, " | ")
}

// ---------------------------------------------------------------- §11 batching

func batchChecks() []Check {
	batchPath := "" // a batch has no single method: POST it to the base path
	return []Check{
		{ID: "batch.basic", Name: "a batch is answered by an array with one response per request", Level: L0, Section: "§11", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				payload := mustJSON([]any{req("b-1", "ping", map[string]any{"nonce": 1}), req(77, "info", map[string]any{}), req("b-3", "ping", map[string]any{})})
				rep := s.sendRaw(ctx, s.main, payload, batchPath, "s:b-1", "n:77", "s:b-3")
				arr := batchReply(rep)
				if arr == nil {
					return fail("no array reply: %s", framesString(rep))
				}
				if len(arr) != 3 {
					return fail("want 3 responses, got %d: %s", len(arr), framesString(rep))
				}
				for _, k := range []string{"s:b-1", "n:77", "s:b-3"} {
					if !rep.find(k).ok() {
						return fail("no successful response for %s: %s", k, framesString(rep))
					}
				}
				return pass()
			}},
		{ID: "batch.notification-member", Name: "notifications in a batch produce no response entry", Level: L0, Section: "§11", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				payload := mustJSON([]any{req("bn-1", "ping", map[string]any{}), req(nil, "info", map[string]any{}), req(nil, "notifications/cancel", map[string]any{"id": "nothing"})})
				rep := s.sendRaw(ctx, s.main, payload, batchPath, "s:bn-1")
				arr := batchReply(rep)
				if arr == nil {
					return fail("no array reply: %s", framesString(rep))
				}
				return check(len(arr) == 1 && rep.find("s:bn-1").ok(), "want exactly one entry (for bn-1), got %s", framesString(rep))
			}},
		{ID: "batch.empty", Name: "an empty batch is one non-array -32600 error with id null", Level: L0, Section: "§11", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				rep := s.sendRaw(ctx, s.main, []byte(`[]`), batchPath, "null")
				if rep.status == 400 && len(bytes.TrimSpace(rep.body)) == 0 {
					return passf("HTTP 400 without a body")
				}
				for _, f := range rep.frames {
					if f.arr != nil {
						return fail("answered with an array: %s", truncate(string(f.raw), 200))
					}
				}
				r := rep.find("null")
				return check(r.code() == -32600, "want a single -32600 error with id null, got %s", framesString(rep))
			}},
		{ID: "batch.only-notifications", Name: "a batch of only notifications returns nothing", Level: L0, Section: "§11", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				payload := mustJSON([]any{req(nil, "ping", map[string]any{}), req(nil, "notifications/cancel", map[string]any{"id": "nothing"})})
				rep := s.sendRaw(ctx, s.main, payload, batchPath)
				if rep.status != 0 {
					if len(bytes.TrimSpace(rep.body)) != 0 {
						return fail("HTTP %d with body %s", rep.status, truncate(string(rep.body), 200))
					}
					return pass()
				}
				return check(len(rep.frames) == 0, "got %s", framesString(rep))
			}},
		{ID: "batch.invalid-member", Name: "an invalid batch member yields -32600 with id null; the others are still answered", Level: L0, Section: "§11", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				payload := []byte(`[{"jsonrpc":"2.0","id":"bi-1","method":"ping","params":{}},1,{"foo":"bar"},{"jsonrpc":"2.0","id":"bi-2","method":"ping","params":{}}]`)
				rep := s.sendRaw(ctx, s.main, payload, batchPath, "s:bi-1", "s:bi-2", "null")
				arr := batchReply(rep)
				if arr == nil {
					return fail("no array reply: %s", framesString(rep))
				}
				nulls := 0
				for _, r := range rep.responses() {
					if idKey(r.ID) == "null" && r.code() == -32600 {
						nulls++
					}
				}
				if !rep.find("s:bi-1").ok() || !rep.find("s:bi-2").ok() {
					return fail("well-formed members not answered: %s", framesString(rep))
				}
				return check(nulls == 2 && len(arr) == 4, "want 2 successes + 2 (-32600, id null) entries, got %s", framesString(rep))
			}},
		{ID: "batch.gating", Name: "batch members are gated individually (-32004 entry, others succeed)", Level: L0, Section: "§11", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				payload := mustJSON([]any{req("bg-1", "does/not/exist", map[string]any{}), req("bg-2", "ping", map[string]any{"nonce": "ok"})})
				rep := s.sendRaw(ctx, s.main, payload, batchPath, "s:bg-1", "s:bg-2")
				if batchReply(rep) == nil {
					return fail("no array reply: %s", framesString(rep))
				}
				return check(rep.find("s:bg-1").code() == -32004 && rep.find("s:bg-2").ok(), "want -32004 for bg-1 and a result for bg-2, got %s", framesString(rep))
			}},
	}
}

// batchReply returns the array reply, or nil.
func batchReply(rep *reply) []json.RawMessage {
	for _, f := range rep.frames {
		if f.arr != nil {
			return f.arr
		}
	}
	return nil
}
