package rcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// clientMaxFrame bounds one frame read by a client (servers may send large
// embedding batches).
const clientMaxFrame = 256 << 20

// streamTransport speaks NDJSON over a pipe pair (a child's stdio, or an
// in-process server).
type streamTransport struct {
	w       *jsonrpc.Writer
	closeW  func() error
	pending *pendingCalls
	onLog   func(LogParams)
	onProg  func(ProgressParams)
	log     func(msg string, args ...any)

	readerDone chan struct{}
	closeOnce  sync.Once
	afterClose func(grace time.Duration) error // waits up to grace for the peer (child process, server goroutine), then ends it
}

func newStreamTransport(r io.Reader, w io.Writer, closeW func() error, opts *ClientOptions) *streamTransport {
	t := &streamTransport{w: jsonrpc.NewWriter(w), closeW: closeW, pending: newPending(), readerDone: make(chan struct{})}
	t.log = func(string, ...any) {}
	if opts != nil {
		t.onLog, t.onProg = opts.OnLog, opts.OnProgress
		if opts.Logger != nil {
			t.log = opts.Logger.Debug
		}
	}
	go t.readLoop(r)
	return t
}

func (t *streamTransport) readLoop(r io.Reader) {
	defer close(t.readerDone)
	rd := jsonrpc.NewReader(r, clientMaxFrame)
	for {
		frame, err := rd.Next()
		if errors.Is(err, jsonrpc.ErrFrameTooLarge) {
			t.log("rcp client: dropping an oversize frame")
			continue
		}
		if err != nil {
			cause := ErrClosed
			if !errors.Is(err, io.EOF) {
				cause = fmt.Errorf("%w: %w", ErrClosed, err)
			}
			t.pending.fail(cause)
			return
		}
		f := jsonrpc.Decode(frame, jsonrpc.Options{MaxDepth: 1024})
		if f.Code != 0 {
			t.log("rcp client: undecodable frame", "reason", f.Reason)
			continue
		}
		for i := range f.Messages {
			t.dispatch(&f.Messages[i])
		}
	}
}

func (t *streamTransport) dispatch(m *jsonrpc.Message) {
	switch m.Kind {
	case jsonrpc.KindResponse:
		r := &response{result: m.Result}
		if m.Error != nil {
			r.err = decodeWireError(m.Error.Code, m.Error.Message, m.Error.Data)
		} else if r.result == nil {
			r.result = json.RawMessage("{}")
		}
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			t.uncorrelated(m, r)
			return
		}
		if !t.pending.deliver(id, r) {
			t.log("rcp client: discarding a late or unknown response", "id", string(m.ID))
		}
	case jsonrpc.KindNotification:
		handleClientNotification(m.Method, m.Params, t.pending, t.onProg, t.onLog)
	}
}

// uncorrelated handles an answer whose id names no request of ours. An
// error with id null is how a server answers a frame it could not parse
// (JSON-RPC 2.0 §5): one of the calls in flight will never get its own
// answer, and nothing says which. Every call in flight fails with the
// server's error rather than one of them waiting forever; the others can be
// retried. Other foreign answers are dropped.
func (t *streamTransport) uncorrelated(m *jsonrpc.Message, r *response) {
	if string(m.ID) != "null" || r.err == nil {
		t.log("rcp client: response with a foreign id", "id", string(m.ID))
		return
	}
	e := *r.err
	e.Message = "uncorrelated answer (id null) while this call was in flight: " + e.Message
	n := t.pending.failInFlight(&e)
	t.log("rcp client: error answer with id null failed the calls in flight", "calls", n, "code", int(e.Code), "msg", r.err.Message)
}

// handleClientNotification routes progress (by token) and log frames.
func handleClientNotification(method string, params json.RawMessage, p *pendingCalls, onProg func(ProgressParams), onLog func(LogParams)) {
	switch method {
	case NotifyProgress:
		var pp ProgressParams
		if json.Unmarshal(params, &pp) != nil {
			return
		}
		var tok string
		if json.Unmarshal(pp.ProgressToken, &tok) == nil {
			if fn := p.progressFor(tok); fn != nil {
				fn(pp)
				return
			}
		}
		// §9: a frame bearing an unknown token is ignored.
	case NotifyLog:
		if onLog == nil {
			return
		}
		var lp LogParams
		if json.Unmarshal(params, &lp) == nil {
			onLog(lp)
		}
	}
}

func (t *streamTransport) roundTrip(ctx context.Context, id int64, method string, params json.RawMessage, token string, progress func(ProgressParams)) (*response, error) {
	ch, err := t.pending.add(id, token, progress)
	if err != nil {
		return nil, err
	}
	defer t.pending.remove(id, token)
	if err := t.w.WriteFrame(jsonrpc.Request(json.RawMessage(strconv.FormatInt(id, 10)), method, params)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, t.pending.failure()
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *streamTransport) notify(_ context.Context, method string, params json.RawMessage) error {
	return t.w.WriteFrame(jsonrpc.Notification(method, params))
}

func (t *streamTransport) setSession(string) {}

func (t *streamTransport) close(grace time.Duration) error {
	var err error
	t.closeOnce.Do(func() {
		err = t.closeW() // EOF: the server's implicit shutdown
		if t.afterClose != nil {
			if werr := t.afterClose(grace); werr != nil && err == nil {
				err = werr
			}
		}
		<-t.readerDone
	})
	return err
}

// ConnectStdio spawns argv as an RCP server and speaks NDJSON over its stdin
// and stdout (§5.1), then performs the handshake. The child gets a
// least-privilege environment (§15.1): PATH, HOME, LANG, LC_ALL, TMPDIR and
// TZ from ours (all of ours with opts.InheritEnv), plus opts.Env. Close
// sends EOF and waits for the child (see Client.Close for how long), then
// kills it.
func ConnectStdio(ctx context.Context, argv []string, opts *ClientOptions) (*Client, error) {
	if len(argv) == 0 {
		return nil, errors.New("rcp: ConnectStdio: empty argv")
	}
	if opts == nil {
		opts = &ClientOptions{}
	}
	tr, err := spawnStdio(argv, opts)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ctx, tr, opts)
	if err != nil {
		return nil, err
	}
	// A new session is a new process: the old one ends first (it may hold
	// what the new one needs, as rcpd holds its data directory).
	c.redial = func(context.Context) (clientTransport, error) { return spawnStdio(argv, opts) }
	c.closeFirst = true
	return c, nil
}

// spawnStdio starts argv and returns the transport over its stdin and
// stdout (see ConnectStdio).
func spawnStdio(argv []string, opts *ClientOptions) (*streamTransport, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = leastPrivilegeEnv(opts.Env)
	if opts.InheritEnv {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	cmd.Dir = opts.Dir
	// A grandchild (the binary `go run` built, a shell's command) may hold
	// stderr open after the child has gone: stop copying it soon after.
	cmd.WaitDelay = time.Second
	if opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	} else {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("rcp: ConnectStdio: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("rcp: ConnectStdio: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rcp: ConnectStdio: starting %s: %w", argv[0], err)
	}
	t := newStreamTransport(stdout, stdin, stdin.Close, opts)
	waited := make(chan error, 1)
	go func() { <-t.readerDone; waited <- cmd.Wait() }()
	t.afterClose = func(grace time.Duration) error {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case err := <-waited:
			return exitErr(err)
		case <-timer.C:
		}
		_ = cmd.Process.Kill()
		// The reader waits for EOF on stdout, which a grandchild may still
		// hold: stop reading, so Wait (which must follow the reads) can run.
		_ = stdout.Close()
		return exitErr(<-waited)
	}
	return t, nil
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		return nil // killed by us after the grace period, or by a signal
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		return nil // exited; a grandchild kept its stderr open
	}
	if err != nil {
		return fmt.Errorf("rcp: server exited: %w", err)
	}
	return nil
}

func leastPrivilegeEnv(extra []string) []string {
	keys := []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"}
	if runtime.GOOS == "windows" {
		keys = append(keys, "SYSTEMROOT", "USERPROFILE", "TEMP", "TMP")
	}
	var env []string
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// ConnectInProcess runs srv in this process and connects a client to it over
// an in-memory pipe: the full protocol (framing, lifecycle, gating) with no
// process or socket. Close ends the session and waits for the server.
func ConnectInProcess(ctx context.Context, srv *Server, opts *ClientOptions) (*Client, error) {
	c, err := newClient(ctx, pipeSession(ctx, srv, opts), opts)
	if err != nil {
		return nil, err
	}
	c.redial = func(ctx context.Context) (clientTransport, error) { return pipeSession(ctx, srv, opts), nil }
	return c, nil
}

// pipeSession serves a new session of srv over in-memory pipes.
func pipeSession(ctx context.Context, srv *Server, opts *ClientOptions) *streamTransport {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(serveCtx, c2sR, s2cW)
		_ = s2cW.Close()
		served <- err
	}()
	t := newStreamTransport(s2cR, c2sW, c2sW.Close, opts)
	t.afterClose = func(grace time.Duration) error {
		defer cancel()
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case err := <-served:
			return err
		case <-timer.C:
			cancel() // stop the server's calls still running
			return <-served
		}
	}
	return t
}
