package conformance

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// session is one connection (stdio: one server process; HTTP: one client).
type session struct {
	c      conn
	rec    *recorder
	stderr *tailBuffer
	nextID int
	closed bool
}

type initResult struct {
	ProtocolVersion int             `json:"protocolVersion"`
	Server          Peer            `json:"server"`
	Capabilities    json.RawMessage `json:"capabilities"`
	Meta            map[string]any  `json:"_meta"`
}

type suite struct {
	target Target
	opts   Options

	main     *session
	mains    []*session // every main session (restarts after crashes)
	initRes  *initResult
	initRaw  json.RawMessage
	initErr  string
	caps     map[string]any
	declared string

	versionRejected bool
	query           string // a query that returns hits, found by the first retrieve check

	mu       sync.Mutex
	sessions []*session
	cleanup  []func() // registered by stateful checks (index writes)
}

func (s *suite) transport() string {
	if s.target.isHTTP() {
		return "http"
	}
	return "stdio"
}

// openSession starts a fresh session: a new server process for stdio, a new
// client for HTTP.
func (s *suite) openSession(ctx context.Context) (*session, error) {
	rec := newRecorder()
	sess := &session{rec: rec, nextID: 1}
	switch {
	case s.target.isHTTP():
		hc := s.opts.HTTPClient
		if hc == nil {
			hc = &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
		}
		sess.c = &httpConn{base: s.target.URL, token: s.target.Token, client: hc, rec: rec}
	case s.target.pipe != nil:
		w, r, cleanup, err := s.target.pipe(ctx)
		if err != nil {
			return nil, fmt.Errorf("conformance: open session: %w", err)
		}
		sess.c = newStdioConn(w, r, cleanup, rec)
	default:
		tail := &tailBuffer{max: 8 << 10}
		cmd := exec.Command(s.target.Command[0], s.target.Command[1:]...)
		cmd.Dir = s.target.Dir
		if s.target.Env != nil {
			cmd.Env = s.target.Env
		}
		cmd.Stderr = tail
		setProcessGroup(cmd)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("conformance: start %q: %w", s.target.Command[0], err)
		}
		waited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(waited) }()
		cleanup := func() error {
			select {
			case <-waited:
			case <-time.After(2 * time.Second):
				killProcessGroup(cmd)
				select {
				case <-waited:
				case <-time.After(2 * time.Second):
				}
			}
			return nil
		}
		sess.stderr = tail
		sess.c = newStdioConn(stdin, stdout, cleanup, rec)
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, sess)
	s.mu.Unlock()
	return sess, nil
}

func (sess *session) close() {
	if sess.closed {
		return
	}
	sess.closed = true
	_ = sess.c.close()
}

func (s *suite) closeAll() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		sess.close()
	}
}

func (s *suite) stderrTail() string {
	if s.main == nil || s.main.stderr == nil {
		return ""
	}
	return s.main.stderr.String()
}

func (s *suite) openMain(ctx context.Context) error {
	sess, err := s.openSession(ctx)
	if err != nil {
		return err
	}
	s.main = sess
	s.mains = append(s.mains, sess)
	return nil
}

func (s *suite) mainExited() bool {
	sc, ok := s.main.c.(*stdioConn)
	return ok && sc.exited()
}

// restartMain replaces a crashed main session and repeats the handshake.
func (s *suite) restartMain(ctx context.Context) error {
	s.main.close()
	if err := s.openMain(ctx); err != nil {
		return err
	}
	if s.initRes != nil {
		s.main.callT(ctx, s, "initialize", s.initParams(), s.opts.StartTimeout)
	}
	return nil
}

func (s *suite) initParams() map[string]any {
	return map[string]any{
		"protocolVersion": 1,
		"client":          map[string]any{"name": "rcp-conformance", "version": "1.0"},
		"capabilities":    map[string]any{},
	}
}

// initMain performs the main session's handshake (once).
func (s *suite) initMain(ctx context.Context) {
	if s.initRes != nil || s.initErr != "" {
		return
	}
	resp := s.main.callT(ctx, s, "initialize", s.initParams(), s.opts.StartTimeout)
	if !resp.ok() {
		s.initErr = resp.String()
		return
	}
	var ir initResult
	if err := json.Unmarshal(resp.Result, &ir); err != nil {
		s.initErr = "initialize result does not decode: " + err.Error()
		return
	}
	s.initRes, s.initRaw = &ir, resp.Result
	_ = json.Unmarshal(ir.Capabilities, &s.caps)
	if s.caps == nil {
		s.caps = map[string]any{}
	}
	if d, ok := ir.Meta["conformance"].(string); ok {
		s.declared = d
	}
	if hc, ok := s.main.c.(*httpConn); ok {
		if tok, ok := ir.Meta["session"].(string); ok && tok != "" {
			hc.session = tok
		}
	}
}

func (s *suite) shutdownMain(ctx context.Context) {
	if s.main == nil || s.main.closed {
		return
	}
	if s.transport() == "stdio" {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, _ = s.main.roundTrip(ctx, s, mustJSON(req("conformance-shutdown", "shutdown", map[string]any{})), rtOpts{want: []string{"s:conformance-shutdown"}, timeout: time.Second})
	}
	s.main.close()
}

// ---------------------------------------------------------------- calls

func req(id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	return m
}

func (sess *session) roundTrip(ctx context.Context, s *suite, payload []byte, o rtOpts) (*reply, error) {
	if o.timeout == 0 {
		o.timeout = s.opts.CallTimeout
	}
	return sess.c.roundTrip(ctx, payload, o)
}

// callT sends one request with a fresh integer id and waits for its response.
func (sess *session) callT(ctx context.Context, s *suite, method string, params any, timeout time.Duration) *response {
	sess.nextID++
	id := sess.nextID
	resp, _ := sess.callID(ctx, s, id, method, params, timeout)
	return resp
}

// callID sends one request with the given id; it returns the response (nil on
// timeout) and the whole reply (notifications included).
func (sess *session) callID(ctx context.Context, s *suite, id any, method string, params any, timeout time.Duration) (*response, *reply) {
	key := idKey(mustJSON(id))
	rep, err := sess.roundTrip(ctx, s, mustJSON(req(id, method, params)), rtOpts{path: method, want: []string{key}, timeout: timeout})
	if err != nil || rep == nil {
		return nil, rep
	}
	return rep.find(key), rep
}

// call sends a request on the main session.
func (s *suite) call(ctx context.Context, method string, params any) *response {
	return s.main.callT(ctx, s, method, params, 0)
}

// callFull is call returning the reply too.
func (s *suite) callFull(ctx context.Context, method string, params any) (*response, *reply) {
	s.main.nextID++
	return s.main.callID(ctx, s, s.main.nextID, method, params, 0)
}

// notify sends a frame expected to go unanswered and returns whatever arrived
// within the quiet window (stdio) or the HTTP reply.
func (s *suite) notify(ctx context.Context, sess *session, frameObj any, path string) *reply {
	rep, err := sess.roundTrip(ctx, s, mustJSON(frameObj), rtOpts{path: path, quiet: s.opts.QuietWait})
	if err != nil && rep == nil {
		return &reply{}
	}
	return rep
}

// sendRaw writes raw bytes (HTTP: as a POST body to path) and waits for all the wanted ids.
func (s *suite) sendRaw(ctx context.Context, sess *session, payload []byte, path string, want ...string) *reply {
	return s.sendRawOpts(ctx, sess, payload, rtOpts{path: path, want: want})
}

// sendRawAny is sendRaw returning at the first of the wanted ids.
func (s *suite) sendRawAny(ctx context.Context, sess *session, payload []byte, path string, want ...string) *reply {
	return s.sendRawOpts(ctx, sess, payload, rtOpts{path: path, want: want, anyOf: true})
}

func (s *suite) sendRawOpts(ctx context.Context, sess *session, payload []byte, o rtOpts) *reply {
	want := o.want
	if len(want) == 0 {
		o.quiet = s.opts.QuietWait
	}
	rep, _ := sess.roundTrip(ctx, s, payload, o)
	if rep == nil {
		rep = &reply{}
	}
	return rep
}

// unanswered judges a notification reply: nil when nothing that looks like a
// response came back.
func unanswered(rep *reply) string {
	if rep == nil {
		return ""
	}
	if rep.status != 0 {
		if len(bytes.TrimSpace(rep.body)) == 0 {
			return ""
		}
		if rs := rep.responses(); len(rs) > 0 {
			return fmt.Sprintf("HTTP %d with a JSON-RPC response: %s", rep.status, truncate(string(rep.body), 200))
		}
		return ""
	}
	for _, f := range rep.frames {
		if f.isResponse() || f.arr != nil {
			return "answered: " + truncate(string(f.raw), 200)
		}
	}
	return ""
}

// ---------------------------------------------------------------- capabilities

func (s *suite) capValue(path string) (any, bool) {
	var cur any = s.caps
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[part]
		if !ok || v == nil {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// has reports whether a capability path is advertised: present and not false.
func (s *suite) has(path string) bool {
	v, ok := s.capValue(path)
	if !ok {
		return false
	}
	if b, isBool := v.(bool); isBool {
		return b
	}
	return true
}

func (s *suite) capStrings(path string) []string {
	v, _ := s.capValue(path)
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if str, ok := x.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

func (s *suite) capInt(path string) (int, bool) {
	v, _ := s.capValue(path)
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// ---------------------------------------------------------------- schema

//go:embed rcp-1.0.schema.json
var schemaJSON []byte

const schemaURL = "https://rcp.invalid/rcp-1.0.json"

var (
	schemaOnce  sync.Once
	schemaErr   error
	schemaComp  *jsonschema.Compiler
	schemaCache sync.Map // def → *jsonschema.Schema
)

func schemaFor(def string) (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			schemaErr = err
			return
		}
		if m, ok := doc.(map[string]any); ok {
			m["$id"] = schemaURL
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(schemaURL, doc); err != nil {
			schemaErr = err
			return
		}
		schemaComp = c
	})
	if schemaErr != nil {
		return nil, schemaErr
	}
	if v, ok := schemaCache.Load(def); ok {
		return v.(*jsonschema.Schema), nil
	}
	sch, err := schemaComp.Compile(schemaURL + "#/$defs/" + def)
	if err != nil {
		return nil, err
	}
	schemaCache.Store(def, sch)
	return sch, nil
}

var schemaMu sync.Mutex // the compiler is not safe for concurrent Compile

// validate checks raw JSON against a $defs entry of the normative schema.
func validate(def string, raw []byte) error {
	schemaMu.Lock()
	sch, err := schemaFor(def)
	schemaMu.Unlock()
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s", truncate(strings.ReplaceAll(err.Error(), "\n", " "), 400))
	}
	return nil
}

// validateResult validates a result against the schema bound to its method (ResultFor).
func validateResult(method string, result json.RawMessage) error {
	return validate("ResultFor", mustJSON(map[string]any{"method": method, "result": result}))
}

// ---------------------------------------------------------------- misc

type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
