package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// frame is one JSON value received from the server: a line on stdio, an HTTP
// body, or one SSE data payload.
type frame struct {
	raw []byte
	obj map[string]json.RawMessage // nil when raw is not a JSON object
	arr []json.RawMessage          // non-nil when raw is a JSON array (batch reply)
	bad string                     // non-empty when raw is not a valid JSON-RPC frame
}

func parseFrame(b []byte) frame {
	f := frame{raw: append([]byte(nil), b...)}
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &f.arr); err != nil {
			f.bad = "invalid JSON: " + err.Error()
		}
		if f.arr == nil && f.bad == "" {
			f.arr = []json.RawMessage{}
		}
		return f
	}
	if err := json.Unmarshal(t, &f.obj); err != nil || f.obj == nil {
		f.bad = "not a JSON object"
		if err != nil {
			f.bad = "invalid JSON: " + err.Error()
		}
	}
	return f
}

// isResponse reports whether the frame is a single response (has id and result or error).
func (f frame) isResponse() bool {
	if f.obj == nil {
		return false
	}
	_, hasID := f.obj["id"]
	_, hasRes := f.obj["result"]
	_, hasErr := f.obj["error"]
	return hasID && (hasRes || hasErr)
}

func (f frame) method() string {
	var m string
	if f.obj != nil {
		_ = json.Unmarshal(f.obj["method"], &m)
	}
	return m
}

// idKey canonicalises a JSON id so that 7, 7.0 and 7e0 compare equal but "7" does not.
func idKey(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "<absent>"
	}
	switch t[0] {
	case '"':
		var s string
		if json.Unmarshal(t, &s) == nil {
			return "s:" + s
		}
	case 'n':
		return "null"
	default:
		if n, ok := canonNumber(string(t)); ok {
			return "n:" + n
		}
	}
	return "?:" + string(t)
}

// response is a decoded JSON-RPC response.
type response struct {
	ID     json.RawMessage
	Result json.RawMessage
	Err    *rpcError
	Raw    []byte
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (r *response) String() string {
	if r == nil {
		return "no response"
	}
	return truncate(string(r.Raw), 300)
}

// code returns the error code or 0 for a success/no response.
func (r *response) code() int {
	if r == nil || r.Err == nil {
		return 0
	}
	return r.Err.Code
}

func (r *response) ok() bool { return r != nil && r.Err == nil && r.Result != nil }

// errDataField returns error.data.<key> as a string.
func (r *response) errData(key string) string {
	if r == nil || r.Err == nil || len(r.Err.Data) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(r.Err.Data, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

func decodeResponse(raw []byte) *response {
	var w struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return nil
	}
	return &response{ID: w.ID, Result: w.Result, Err: w.Error, Raw: raw}
}

// reply is what one round trip produced.
type reply struct {
	frames   []frame // everything received (stdio: during the wait; HTTP: body frames)
	status   int     // HTTP only
	header   http.Header
	body     []byte
	timedOut bool
}

// responses flattens the reply into decoded responses (batch arrays expanded).
func (r *reply) responses() []*response {
	var out []*response
	for _, f := range r.frames {
		if f.arr != nil {
			for _, m := range f.arr {
				if resp := decodeResponse(m); resp != nil {
					out = append(out, resp)
				}
			}
			continue
		}
		if f.isResponse() {
			out = append(out, decodeResponse(f.raw))
		}
	}
	return out
}

// notifications returns the notification frames in the reply.
func (r *reply) notifications() []frame {
	var out []frame
	for _, f := range r.frames {
		if f.obj != nil && !f.isResponse() {
			if _, hasID := f.obj["id"]; !hasID {
				out = append(out, f)
			}
		}
	}
	return out
}

// find returns the response with the given id key.
func (r *reply) find(key string) *response {
	for _, resp := range r.responses() {
		if idKey(resp.ID) == key {
			return resp
		}
	}
	return nil
}

type rtOpts struct {
	path       string            // HTTP: method name appended to the base path
	url        string            // HTTP: full URL override
	header     map[string]string // HTTP: extra headers ("" value deletes)
	want       []string          // id keys whose responses end the wait
	anyOf      bool              // end the wait at the first wanted response instead of all
	quiet      time.Duration     // keep listening this long after the wanted responses (or, with no want, in total)
	timeout    time.Duration
	noAuth     bool // HTTP: do not attach the configured bearer token
	httpMethod string
}

// conn is one wire-level connection to the server under test.
type conn interface {
	roundTrip(ctx context.Context, payload []byte, o rtOpts) (*reply, error)
	transport() string
	close() error
}

// ---------------------------------------------------------------- stdio

type stdioConn struct {
	w       io.WriteCloser
	frames  chan frame
	done    chan struct{} // closed when the reader hits EOF
	cleanup func() error
	wmu     sync.Mutex
	rec     *recorder
	readErr error
}

func newStdioConn(w io.WriteCloser, r io.Reader, cleanup func() error, rec *recorder) *stdioConn {
	c := &stdioConn{w: w, frames: make(chan frame, 1024), done: make(chan struct{}), cleanup: cleanup, rec: rec}
	go c.readLoop(r)
	return c
}

func (c *stdioConn) readLoop(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			l := bytes.TrimRight(line, "\r\n")
			if c.rec != nil {
				c.rec.line(l)
			}
			if len(bytes.TrimSpace(l)) > 0 {
				f := parseFrame(l)
				if c.rec != nil {
					c.rec.frame(f)
				}
				select {
				case c.frames <- f:
				default: // drop when nobody listens for a long time; recorder still saw it
				}
			}
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

func (c *stdioConn) transport() string { return "stdio" }

// exited reports whether the server closed its stdout.
func (c *stdioConn) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *stdioConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

func (c *stdioConn) roundTrip(ctx context.Context, payload []byte, o rtOpts) (*reply, error) {
	if payload != nil {
		b := payload
		if len(b) == 0 || b[len(b)-1] != '\n' {
			b = append(append([]byte(nil), payload...), '\n')
		}
		if c.rec != nil {
			c.rec.sent(payload)
		}
		if err := c.write(b); err != nil {
			return &reply{}, fmt.Errorf("write to server stdin: %w", err)
		}
	}
	return c.collect(ctx, o)
}

func (c *stdioConn) collect(ctx context.Context, o rtOpts) (*reply, error) {
	rep := &reply{}
	pending := map[string]bool{}
	for _, k := range o.want {
		pending[k] = true
	}
	timeout := o.timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var quietC <-chan time.Time
	startQuiet := func() {
		if o.quiet > 0 {
			t := time.NewTimer(o.quiet)
			quietC = t.C
		}
	}
	if len(pending) == 0 {
		if o.quiet <= 0 {
			return rep, nil
		}
		startQuiet()
	}
	for {
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-deadline.C:
			rep.timedOut = len(pending) > 0
			return rep, nil
		case <-quietC:
			return rep, nil
		case f := <-c.frames:
			rep.frames = append(rep.frames, f)
			c.markSeen(f, pending, o.anyOf)
			if len(o.want) > 0 && len(pending) == 0 {
				if o.quiet <= 0 {
					return rep, nil
				}
				if quietC == nil {
					startQuiet()
				}
			}
		case <-c.done:
			// flush what is queued, then report
			for {
				select {
				case f := <-c.frames:
					rep.frames = append(rep.frames, f)
					c.markSeen(f, pending, o.anyOf)
					continue
				default:
				}
				break
			}
			rep.timedOut = len(pending) > 0
			if rep.timedOut {
				return rep, errServerGone
			}
			return rep, nil
		}
	}
}

var errServerGone = errors.New("server closed its stdout")

// markSeen removes the ids answered by f from pending (all of them with anyOf).
func (c *stdioConn) markSeen(f frame, pending map[string]bool, anyOf bool) {
	for _, resp := range (&reply{frames: []frame{f}}).responses() {
		if k := idKey(resp.ID); pending[k] {
			delete(pending, k)
			if anyOf {
				clear(pending)
			}
		}
	}
}

func (c *stdioConn) close() error {
	_ = c.w.Close()
	if c.cleanup != nil {
		return c.cleanup()
	}
	return nil
}

// ---------------------------------------------------------------- HTTP

type httpConn struct {
	base    string
	token   string
	session string
	client  *http.Client
	rec     *recorder
}

func (c *httpConn) transport() string { return "http" }
func (c *httpConn) close() error      { c.client.CloseIdleConnections(); return nil }

func (c *httpConn) roundTrip(ctx context.Context, payload []byte, o rtOpts) (*reply, error) {
	timeout := o.timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := o.url
	if url == "" {
		url = strings.TrimRight(c.base, "/")
		if o.path != "" {
			url += "/" + o.path
		}
	}
	m := o.httpMethod
	if m == "" {
		m = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, m, url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != "" && !o.noAuth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.Header.Set("RCP-Session", c.session)
	}
	for k, v := range o.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if c.rec != nil {
		c.rec.sent(payload)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return &reply{timedOut: true}, nil
		}
		return &reply{}, err
	}
	defer resp.Body.Close()
	rep := &reply{status: resp.StatusCode, header: resp.Header}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	rep.body = body
	if err != nil && ctx.Err() != nil {
		rep.timedOut = true
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		for _, ev := range parseSSE(body) {
			f := parseFrame([]byte(ev))
			rep.frames = append(rep.frames, f)
			if c.rec != nil {
				c.rec.frame(f)
			}
		}
		return rep, nil
	}
	if len(bytes.TrimSpace(body)) > 0 {
		f := parseFrame(body)
		rep.frames = append(rep.frames, f)
		if rs := rep.responses(); c.rec != nil && len(rs) > 0 {
			c.rec.httpStatus(resp.StatusCode, body, rs[0].code())
		}
		if c.rec != nil && resp.StatusCode == http.StatusOK {
			c.rec.frame(f)
		}
	}
	return rep, nil
}

// parseSSE returns the data payload of each event (multi-line data joined by \n).
func parseSSE(body []byte) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			cur = append(cur, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return out
}

// ---------------------------------------------------------------- recorder

// recorder keeps every byte the server sent on a connection so the suite can
// judge transport-wide MUSTs (stdout is protocol-only, no BOM, every id is
// answered at most once, no unsolicited notifications) after the fact.
type recorder struct {
	mu       sync.Mutex
	lines    [][]byte
	frames   []frame
	sentIDs  map[string]int
	progTok  map[string]bool     // progress tokens the client sent
	methods  map[string][]string // id key → methods of the requests sent with it, in order
	statuses []httpStatus        // HTTP: status of every reply that carried a JSON-RPC response
}

func newRecorder() *recorder {
	return &recorder{sentIDs: map[string]int{}, progTok: map[string]bool{}, methods: map[string][]string{}}
}

func (r *recorder) line(l []byte) {
	r.mu.Lock()
	r.lines = append(r.lines, append([]byte(nil), l...))
	r.mu.Unlock()
}

func (r *recorder) frame(f frame) {
	r.mu.Lock()
	r.frames = append(r.frames, f)
	r.mu.Unlock()
}

// sent notes the ids and progress tokens of an outgoing payload.
func (r *recorder) sent(payload []byte) {
	var objs []map[string]json.RawMessage
	for _, line := range bytes.Split(payload, []byte("\n")) {
		t := bytes.TrimSpace(line)
		var one map[string]json.RawMessage
		var many []json.RawMessage
		if len(t) > 0 && t[0] == '[' {
			if json.Unmarshal(t, &many) == nil {
				for _, m := range many {
					var o map[string]json.RawMessage
					if json.Unmarshal(m, &o) == nil {
						objs = append(objs, o)
					}
				}
			}
		} else if json.Unmarshal(t, &one) == nil {
			objs = append(objs, one)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range objs {
		if o == nil {
			continue
		}
		if id, ok := o["id"]; ok {
			r.sentIDs[idKey(id)]++
			var m string
			_ = json.Unmarshal(o["method"], &m)
			r.methods[idKey(id)] = append(r.methods[idKey(id)], m)
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(o["params"], &p) == nil && p.Meta != nil {
			if tok, ok := p.Meta["progressToken"]; ok {
				r.progTok[idKey(tok)] = true
			}
		}
	}
}

type httpStatus struct {
	status int
	code   int // error code of the (first) response in the body, 0 for a result
	body   string
}

func (r *recorder) httpStatus(status int, body []byte, code int) {
	r.mu.Lock()
	r.statuses = append(r.statuses, httpStatus{status, code, truncate(string(body), 160)})
	r.mu.Unlock()
}

// methodOf returns the method of the n-th request sent with id key k.
func (r *recorder) methodOf(k string, n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < len(r.methods[k]) {
		return r.methods[k][n]
	}
	return ""
}

func (r *recorder) snapshot() ([][]byte, []frame, map[string]int, map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := append([][]byte(nil), r.lines...)
	frames := append([]frame(nil), r.frames...)
	ids := make(map[string]int, len(r.sentIDs))
	for k, v := range r.sentIDs {
		ids[k] = v
	}
	toks := make(map[string]bool, len(r.progTok))
	for k, v := range r.progTok {
		toks[k] = v
	}
	return lines, frames, ids, toks
}
