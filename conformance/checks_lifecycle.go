package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ---------------------------------------------------------------- §7.14 cancellation, §13.1 deadlines

func lifecycleChecks() []Check {
	return []Check{
		{ID: "cancel.inflight", Name: "a cancelled request gets exactly one response: its result or -32006", Level: L0, Section: "§7.14, §13.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				m, p := gatedProbe(s.caps)
				id := "cancel-me-1"
				reqB := mustJSON(req(id, m, p))
				cancelB := mustJSON(req(nil, "notifications/cancel", map[string]any{"id": id, "reason": "conformance"}))
				if s.transport() == "http" {
					var wg sync.WaitGroup
					var rep *reply
					wg.Add(1)
					go func() {
						defer wg.Done()
						rep, _ = s.main.roundTrip(ctx, s, reqB, rtOpts{path: m})
					}()
					time.Sleep(5 * time.Millisecond)
					crep, _ := s.main.roundTrip(ctx, s, cancelB, rtOpts{path: "notifications/cancel"})
					wg.Wait()
					if why := unanswered(crep); why != "" {
						return fail("the cancel notification was answered: %s", why)
					}
					return judgeCancelled(rep, "s:"+id)
				}
				payload := append(append(append([]byte{}, reqB...), '\n'), cancelB...)
				rep, _ := s.main.roundTrip(ctx, s, payload, rtOpts{want: []string{"s:" + id}, quiet: s.opts.QuietWait})
				return judgeCancelled(rep, "s:"+id)
			}},
		{ID: "cancel.answered-noop", Name: "cancelling an already-answered id is a silent no-op", Level: L0, Section: "§7.14, §14.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r, _ := s.main.callID(ctx, s, "answered-1", "ping", map[string]any{}, 0)
				if !r.ok() {
					return fail("ping: %s", r)
				}
				rep := s.notify(ctx, s.main, req(nil, "notifications/cancel", map[string]any{"id": "answered-1"}), "notifications/cancel")
				if why := unanswered(rep); why != "" {
					return fail("%s", why)
				}
				if r := s.call(ctx, "ping", map[string]any{"nonce": 1}); !r.ok() {
					return fail("ping after the cancel: %s", r)
				}
				return pass()
			}},
		{ID: "cancel.as-request", Name: "notifications/cancel sent with an id (malformed) is answered with an error", Level: L0, Section: "§7.14, §13.1", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				r, rep := s.main.callID(ctx, s, "cancel-as-request", "notifications/cancel", map[string]any{"id": 1}, 0)
				if rep != nil && rep.status == 400 {
					return passf("HTTP 400")
				}
				if r == nil {
					return fail("not answered: a frame with an id must get exactly one response")
				}
				return check(r.Err != nil, "answered with a result: %s", r)
			}},
		{ID: "deadline.tiny", Name: "a request with _meta.deadlineMs:1 is answered exactly once (result or -32014)", Level: L0, Section: "§13.1, §16.2", Requirement: Must,
			run: func(ctx context.Context, s *suite) outcome {
				m, p := gatedProbe(s.caps)
				p["_meta"] = map[string]any{"deadlineMs": 1}
				id := "deadline-1"
				rep, _ := s.main.roundTrip(ctx, s, mustJSON(req(id, m, p)), rtOpts{path: m, want: []string{"s:" + id}, quiet: s.opts.QuietWait})
				var got []*response
				for _, r := range rep.responses() {
					if idKey(r.ID) == "s:"+id {
						got = append(got, r)
					}
				}
				if len(got) != 1 {
					return fail("want exactly one response, got %d: %s", len(got), framesString(rep))
				}
				return check(got[0].ok() || got[0].code() == -32014, "want a result or -32014, got %s", got[0])
			}},
	}
}

func judgeCancelled(rep *reply, key string) outcome {
	if rep == nil {
		return fail("no reply")
	}
	var got []*response
	for _, r := range rep.responses() {
		if idKey(r.ID) == key {
			got = append(got, r)
		}
	}
	switch {
	case len(got) == 0:
		return fail("the cancelled request was never answered")
	case len(got) > 1:
		return fail("the cancelled request was answered %d times: %s", len(got), framesString(rep))
	case got[0].ok():
		return passf("completed before the cancel took effect")
	case got[0].code() == -32006:
		return pass()
	}
	return fail("want its result or -32006, got %s", got[0])
}

// ---------------------------------------------------------------- §5.2 HTTP

func httpChecks() []Check {
	auth := func(ctx context.Context, s *suite) *outcome {
		if s.target.Token == "" || s.target.SkipAuthProbe {
			o := skip("no --token configured")
			return &o
		}
		return nil
	}
	authCode := func(rep *reply, key string) (int, string) {
		if rep == nil {
			return 0, "no reply"
		}
		r := rep.find(key)
		if r == nil {
			r = rep.find("null")
		}
		if r == nil {
			return 0, fmt.Sprintf("HTTP %d with no JSON-RPC error body (%s)", rep.status, truncate(string(rep.body), 120))
		}
		return r.code(), fmt.Sprintf("HTTP %d %s", rep.status, r)
	}
	unauth := func(ctx context.Context, s *suite, id, method string, params any, hdr map[string]string) (int, string) {
		rep, err := s.main.roundTrip(ctx, s, mustJSON(req(id, method, params)), rtOpts{path: method, noAuth: true, header: hdr})
		if err != nil {
			return 0, err.Error()
		}
		return authCode(rep, "s:"+id)
	}
	return []Check{
		{ID: "http.response", Name: "POST <base>/<method> answers 200 with application/json", Level: L0, Section: "§5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req("h-1", "info", map[string]any{})), rtOpts{path: "info"})
				if err != nil {
					return fail("%v", err)
				}
				if rep.status != 200 {
					return fail("HTTP %d", rep.status)
				}
				if ct := rep.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					return fail("Content-Type %q", ct)
				}
				return check(rep.find("s:h-1").ok(), "body: %s", truncate(string(rep.body), 200))
			}},
		{ID: "http.error-200", Name: "a JSON-RPC error is returned with HTTP 200", Level: L0, Section: "§5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req("h-2", "does/not/exist", map[string]any{})), rtOpts{path: "does/not/exist"})
				if err != nil {
					return fail("%v", err)
				}
				if rep.find("s:h-2") == nil {
					return fail("HTTP %d without a JSON-RPC error body: %s", rep.status, truncate(string(rep.body), 200))
				}
				return check(rep.status == 200, "HTTP %d for a well-formed JSON-RPC error", rep.status)
			}},
		{ID: "http.notification-no-body", Name: "a notification is answered without a JSON-RPC body", Level: L0, Section: "§4.5, §5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req(nil, "ping", map[string]any{})), rtOpts{path: "ping"})
				if err != nil {
					return fail("%v", err)
				}
				if why := unanswered(rep); why != "" {
					return fail("%s", why)
				}
				return check(rep.status >= 200 && rep.status < 300, "HTTP %d", rep.status)
			}},
		{ID: "http.notification-204", Name: "a notification is answered with HTTP 204", Level: L0, Section: "§5.2", Requirement: Should, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req(nil, "notifications/cancel", map[string]any{"id": "none"})), rtOpts{path: "notifications/cancel"})
				if err != nil {
					return fail("%v", err)
				}
				return check(rep.status == 204, "HTTP %d (body %q)", rep.status, truncate(string(rep.body), 80))
			}},
		{ID: "http.path-mismatch", Name: "a URL method differing from the body method is rejected with -32600", Level: L0, Section: "§5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req("h-3", "info", map[string]any{})), rtOpts{path: "ping"})
				if err != nil {
					return fail("%v", err)
				}
				r := rep.find("s:h-3")
				if r.code() != -32600 {
					return fail("POST …/ping with method info: want a -32600 response, got HTTP %d %s", rep.status, truncate(string(rep.body), 200))
				}
				return check(rep.status == 200, "-32600 is a well-formed JSON-RPC response and must come with HTTP 200, got %d", rep.status)
			}},
		{ID: "http.bad-json", Name: "a body that is not JSON gets HTTP 400 or a -32700 response", Level: L0, Section: "§5.2, §12", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				rep, err := s.main.roundTrip(ctx, s, []byte(`{"jsonrpc":"2.0",`), rtOpts{path: "ping"})
				if err != nil {
					return fail("%v", err)
				}
				if rep.status == 400 {
					return pass()
				}
				r := rep.find("null")
				return check(rep.status == 200 && r.code() == -32700, "want 400, or 200 with -32700; got HTTP %d %s", rep.status, truncate(string(rep.body), 200))
			}},
		{ID: "http.unknown-base", Name: "an unknown base path answers 404", Level: L0, Section: "§5.2", Requirement: Should, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				u, err := url.Parse(s.target.URL)
				if err != nil {
					return fail("%v", err)
				}
				u.Path = "/rcp-conformance-no-such-endpoint/info"
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req("h-4", "info", map[string]any{})), rtOpts{url: u.String()})
				if err != nil {
					return fail("%v", err)
				}
				return check(rep.status == 404, "HTTP %d (%s)", rep.status, truncate(string(rep.body), 120))
			}},
		{ID: "http.initialize-per-client", Name: "a second HTTP client can initialize (no process-global session)", Level: L0, Section: "§5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				return s.withFresh(ctx, func(sess *session) outcome {
					r := s.freshCall(ctx, sess, "initialize", s.initParams())
					if r.ok() {
						return pass()
					}
					return fail("a new client's initialize was rejected after another client initialized: %s", r)
				})
			}},
		{ID: "http.no-sse-unless-asked", Name: "without Accept: text/event-stream a progress request gets one buffered JSON response", Level: L2, Section: "§5.2", Requirement: Must, Transport: "http", Needs: []string{"streaming"},
			run: func(ctx context.Context, s *suite) outcome {
				m, p := gatedProbe(s.caps)
				p["_meta"] = map[string]any{"progressToken": "h-tok"}
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req("h-5", m, p)), rtOpts{path: m})
				if err != nil {
					return fail("%v", err)
				}
				if ct := rep.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					return fail("Content-Type %q", ct)
				}
				return check(len(rep.frames) == 1 && rep.find("s:h-5") != nil, "body: %s", truncate(string(rep.body), 200))
			}},
		{ID: "http.sse-framing", Name: "SSE: progress frames, then exactly one final response frame, then the stream ends", Level: L2, Section: "§5.2, §9", Requirement: Must, Transport: "http", Needs: []string{"streaming"},
			run: func(ctx context.Context, s *suite) outcome {
				m, p := gatedProbe(s.caps)
				p["_meta"] = map[string]any{"progressToken": "sse-tok"}
				rep, err := s.main.roundTrip(ctx, s, mustJSON(req("h-6", m, p)), rtOpts{path: m, header: map[string]string{"Accept": "text/event-stream"}})
				if err != nil {
					return fail("%v", err)
				}
				ct := rep.header.Get("Content-Type")
				if !strings.HasPrefix(ct, "text/event-stream") {
					if strings.HasPrefix(ct, "application/json") && rep.find("s:h-6") != nil {
						return passf("server answered with buffered JSON (SSE is a MAY)")
					}
					return fail("Content-Type %q", ct)
				}
				if len(rep.frames) == 0 {
					return fail("empty event stream")
				}
				for i, f := range rep.frames {
					last := i == len(rep.frames)-1
					if f.obj == nil {
						return fail("frame %d is not a JSON object: %s", i, truncate(string(f.raw), 120))
					}
					if bytes.ContainsRune(bytes.TrimSpace(f.raw), '\n') {
						return fail("frame %d spans several data lines", i)
					}
					if last {
						if !f.isResponse() || idKey(f.obj["id"]) != "s:h-6" {
							return fail("last frame is not the response: %s", truncate(string(f.raw), 160))
						}
						continue
					}
					if f.method() != "notifications/progress" {
						return fail("frame %d before the response is not notifications/progress: %s", i, truncate(string(f.raw), 160))
					}
					if o := progressOK(s, f, `"sse-tok"`); o != "" {
						return fail("frame %d: %s", i, o)
					}
				}
				return pass()
			}},
		{ID: "http.auth-missing", Name: "a request without credentials is answered -32012", Level: L0, Section: "§15.6, §5.2", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				if o := auth(ctx, s); o != nil {
					return *o
				}
				code, d := unauth(ctx, s, "a-1", "info", map[string]any{}, nil)
				return check(code == -32012, "want -32012, got %s", d)
			}},
		{ID: "http.auth-wrong", Name: "a wrong bearer token is answered -32012", Level: L0, Section: "§15.6", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				if o := auth(ctx, s); o != nil {
					return *o
				}
				code, d := unauth(ctx, s, "a-2", "info", map[string]any{}, map[string]string{"Authorization": "Bearer rcp-conformance-wrong-token"})
				return check(code == -32012, "want -32012, got %s", d)
			}},
		{ID: "http.auth-before-initialize", Name: "auth applies before initialize", Level: L0, Section: "§5.2, §15.1", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				if o := auth(ctx, s); o != nil {
					return *o
				}
				code, d := unauth(ctx, s, "a-3", "initialize", s.initParams(), nil)
				return check(code == -32012, "want -32012, got %s", d)
			}},
		{ID: "http.auth-before-gating", Name: "auth applies before gating: unknown and un-advertised methods also get -32012", Level: L0, Section: "§15.6", Requirement: Should, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				if o := auth(ctx, s); o != nil {
					return *o
				}
				for _, m := range []string{"does/not/exist", "catalog/list", "memory/recall", "retrieve"} {
					code, d := unauth(ctx, s, "a-4", m, map[string]any{}, nil)
					if code != -32012 {
						return fail("%s: want -32012, got %s", m, d)
					}
				}
				return pass()
			}},
		{ID: "http.auth-not-in-params", Name: "credentials in params are not accepted", Level: L0, Section: "§15.6", Requirement: Must, Transport: "http",
			run: func(ctx context.Context, s *suite) outcome {
				if o := auth(ctx, s); o != nil {
					return *o
				}
				p := map[string]any{"token": s.target.Token, "authorization": "Bearer " + s.target.Token,
					"_meta": map[string]any{"authorization": "Bearer " + s.target.Token, "token": s.target.Token}}
				code, d := unauth(ctx, s, "a-5", "info", p, nil)
				return check(code == -32012, "want -32012, got %s", d)
			}},
	}
}

// progressOK validates one progress frame against §9; it returns "" when fine.
func progressOK(s *suite, f frame, wantToken string) string {
	if err := s.validate("ProgressNotification", f.raw); err != nil {
		return "violates ProgressNotification: " + err.Error()
	}
	var p struct {
		Params struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"params"`
	}
	_ = json.Unmarshal(f.raw, &p)
	if !bytes.Equal(bytes.TrimSpace(p.Params.Token), []byte(wantToken)) && idKey(p.Params.Token) != idKey(json.RawMessage(wantToken)) {
		return fmt.Sprintf("progressToken %s, want %s verbatim", p.Params.Token, wantToken)
	}
	return ""
}
