package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ---------------------------------------------------------------- §7.10/§7.11 index writes

// uniq returns an id prefix unique to this run so stateful probes never touch real data.
func (s *suite) uniq(tag string) string {
	return fmt.Sprintf("rcp-conformance-%d-%s", time.Now().UnixNano(), tag)
}

// addDocs runs index/add and registers a cleanup deleting the returned ids.
func (s *suite) addDocs(ctx context.Context, docs []map[string]any, meta map[string]any) ([]string, *response) {
	p := map[string]any{"documents": docs}
	if meta != nil {
		p["_meta"] = meta
	}
	r := s.call(ctx, "index/add", p)
	if !r.ok() {
		return nil, r
	}
	var w struct {
		IDs []string `json:"ids"`
	}
	_ = json.Unmarshal(r.Result, &w)
	ids := w.IDs
	if len(ids) > 0 {
		s.cleanup = append(s.cleanup, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if s.main != nil && !s.main.closed.Load() {
				s.call(ctx, "index/delete", map[string]any{"ids": ids})
			}
		})
	}
	return ids, r
}

func (s *suite) deleted(ctx context.Context, ids []string) (int, *response) {
	r := s.call(ctx, "index/delete", map[string]any{"ids": ids})
	if !r.ok() {
		return -1, r
	}
	var w struct {
		Deleted *int `json:"deleted"`
	}
	_ = json.Unmarshal(r.Result, &w)
	if w.Deleted == nil {
		return -1, r
	}
	return *w.Deleted, r
}

// findHits retrieves query and returns the hits whose id is id.
func (s *suite) findHits(ctx context.Context, query, id string) ([]hitView, *outcome) {
	if !s.has("retrieve") {
		return nil, nil
	}
	p := map[string]any{"query": query, "k": 10, "includeText": true}
	if mk := s.maxK(); mk > 0 && mk < 10 {
		p["k"] = mk
	}
	v, _, o := s.retrieve(ctx, p)
	if o != nil {
		return nil, o
	}
	var out []hitView
	for _, h := range v.hits {
		if h.key == "s:"+id {
			out = append(out, h)
		}
	}
	return out, nil
}

func indexChecks() []Check {
	w := []string{"index.writable"}
	return []Check{
		{ID: "index.add-positional", Name: "index/add returns one id per document, in input order", Level: L2, Section: "§7.10", Requirement: Must, Needs: w,
			run: func(ctx context.Context, s *suite) outcome {
				a, b := s.uniq("pos-a"), s.uniq("pos-b")
				docs := []map[string]any{{"id": a, "text": "conformance positional alpha " + a}, {"text": "conformance positional minted"}, {"id": b, "text": "conformance positional beta " + b}}
				ids, r := s.addDocs(ctx, docs, nil)
				if r == nil || !r.ok() {
					return fail("index/add: %s", r)
				}
				if err := s.validateResult("index/add", r.Result); err != nil {
					return fail("%v", err)
				}
				if len(ids) != 3 {
					return fail("3 documents, %d ids: %v", len(ids), ids)
				}
				if ids[0] != a || ids[2] != b || ids[1] == "" {
					return fail("ids %v are not positional for [%s, <minted>, %s]", ids, a, b)
				}
				return pass()
			}},
		{ID: "index.upsert", Name: "re-adding an id replaces it (upsert) or is rejected with -32016; never a duplicate", Level: L2, Section: "§7.10", Requirement: Must, Needs: w,
			run: func(ctx context.Context, s *suite) outcome {
				id := s.uniq("upsert")
				token := strings.ReplaceAll(id, "-", "")
				if _, r := s.addDocs(ctx, []map[string]any{{"id": id, "text": "upsert probe first version " + token}}, nil); !r.ok() {
					return fail("first add: %s", r)
				}
				ids, r := s.addDocs(ctx, []map[string]any{{"id": id, "text": "upsert probe second version " + token}}, nil)
				if r.code() == -32016 {
					return passf("server cannot upsert and rejects with -32016")
				}
				if !r.ok() {
					return fail("re-add: want success or -32016, got %s", r)
				}
				if len(ids) != 1 || ids[0] != id {
					return fail("re-add returned ids %v, want [%s]", ids, id)
				}
				hits, o := s.findHits(ctx, "upsert probe second version "+token, id)
				if o != nil {
					return *o
				}
				if len(hits) > 1 {
					return fail("id %s returned %d times after the upsert", id, len(hits))
				}
				if len(hits) == 1 {
					var text string
					_ = json.Unmarshal(hits[0].raw["text"], &text)
					if text != "" && strings.Contains(text, "first version") {
						return fail("upsert kept the old text: %q", text)
					}
				}
				return pass()
			}},
		{ID: "index.repeat-identical", Name: "repeating an identical {id, text} add is observationally a single add", Level: L2, Section: "§7.10, §13.1", Requirement: Must, Needs: w,
			run: func(ctx context.Context, s *suite) outcome {
				id := s.uniq("repeat")
				doc := []map[string]any{{"id": id, "text": "repeat probe " + id}}
				if _, r := s.addDocs(ctx, doc, nil); !r.ok() {
					return fail("first add: %s", r)
				}
				ids, r := s.addDocs(ctx, doc, nil)
				if r.code() == -32016 {
					return passf("non-upserting server rejects with -32016")
				}
				if !r.ok() || len(ids) != 1 || ids[0] != id {
					return fail("repeat add: %s", r)
				}
				n, r := s.deleted(ctx, []string{id})
				return check(n == 1, "after two identical adds, delete removed %d documents (want 1): %s", n, r)
			}},
		{ID: "index.idempotency-key", Name: "a repeated _meta.idempotencyKey returns the original result", Level: L2, Section: "§7.10", Requirement: Should, Needs: w,
			run: func(ctx context.Context, s *suite) outcome {
				key := s.uniq("idem-key")
				doc := []map[string]any{{"text": "idempotency key probe " + key}}
				ids1, r1 := s.addDocs(ctx, doc, map[string]any{"idempotencyKey": key})
				if !r1.ok() {
					return fail("first add: %s", r1)
				}
				ids2, r2 := s.addDocs(ctx, doc, map[string]any{"idempotencyKey": key})
				if !r2.ok() {
					return fail("repeat add: %s", r2)
				}
				return check(slices.Equal(ids1, ids2), "same key, different ids: %v vs %v (the write was re-applied)", ids1, ids2)
			}},
		{ID: "index.delete-counts", Name: "index/delete counts removed documents; a repeat returns 0", Level: L2, Section: "§7.11", Requirement: Must, Needs: w,
			run: func(ctx context.Context, s *suite) outcome {
				a, b := s.uniq("del-a"), s.uniq("del-b")
				if _, r := s.addDocs(ctx, []map[string]any{{"id": a, "text": "delete probe " + a}, {"id": b, "text": "delete probe " + b}}, nil); !r.ok() {
					return fail("add: %s", r)
				}
				n, r := s.deleted(ctx, []string{a, b})
				if n != 2 {
					return fail("deleting 2 present documents: want deleted=2, got %s", r)
				}
				n, r = s.deleted(ctx, []string{a, b})
				return check(n == 0, "repeat delete: want deleted=0, got %s", r)
			}},
		{ID: "index.delete-absent", Name: "deleting an absent id is not an error (deleted:0)", Level: L2, Section: "§7.11", Requirement: Must, Needs: []string{"index"},
			run: func(ctx context.Context, s *suite) outcome {
				n, r := s.deleted(ctx, []string{s.uniq("never-added")})
				if r.code() == -32003 && !s.has("index.writable") {
					return skip("read-only index rejects index/delete")
				}
				return check(n == 0, "want deleted=0, got %s", r)
			}},
		{ID: "index.deleted-gone", Name: "a deleted document is no longer retrieved", Level: L2, Section: "§7.11", Requirement: Must, Needs: []string{"index.writable", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				id := s.uniq("gone")
				token := strings.ReplaceAll(id, "-", "")
				text := "vanishing probe document " + token
				if _, r := s.addDocs(ctx, []map[string]any{{"id": id, "text": text}}, nil); !r.ok() {
					return fail("add: %s", r)
				}
				if n, r := s.deleted(ctx, []string{id}); n != 1 {
					return fail("delete: %s", r)
				}
				hits, o := s.findHits(ctx, text, id)
				if o != nil {
					return *o
				}
				return check(len(hits) == 0, "deleted id %s still retrieved", id)
			}},
		{ID: "index.add-invalid", Name: "malformed index/add params are rejected with -32602", Level: L0, Section: "§12, §14.1", Requirement: Must, Needs: w,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "index/add", map[string]any{"documents": "not-an-array"})
				if r.code() != -32602 {
					return fail("documents as a string: want -32602, got %s", r)
				}
				r = s.call(ctx, "index/add", map[string]any{"documents": []any{map[string]any{"id": s.uniq("notext")}}})
				return check(r.code() == -32602, "document without text: want -32602, got %s", r)
			}},
		{ID: "index.read-only", Name: "index/add on a read-only index (writable:false) is rejected", Level: L2, Section: "§7.10", Requirement: Must, Needs: []string{"index"},
			run: func(ctx context.Context, s *suite) outcome {
				if s.has("index.writable") {
					return skip("index is writable")
				}
				r := s.call(ctx, "index/add", map[string]any{"documents": []any{map[string]any{"id": s.uniq("ro"), "text": "read-only probe"}}})
				return check(r != nil && r.Err != nil, "a read-only index accepted a write: %s", r)
			}},
	}
}

// ---------------------------------------------------------------- §9 progress, §17 log

func streamingChecks() []Check {
	progress := func(token any) func(ctx context.Context, s *suite) outcome {
		return func(ctx context.Context, s *suite) outcome {
			m, p := gatedProbe(s.caps)
			p["_meta"] = map[string]any{"progressToken": token}
			id := fmt.Sprintf("prog-%v", token)
			var rep *reply
			if s.transport() == "http" {
				rep, _ = s.main.roundTrip(ctx, s, mustJSON(req(id, m, p)), rtOpts{path: m, header: map[string]string{"Accept": "text/event-stream"}})
			} else {
				rep, _ = s.main.roundTrip(ctx, s, mustJSON(req(id, m, p)), rtOpts{want: []string{"s:" + id}, quiet: s.opts.QuietWait})
			}
			if rep == nil || rep.find("s:"+id) == nil {
				return fail("no response: %s", framesString(rep))
			}
			seenResp, n := false, 0
			for _, f := range rep.frames {
				if f.isResponse() && idKey(f.obj["id"]) == "s:"+id {
					seenResp = true
					continue
				}
				if f.method() != "notifications/progress" {
					continue
				}
				n++
				if seenResp {
					return fail("progress frame after the final response: %s", truncate(string(f.raw), 160))
				}
				if why := progressOK(s, f, string(mustJSON(token))); why != "" {
					return fail("%s", why)
				}
			}
			if n == 0 {
				return passf("no progress frames emitted (allowed)")
			}
			return pass()
		}
	}
	return []Check{
		{ID: "progress.token-string", Name: "progress frames echo a string progressToken verbatim, precede the response, progress ∈ [0,1]", Level: L2, Section: "§9", Requirement: Must, Needs: []string{"streaming"},
			run: progress("rcp-conf-tok-ü")},
		{ID: "progress.token-int", Name: "progress frames echo an integer progressToken as an integer", Level: L2, Section: "§9", Requirement: Must, Needs: []string{"streaming"},
			run: progress(4242)},
		{ID: "progress.none-without-token", Name: "no progress is emitted for a request without a progressToken", Level: L0, Section: "§9, §7.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				m, p := gatedProbe(s.caps)
				id := "noprog-1"
				var rep *reply
				if s.transport() == "http" {
					rep, _ = s.main.roundTrip(ctx, s, mustJSON(req(id, m, p)), rtOpts{path: m, header: map[string]string{"Accept": "text/event-stream"}})
				} else {
					rep, _ = s.main.roundTrip(ctx, s, mustJSON(req(id, m, p)), rtOpts{want: []string{"s:" + id}, quiet: s.opts.QuietWait})
				}
				for _, f := range rep.notifications() {
					if f.method() == "notifications/progress" {
						return fail("unsolicited progress: %s", truncate(string(f.raw), 160))
					}
				}
				return check(rep.find("s:"+id) != nil, "no response: %s", framesString(rep))
			}},
	}
}

// ---------------------------------------------------------------- fresh sessions (§7.1, §7.12, §13)

// withFresh opens a fresh session, runs fn, and closes it.
func (s *suite) withFresh(ctx context.Context, fn func(sess *session) outcome) outcome {
	sess, err := s.openSession(ctx)
	if err != nil {
		return fail("cannot open a fresh session: %v", err)
	}
	defer sess.close()
	return fn(sess)
}

func (s *suite) freshCall(ctx context.Context, sess *session, method string, params any) *response {
	return sess.callT(ctx, s, method, params, s.opts.StartTimeout)
}

func freshSessionChecks() []Check {
	return []Check{
		{ID: "session.version-negotiation", Name: "initialize with a higher protocolVersion negotiates down (min of both)", Level: L0, Section: "§7.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					p := s.initParams()
					p["protocolVersion"] = 99
					r := s.freshCall(ctx, sess, "initialize", p)
					if o := s.httpGlobalSession(r); o != nil {
						return *o
					}
					if !r.ok() {
						return fail("want a negotiated result, got %s", r)
					}
					var ir initResult
					_ = json.Unmarshal(r.Result, &ir)
					return check(ir.ProtocolVersion >= 1 && ir.ProtocolVersion <= 99, "client offered 99; negotiated %d (want min(99, server's highest) ≥ 1)", ir.ProtocolVersion)
				})
			}},
		{ID: "session.init-extras", Name: "initialize tolerates unknown client capabilities, _meta and fields", Level: L0, Section: "§7.1, §6.2, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					p := s.initParams()
					p["capabilities"] = map[string]any{"x-rcpconformance": map[string]any{"probe": true}, "futureCap": map[string]any{}}
					p["_meta"] = map[string]any{"x-rcpconformance-trace": "t", "traceId": "abc"}
					p["x-unknown-field"] = []int{1}
					r := s.freshCall(ctx, sess, "initialize", p)
					if o := s.httpGlobalSession(r); o != nil {
						return *o
					}
					return check(r.ok(), "%s", r)
				})
			}},
		{ID: "session.init-no-client-caps", Name: "initialize without client capabilities succeeds", Level: L0, Section: "§7.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					r := s.freshCall(ctx, sess, "initialize", map[string]any{"protocolVersion": 1, "client": map[string]any{"name": "rcp-conformance"}})
					if o := s.httpGlobalSession(r); o != nil {
						return *o
					}
					return check(r.ok(), "%s", r)
				})
			}},
		{ID: "session.init-after-failed", Name: "a repeated initialize after a failed one is accepted", Level: L0, Section: "§13", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					p := s.initParams()
					p["protocolVersion"] = 0
					if r := s.freshCall(ctx, sess, "initialize", p); r.code() != -32002 {
						return skip("protocolVersion 0 was not rejected (see preinit.version-mismatch)")
					}
					r := s.freshCall(ctx, sess, "initialize", s.initParams())
					return check(r.ok(), "%s", r)
				})
			}},
		{ID: "session.capabilities-stable", Name: "info in a fresh session before initialize, initialize, and info after agree", Level: L0, Section: "§13.2", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					r := s.freshCall(ctx, sess, "initialize", s.initParams())
					if !r.ok() {
						return fail("initialize: %s", r)
					}
					var a, b initResult
					_ = json.Unmarshal(r.Result, &a)
					for i := 0; i < 3; i++ {
						s.freshCall(ctx, sess, "ping", map[string]any{})
					}
					r = s.freshCall(ctx, sess, "info", map[string]any{})
					if !r.ok() {
						return fail("info: %s", r)
					}
					_ = json.Unmarshal(r.Result, &b)
					var ca, cb any
					_ = json.Unmarshal(a.Capabilities, &ca)
					_ = json.Unmarshal(b.Capabilities, &cb)
					return check(string(mustJSON(ca)) == string(mustJSON(cb)), "initialize %s vs info %s", truncate(string(a.Capabilities), 200), truncate(string(b.Capabilities), 200))
				})
			}},
		{ID: "session.shutdown-preinit", Name: "shutdown is answered {} before initialize", Level: L0, Section: "§7.12, §13", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					r := s.freshCall(ctx, sess, "shutdown", map[string]any{})
					return check(r.ok(), "%s", r)
				})
			}},
		{ID: "session.no-work-after-shutdown", Name: "no request is processed after the shutdown response", Level: L0, Section: "§13.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					if r := s.freshCall(ctx, sess, "initialize", s.initParams()); !r.ok() {
						return fail("initialize: %s", r)
					}
					if r := s.freshCall(ctx, sess, "shutdown", map[string]any{}); !r.ok() {
						return fail("shutdown: %s", r)
					}
					rep, _ := sess.roundTrip(ctx, s, mustJSON(req("after-shutdown", "info", map[string]any{})), rtOpts{want: []string{"s:after-shutdown"}, timeout: s.opts.QuietWait * 2})
					if r := rep.find("s:after-shutdown"); r.ok() {
						return fail("info after shutdown was processed: %s", r)
					}
					return pass()
				})
			}},
		{ID: "session.exit-after-shutdown", Name: "the server exits after answering shutdown", Level: L0, Section: "§13.1", Requirement: Should, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					if r := s.freshCall(ctx, sess, "shutdown", map[string]any{}); !r.ok() {
						return fail("shutdown: %s", r)
					}
					sc := sess.c.(*stdioConn)
					select {
					case <-sc.done:
						return pass()
					case <-time.After(3 * time.Second):
						return fail("stdout still open 3s after the shutdown response")
					}
				})
			}},
		{ID: "session.eof-flush", Name: "EOF on stdin flushes in-flight responses, then the server exits", Level: L0, Section: "§5.1, §13.1", Requirement: Should, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					sc := sess.c.(*stdioConn)
					if r := s.freshCall(ctx, sess, "ping", map[string]any{}); !r.ok() {
						return fail("ping: %s", r)
					}
					if err := sc.write(append(mustJSON(req("eof-1", "ping", map[string]any{"nonce": "eof"})), '\n')); err != nil {
						return fail("write: %v", err)
					}
					_ = sc.w.Close()
					rep, _ := sc.collect(ctx, rtOpts{want: []string{"s:eof-1"}, timeout: 3 * time.Second})
					if !rep.find("s:eof-1").ok() {
						return fail("in-flight request not answered after EOF: %s", framesString(rep))
					}
					select {
					case <-sc.done:
						return pass()
					case <-time.After(3 * time.Second):
						return fail("server still running 3s after EOF on stdin")
					}
				})
			}},
		{ID: "log.opt-in", Name: "after opting in, notifications/log frames are schema-valid", Level: L2, Section: "§17.1", Requirement: Must, Needs: []string{"log"}, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					frames, o := s.loggedSession(ctx, sess, "debug")
					if o != nil {
						return *o
					}
					for _, f := range frames {
						if err := s.validate("LogNotification", f.raw); err != nil {
							return fail("%v: %s", err, truncate(string(f.raw), 160))
						}
					}
					if len(frames) == 0 {
						return passf("no log frames emitted (allowed)")
					}
					return passf("%d log frames", len(frames))
				})
			}},
		{ID: "log.level-honoured", Name: "logLevel error suppresses lower-severity notifications/log", Level: L2, Section: "§17.1", Requirement: Should, Needs: []string{"log"}, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					frames, o := s.loggedSession(ctx, sess, "error")
					if o != nil {
						return *o
					}
					for _, f := range frames {
						var p struct {
							Params struct {
								Level string `json:"level"`
							} `json:"params"`
						}
						_ = json.Unmarshal(f.raw, &p)
						if p.Params.Level != "error" {
							return fail("level %q emitted with logLevel error", p.Params.Level)
						}
					}
					return pass()
				})
			}},
	}
}

// httpGlobalSession skips a fresh-client initialize probe that an HTTP server
// rejected as a repeat: that is judged once, by http.initialize-per-client.
func (s *suite) httpGlobalSession(r *response) *outcome {
	if s.transport() == "http" && r.code() == -32600 {
		o := skip("the HTTP server rejects a second client's initialize (see http.initialize-per-client)")
		return &o
	}
	return nil
}

// loggedSession opts into logs, exercises the server and returns the log frames.
func (s *suite) loggedSession(ctx context.Context, sess *session, level string) ([]frame, *outcome) {
	p := s.initParams()
	p["capabilities"] = map[string]any{"log": map[string]any{}}
	p["_meta"] = map[string]any{"logLevel": level}
	if r := s.freshCall(ctx, sess, "initialize", p); !r.ok() {
		o := fail("initialize with log opt-in: %s", r)
		return nil, &o
	}
	m, mp := gatedProbe(s.caps)
	mp["_meta"] = map[string]any{"logLevel": level}
	sess.callT(ctx, s, m, mp, 0)
	sess.callT(ctx, s, "does/not/exist", map[string]any{}, 0)
	_, _ = sess.roundTrip(ctx, s, nil, rtOpts{quiet: s.opts.QuietWait})
	_, frames, _, _ := sess.rec.snapshot()
	var out []frame
	for _, f := range frames {
		if f.method() == "notifications/log" {
			out = append(out, f)
		}
	}
	return out, nil
}

// ---------------------------------------------------------------- transport-wide (judged on the main session's traffic)

func globalChecks() []Check {
	return []Check{
		{ID: "global.capabilities-stable", Name: "info at the end of the run still reports the session's capabilities", Level: L0, Section: "§13.2", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome { return capsStable(ctx, s) }},
		{ID: "global.stdout-protocol-only", Name: "stdout carries only JSON-RPC frames", Level: L0, Section: "§5.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				lines := allLines(s)
				for i, l := range lines {
					if len(bytes.TrimSpace(l)) == 0 {
						continue
					}
					f := parseFrame(bytes.TrimPrefix(l, []byte("\xef\xbb\xbf")))
					if f.bad != "" {
						return fail("line %d is not JSON-RPC (%s): %s", i+1, f.bad, truncate(string(l), 160))
					}
				}
				return passf("%d lines", len(lines))
			}},
		{ID: "global.stderr-no-protocol", Name: "stderr carries no protocol messages", Level: L0, Section: "§5.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				s.mu.Lock()
				sessions := append([]*session(nil), s.sessions...)
				s.mu.Unlock()
				for _, sess := range sessions {
					if sess.stderr == nil {
						continue
					}
					if l := sess.stderr.protocolLine(); l != "" {
						return fail("JSON-RPC frame on stderr: %s", l)
					}
				}
				return pass()
			}},
		{ID: "global.no-bom", Name: "no byte-order mark is emitted", Level: L0, Section: "§5.1", Requirement: Must, Transport: "stdio",
			run: func(ctx context.Context, s *suite) outcome {
				lines := allLines(s)
				for i, l := range lines {
					if bytes.HasPrefix(l, []byte("\xef\xbb\xbf")) {
						return fail("line %d starts with a BOM", i+1)
					}
				}
				return pass()
			}},
		{ID: "global.jsonrpc-version", Name: `every frame carries jsonrpc "2.0"`, Level: L0, Section: "§4, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				for _, f := range allObjects(s) {
					var v string
					if json.Unmarshal(f["jsonrpc"], &v) != nil || v != "2.0" {
						return fail("frame without jsonrpc \"2.0\": %s", truncate(string(mustJSON(f)), 160))
					}
				}
				return pass()
			}},
		{ID: "global.schema", Name: "every frame validates against the schema's Message definition", Level: L0, Section: "§14.4, §4", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				for _, f := range allObjects(s) {
					raw := mustJSON(f)
					if err := s.validate("Message", raw); err != nil {
						return fail("%v: %s", err, truncate(string(raw), 200))
					}
				}
				return pass()
			}},
		{ID: "global.error-codes", Name: "error objects are well-formed and use no custom code in the RCP range", Level: L0, Section: "§12", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				defined := []int{-32001, -32002, -32003, -32004, -32005, -32006, -32010, -32011, -32012, -32013, -32014, -32015, -32016}
				for _, f := range allObjects(s) {
					raw, ok := f["error"]
					if !ok {
						continue
					}
					var e struct {
						Code    *json.Number `json:"code"`
						Message *string      `json:"message"`
					}
					if json.Unmarshal(raw, &e) != nil || e.Code == nil || e.Message == nil {
						return fail("malformed error object: %s", truncate(string(raw), 160))
					}
					c, err := e.Code.Int64()
					if err != nil {
						return fail("non-integer error code %s", *e.Code)
					}
					if c <= -32000 && c >= -32099 && !slices.Contains(defined, int(c)) {
						return fail("custom code %d in the reserved RCP range", c)
					}
				}
				return pass()
			}},
		{ID: "global.answered-once", Name: "every request is answered at most once and only requests are answered", Level: L0, Section: "§13.1, §4.5", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				for _, m := range s.mains {
					_, frames, sent, _ := m.rec.snapshot()
					counts := map[string]int{}
					for _, f := range objectsOf(frames) {
						fr := frame{obj: f}
						if !fr.isResponse() {
							continue
						}
						k := idKey(f["id"])
						if k == "null" {
							continue
						}
						counts[k]++
						if sent[k] == 0 {
							return fail("response for id %s that was never sent", f["id"])
						}
					}
					for k, n := range counts {
						if n > sent[k] {
							return fail("id %s answered %d times for %d requests", k, n, sent[k])
						}
					}
				}
				return pass()
			}},
		{ID: "global.no-unsolicited-progress", Name: "progress is only sent for progress tokens the client supplied", Level: L0, Section: "§9, §7.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				toks := map[string]bool{}
				for _, m := range s.mains {
					_, _, _, t := m.rec.snapshot()
					maps.Copy(toks, t)
				}
				for _, f := range allObjects(s) {
					if (frame{obj: f}).method() != "notifications/progress" {
						continue
					}
					var p struct {
						Params struct {
							Token json.RawMessage `json:"progressToken"`
						} `json:"params"`
					}
					_ = json.Unmarshal(mustJSON(f), &p)
					if !toks[idKey(p.Params.Token)] {
						return fail("progress for token %s the client never sent", p.Params.Token)
					}
				}
				return pass()
			}},
		{ID: "global.result-schema", Name: "every result validates against the schema bound to its method", Level: L0, Section: "§7, §14.4", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				n := 0
				for _, m := range s.mains {
					_, frames, _, _ := m.rec.snapshot()
					seen := map[string]int{}
					for _, f := range objectsOf(frames) {
						if !(frame{obj: f}).isResponse() {
							continue
						}
						k := idKey(f["id"])
						nth := seen[k]
						seen[k]++
						res, ok := f["result"]
						if !ok {
							continue
						}
						method := m.rec.methodOf(k, nth)
						if method == "" || method == "shutdown" || !slices.Contains(resultMethods, method) {
							continue
						}
						n++
						if err := s.validateResult(method, res); err != nil {
							return fail("%s result: %v", method, err)
						}
					}
				}
				return passf("%d results validated", n)
			}},
		{ID: "global.http-200", Name: "every HTTP reply carrying a JSON-RPC response has status 200", Level: L0, Section: "§5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				for _, m := range s.mains {
					m.rec.mu.Lock()
					st := append([]httpStatus(nil), m.rec.statuses...)
					m.rec.mu.Unlock()
					for _, x := range st {
						if x.status != 200 && !statusMirrorsCode(x.status, x.code) {
							return fail("HTTP %d for %s", x.status, x.body)
						}
					}
				}
				return pass()
			}},
		{ID: "global.no-unsolicited-log", Name: "no notifications/log without the client opting in", Level: L0, Section: "§7.1, §17.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				for _, f := range allObjects(s) {
					if (frame{obj: f}).method() == "notifications/log" {
						return fail("log without opt-in: %s", truncate(string(mustJSON(f)), 160))
					}
				}
				return pass()
			}},
	}
}

func allLines(s *suite) [][]byte {
	var out [][]byte
	for _, m := range s.mains {
		lines, _, _, _ := m.rec.snapshot()
		out = append(out, lines...)
	}
	return out
}

// statusMirrorsCode reports whether a non-200 status is the §5.2 table's
// transport mirror of the JSON-RPC error code in its body.
func statusMirrorsCode(status, code int) bool {
	switch status {
	case 400:
		return code == -32700 || code == -32600
	case 401, 403:
		return code == -32012
	case 429:
		return code == -32011
	case 500, 503:
		return code == -32603 || code == -32010
	}
	return false
}

var resultMethods = []string{"initialize", "info", "ping", "embed", "embed/sparse", "embed/multi", "rerank", "retrieve",
	"query/transform", "graph", "index/add", "index/delete", "catalog/list", "feedback", "memory/build", "memory/recall"}

// allObjects returns every JSON-RPC object the main sessions received (batch arrays expanded).
func allObjects(s *suite) []map[string]json.RawMessage {
	var frames []frame
	for _, m := range s.mains {
		_, f, _, _ := m.rec.snapshot()
		frames = append(frames, f...)
	}
	return objectsOf(frames)
}

func objectsOf(frames []frame) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, f := range frames {
		if f.obj != nil {
			out = append(out, f.obj)
		}
		for _, m := range f.arr {
			var o map[string]json.RawMessage
			if json.Unmarshal(m, &o) == nil && o != nil {
				out = append(out, o)
			}
		}
	}
	return out
}
