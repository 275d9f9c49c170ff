package rcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// httpTransport speaks §5.2: one POST <base>/<method> per call, SSE when
// progress is wanted.
type httpTransport struct {
	base   string
	hc     *http.Client
	header http.Header
	onLog  func(LogParams)
	max    int64 // bytes of one answer

	mu      sync.Mutex
	session string

	bg     sync.WaitGroup // best-effort notifications
	ctx    context.Context
	cancel context.CancelFunc
}

// ConnectHTTP connects to an RCP server at baseURL (e.g.
// "http://127.0.0.1:8080/rcp") and performs the handshake. A session token
// issued in initialize.result._meta.session is sent back in RCP-Session.
func ConnectHTTP(ctx context.Context, baseURL string, opts *ClientOptions) (*Client, error) {
	if opts == nil {
		opts = &ClientOptions{}
	}
	c, err := newClient(ctx, newHTTPTransport(baseURL, opts), opts)
	if err != nil {
		return nil, err
	}
	c.redial = func(context.Context) (clientTransport, error) { return newHTTPTransport(baseURL, opts), nil }
	return c, nil
}

// newHTTPTransport returns a transport to baseURL without a session.
func newHTTPTransport(baseURL string, opts *ClientOptions) *httpTransport {
	t := &httpTransport{base: strings.TrimRight(baseURL, "/"), hc: opts.HTTPClient, header: http.Header{}, onLog: opts.OnLog,
		max: opts.MaxResponseBytes}
	if t.max <= 0 {
		t.max = clientMaxFrame
	}
	if t.hc == nil {
		t.hc = http.DefaultClient
	}
	for k, vs := range opts.Header {
		for _, v := range vs {
			t.header.Add(k, v)
		}
	}
	if opts.BearerToken != "" {
		t.header.Set("Authorization", "Bearer "+opts.BearerToken)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

func (t *httpTransport) setSession(tok string) {
	t.mu.Lock()
	t.session = tok
	t.mu.Unlock()
}

func (t *httpTransport) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range t.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	t.mu.Lock()
	if t.session != "" {
		req.Header.Set(HeaderSession, t.session)
	}
	t.mu.Unlock()
	return req, nil
}

func (t *httpTransport) roundTrip(ctx context.Context, id int64, method string, params json.RawMessage, token string, progress func(ProgressParams)) (*response, error) {
	body := jsonrpc.Request(json.RawMessage(strconv.FormatInt(id, 10)), method, params)
	req, err := t.newRequest(ctx, method, body)
	if err != nil {
		return nil, err
	}
	sse := token != "" && progress != nil
	if sse {
		req.Header.Set("Accept", "text/event-stream, application/json")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	defer resp.Body.Close()
	var retryAfter time.Duration
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if secs, err := strconv.Atoi(ra); err == nil {
			retryAfter = time.Duration(secs) * time.Second
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r, err := t.readSSE(ctx, resp.Body, id, token, progress)
		if r != nil {
			r.retryAfter = retryAfter
		}
		return r, err
	}
	if resp.ContentLength > t.max {
		return nil, t.tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.max+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: reading response: %w", ErrClosed, err)
	}
	if int64(len(data)) > t.max {
		return nil, t.tooLarge()
	}
	r, derr := decodeHTTPAnswer(data, id)
	if derr != nil {
		// Non-200 without a JSON-RPC body is a transport fault (§5.2).
		return nil, httpStatusError(resp.StatusCode, data, derr)
	}
	r.retryAfter = retryAfter
	if r.err != nil && r.err.Code == CodeRateLimited && retryAfter > 0 && (r.err.Data == nil || r.err.Data.RetryAfterMs == nil) {
		if r.err.Data == nil {
			r.err.Data = &ErrorData{}
		}
		r.err.Data.RetryAfterMs = ptr(retryAfter.Milliseconds())
	}
	return r, nil
}

func (t *httpTransport) tooLarge() error {
	return &Error{Code: CodePayloadTooLarge, Message: fmt.Sprintf("the server's answer exceeds %d bytes", t.max)}
}

func httpStatusError(status int, body []byte, cause error) error {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return &Error{Code: CodeUnauthorized, Message: fmt.Sprintf("HTTP %d", status)}
	case http.StatusTooManyRequests:
		return &Error{Code: CodeRateLimited, Message: "HTTP 429", Data: &ErrorData{Retryable: ptr(true)}}
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return &Error{Code: CodeBackendUnavailable, Message: fmt.Sprintf("HTTP %d", status), Data: &ErrorData{Retryable: ptr(true)}}
	case http.StatusRequestEntityTooLarge:
		return &Error{Code: CodePayloadTooLarge, Message: "HTTP 413"}
	}
	snippet := string(body)
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	return fmt.Errorf("rcp: HTTP %d: %q: %w", status, snippet, cause)
}

// decodeHTTPAnswer parses a JSON-RPC response body (status is secondary:
// §5.2 says prefer error.code when a body is present). The response must
// carry the request's id, or null on an error (a request the server could
// not parse): anything else is not the answer to this call.
func decodeHTTPAnswer(data []byte, id int64) (*response, error) {
	f := jsonrpc.Decode(data, jsonrpc.Options{MaxDepth: 1024})
	if f.Code != 0 || f.Batch || len(f.Messages) != 1 || f.Messages[0].Kind != jsonrpc.KindResponse {
		return nil, errors.New("not a JSON-RPC response")
	}
	m := f.Messages[0]
	if got := string(bytes.TrimSpace(m.ID)); got != strconv.FormatInt(id, 10) && (m.Error == nil || got != "null") {
		return nil, fmt.Errorf("the response id %s does not match the request id %d", got, id)
	}
	if m.Error != nil {
		return &response{err: decodeWireError(m.Error.Code, m.Error.Message, m.Error.Data)}, nil
	}
	res := m.Result
	if res == nil {
		res = json.RawMessage("{}")
	}
	return &response{result: res}, nil
}

// readSSE consumes an event stream: progress/log frames, then the final
// response frame (§5.2).
func (t *httpTransport) readSSE(ctx context.Context, body io.Reader, id int64, token string, progress func(ProgressParams)) (*response, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	var data bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		if int64(len(line)) > t.max {
			return nil, fmt.Errorf("%w: SSE frame too large", ErrClosed)
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0 && data.Len() > 0:
			if r, done := t.sseFrame(data.Bytes(), id, token, progress); done {
				return r, nil
			}
			data.Reset()
		case bytes.HasPrefix(trimmed, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(trimmed, []byte("data:")), []byte(" ")))
		}
		if err != nil {
			if data.Len() > 0 {
				if r, done := t.sseFrame(data.Bytes(), id, token, progress); done {
					return r, nil
				}
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: event stream ended before the response", ErrClosed)
		}
	}
}

func (t *httpTransport) sseFrame(payload []byte, id int64, token string, progress func(ProgressParams)) (*response, bool) {
	f := jsonrpc.Decode(payload, jsonrpc.Options{MaxDepth: 1024})
	if f.Code != 0 || f.Batch || len(f.Messages) != 1 {
		return nil, false
	}
	m := &f.Messages[0]
	switch m.Kind {
	case jsonrpc.KindResponse:
		r, err := decodeHTTPAnswer(payload, id)
		if err != nil {
			return nil, false
		}
		return r, true
	case jsonrpc.KindNotification:
		p := newPending()
		if token != "" && progress != nil {
			p.progress[token] = progress
		}
		handleClientNotification(m.Method, m.Params, p, nil, t.onLog)
	}
	return nil, false
}

func (t *httpTransport) notify(ctx context.Context, method string, params json.RawMessage) error {
	body := jsonrpc.Notification(method, params)
	t.bg.Add(1)
	go func() {
		defer t.bg.Done()
		ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		defer cancel()
		req, err := t.newRequest(ctx, method, body)
		if err != nil {
			return
		}
		if resp, err := t.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	return nil
}

func (t *httpTransport) close(grace time.Duration) error {
	t.mu.Lock()
	session := t.session
	t.mu.Unlock()
	if session != "" {
		// end the stateful session on the server (best effort)
		ctx, cancel := context.WithTimeout(context.Background(), min(2*time.Second, grace))
		if req, err := t.newRequest(ctx, MethodShutdown, jsonrpc.Request(json.RawMessage(`"shutdown"`), MethodShutdown, json.RawMessage("{}"))); err == nil {
			if resp, err := t.hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}
		cancel()
	}
	t.cancel()
	t.bg.Wait()
	return nil
}
