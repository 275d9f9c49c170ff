package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/internal/rcpschema"
)

// session is one connection (stdio: one server process; HTTP: one client).
type session struct {
	c         conn
	rec       *recorder
	stderr    *tailBuffer
	nextID    int
	closed    atomic.Bool
	answered  atomic.Bool // the server has sent something on this session
	closeOnce sync.Once
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
	initNote string // set when initialize was replaced by info (HTTP)
	caps     map[string]any
	declared string

	versionRejected bool
	query           string // a query that returns hits, found by the first retrieve check

	mu       sync.Mutex
	sessions []*session
	cleanup  []func()  // registered by stateful checks (index writes)
	schemas  schemaSet // ours, then any the caller added
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
	sess := &session{rec: rec, nextID: 1000} // explicit ids in checks stay below 1000
	switch {
	case s.target.isHTTP():
		hc := s.opts.HTTPClient
		if hc == nil {
			hc = &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
		}
		sess.c = &httpConn{base: s.target.URL, token: s.target.Token, client: hc, rec: rec}
	case s.target.pipe != nil:
		tail := &tailBuffer{max: 8 << 10}
		w, r, cleanup, err := s.target.pipe(ctx, tail)
		if err != nil {
			return nil, fmt.Errorf("conformance: open session: %w", err)
		}
		sess.stderr = tail
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

// waitHTTP polls the endpoint until it accepts connections (a just-started
// server may not listen yet) or the start timeout elapses.
func waitHTTP(ctx context.Context, hc *httpConn, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := hc.roundTrip(ctx, mustJSON(req("conformance-probe", "ping", map[string]any{})), rtOpts{path: "ping", timeout: timeout})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("conformance: cannot reach %s: %w", hc.base, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (sess *session) close() {
	sess.closeOnce.Do(func() {
		sess.closed.Store(true)
		_ = sess.c.close()
	})
}

// killAll closes every session (ending spawned servers); the run's watchdog
// calls it when the overall timeout expires so a blocked write cannot hang.
func (s *suite) killAll() {
	s.mu.Lock()
	sessions := append([]*session(nil), s.sessions...)
	s.mu.Unlock()
	for _, sess := range sessions {
		go sess.close()
	}
}

// runCleanup undoes the stateful checks' writes (newest first); it needs
// the main session open.
func (s *suite) runCleanup() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

func (s *suite) closeAll() {
	s.runCleanup()
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
	if hc, ok := sess.c.(*httpConn); ok {
		if err := waitHTTP(ctx, hc, s.opts.StartTimeout); err != nil {
			return err
		}
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
	if !resp.ok() && s.transport() == "http" && resp.code() == -32600 {
		// A server that keeps one process-global session rejects a second
		// client's initialize; judge the rest of it on its info result so
		// one defect does not hide every other finding.
		if info := s.main.callT(ctx, s, "info", map[string]any{}, 0); info.ok() {
			s.initNote = "initialize was rejected with -32600 (" + resp.String() + "); a stateless or per-client HTTP server must accept it (§5.2) — capabilities taken from info"
			resp = info
		}
	}
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
	if s.main == nil || s.main.closed.Load() {
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
	if !sess.answered.Load() && len(o.want) > 0 && o.timeout < s.opts.StartTimeout {
		o.timeout = s.opts.StartTimeout // a just-spawned server may still be booting
	}
	rep, err := sess.c.roundTrip(ctx, payload, o)
	if rep != nil && len(rep.frames) > 0 {
		sess.answered.Store(true)
	}
	return rep, err
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
	rep, _ := sess.roundTrip(ctx, s, mustJSON(req(id, method, params)), rtOpts{path: method, want: []string{key}, timeout: timeout})
	if rep == nil {
		return nil, &reply{}
	}
	return rep.find(key), rep
}

// call sends a request on the main session.
func (s *suite) call(ctx context.Context, method string, params any) *response {
	return s.main.callT(ctx, s, method, params, 0)
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

// Every frame and result is validated against rcpgo's own RCP/1 schema,
// generated from the SDK's wire types and embedded (internal/rcpschema),
// and against any schema the caller adds (Options.SchemaPath: the
// normative schema of the specification, say). A message fails when any
// of them rejects it.

// schemaSet is the schemas of a run, ours first.
type schemaSet []namedSchema

type namedSchema struct {
	name   string
	schema *rcpschema.Schema
}

// loadSchemas returns our schema and, when path is set, the schema in that file.
func loadSchemas(path string) (schemaSet, error) {
	set := schemaSet{{"", rcpschema.Embedded()}}
	if path == "" {
		return set, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: schema: %w", err)
	}
	sch, err := rcpschema.Load(b)
	if err != nil {
		return nil, fmt.Errorf("conformance: schema %s: %w", path, err)
	}
	return append(set, namedSchema{filepath.Base(path), sch}), nil
}

// validate checks raw JSON against a $defs entry of every schema of the run.
func (s *suite) validate(def string, raw []byte) error {
	for _, sc := range s.schemas {
		if err := sc.schema.Validate(def, raw); err != nil {
			msg := truncate(strings.ReplaceAll(err.Error(), "\n", " "), 400)
			if sc.name != "" {
				msg = "against " + sc.name + ": " + msg
			}
			return errors.New(msg)
		}
	}
	return nil
}

// validateResult validates a result against the schema bound to its method (ResultFor).
func (s *suite) validateResult(method string, result json.RawMessage) error {
	return s.validate("ResultFor", mustJSON(map[string]any{"method": method, "result": result}))
}

// ---------------------------------------------------------------- misc

// tailBuffer keeps the tail of a server's stderr and remembers the first
// line that looks like a JSON-RPC frame (§5.1: stderr MUST NOT carry them).
type tailBuffer struct {
	mu       sync.Mutex
	buf      []byte
	max      int
	partial  []byte
	protocol string
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(t.partial[:i])
		t.partial = t.partial[i+1:]
		if t.protocol == "" && looksLikeFrame(line) {
			t.protocol = truncate(string(line), 160)
		}
	}
	if len(t.partial) > 1<<16 {
		t.partial = nil
	}
	return len(p), nil
}

// protocolLine returns the first stderr line that was a JSON-RPC frame.
func (t *tailBuffer) protocolLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.protocol
}

func looksLikeFrame(line []byte) bool {
	var m map[string]json.RawMessage
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return false
	}
	_, ok := m["jsonrpc"]
	return ok
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
