// Package tasks adds MCP tasks (protocol revision 2025-11-25) to a go-sdk
// server: task-augmented tools/call, tasks/get, tasks/result, tasks/list and
// tasks/cancel, per-tool execution.taskSupport, and the tasks server
// capability.
//
// go-sdk v1.8.0 has no task support, so the package is built on what it
// offers: receiving middleware (tools/call, tools/list and initialize pass
// through Middleware) and custom methods (Install). The go-sdk decodes
// tools/call params into a struct without a task member, so the transport
// moves params.task into params._meta[MetaKey] before decoding (Lift, and
// LiftHTTP for streamable HTTP); the bridge's stdio transport calls Lift.
//
// Every status change is told to the task's session as
// notifications/tasks/status (status.go).
//
// Tasks belong to the MCP session that created them: another session can
// neither see, read nor cancel them, and they end with it (running ones
// are cancelled, all are dropped). A task lives for its TTL from creation
// (the requested ttl, clamped to [MinTTL, Options.MaxTTL]); a task still
// running when its TTL ends is cancelled. Terminal states never change.
//
// Memory is bounded over all sessions: at most Options.MaxTasks live
// tasks, and at most Options.MaxResultBytes of kept results (a result that
// would exceed it fails its task); beyond either, new task-augmented calls
// are refused (retryable), whatever the session.
package tasks

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaKey is the params._meta member that carries a lifted params.task.
const MetaKey = "io.rcpgo/task"

// relatedTask is the _meta member that ties a result or notification to
// its task.
const relatedTask = "io.modelcontextprotocol/related-task"

type taskKey struct{}

// TaskOf returns the id of the task whose context ctx is.
func TaskOf(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(taskKey{}).(string)
	return id, ok
}

// RelatedMeta is the _meta of a message related to task id.
func RelatedMeta(id string) mcp.Meta {
	return mcp.Meta{relatedTask: map[string]any{"taskId": id}}
}

// MinTTL is the shortest TTL granted.
const MinTTL = time.Second

// Support is a tool's execution.taskSupport.
type Support string

// Task support levels (MCP 2025-11-25).
const (
	Forbidden Support = "forbidden"
	Optional  Support = "optional"
	Required  Support = "required"
)

// Status is a task's state.
type Status string

// Task states. completed, failed and cancelled are terminal.
const (
	Working   Status = "working"
	Completed Status = "completed"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
)

func (s Status) terminal() bool { return s != Working }

// Task is the wire form of a task.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// Options configure a Manager. The zero value is usable.
type Options struct {
	// DefaultTTL applies when the request names none (default 10 min);
	// MaxTTL bounds requested TTLs (default 1 h).
	DefaultTTL, MaxTTL time.Duration
	// PollInterval is suggested to clients (default 500 ms).
	PollInterval time.Duration
	// PageSize bounds a tasks/list page (default 50).
	PageSize int
	// MaxPerSession bounds the live tasks of one session (default 100):
	// beyond it, task-augmented calls are refused.
	MaxPerSession int
	// MaxTasks bounds the live tasks of all sessions together (default
	// 1000) and MaxResultBytes the results they keep (JSON size; default
	// 256 MiB).
	MaxTasks       int
	MaxResultBytes int64
	Logger         *slog.Logger
}

// Manager runs and keeps the tasks of one MCP server.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	support map[string]Support
	tasks   map[string]*task
	kept    int64                // JSON bytes of the results kept
	watched map[mcp.Session]bool // sessions whose end drops their tasks
}

type task struct {
	Task
	session mcp.Session
	created time.Time
	expires time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when the task reaches a terminal state
	result  mcp.Result
	size    int64 // JSON bytes of result, counted in Manager.kept
	err     error
	timer   *time.Timer
}

// New returns a Manager.
func New(opts Options) *Manager {
	if opts.DefaultTTL <= 0 {
		opts.DefaultTTL = 10 * time.Minute
	}
	if opts.MaxTTL <= 0 {
		opts.MaxTTL = time.Hour
	}
	opts.DefaultTTL = min(opts.DefaultTTL, opts.MaxTTL)
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.MaxPerSession <= 0 {
		opts.MaxPerSession = 100
	}
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = 1000
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = 256 << 20
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: opts, log: log, support: map[string]Support{}, tasks: map[string]*task{}, watched: map[mcp.Session]bool{}}
}

// SetSupport declares how tool may be called (Forbidden is the default for
// tools never declared).
func (m *Manager) SetSupport(tool string, s Support) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.support[tool] = s
}

// SupportOf returns tool's declared support.
func (m *Manager) SupportOf(tool string) Support {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cmp.Or(m.support[tool], Forbidden)
}

// Live is the number of live tasks over all sessions.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tasks)
}

// Capability is the tasks member of the server capabilities.
func Capability() map[string]any {
	return map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
}

// Close cancels every running task.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		t.cancel()
		if t.timer != nil {
			t.timer.Stop()
		}
	}
}

// notFound is the answer for a task that does not exist, expired, or
// belongs to another session (indistinguishable on purpose).
func notFound(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q not found (unknown, expired or not yours)", id),
		Data: json.RawMessage(`{"field":"taskId"}`)}
}

// resultSize is the JSON size of a task's result (what keeping it costs,
// roughly).
func resultSize(res mcp.Result) int64 {
	if res == nil {
		return 0
	}
	b, err := json.Marshal(res)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ttl grants a TTL for a requested one (milliseconds, 0 = default).
func (m *Manager) ttl(requested int64) time.Duration {
	if requested <= 0 {
		return m.opts.DefaultTTL
	}
	return min(max(time.Duration(requested)*time.Millisecond, MinTTL), m.opts.MaxTTL)
}

// start creates a task for one tools/call and runs it in the background.
func (m *Manager) start(ss mcp.Session, ttl time.Duration, run func(context.Context) (mcp.Result, error)) (*Task, error) {
	now := time.Now()
	t := &task{session: ss, created: now, expires: now.Add(ttl), done: make(chan struct{})}
	t.Task = Task{TaskID: newID(), Status: Working, CreatedAt: stamp(now), LastUpdatedAt: stamp(now),
		TTL: ttl.Milliseconds(), PollInterval: m.opts.PollInterval.Milliseconds()}
	// The task outlives the request that created it, so its context carries
	// nothing of that request: the go-sdk ties what is sent under a
	// request's context to the request's stream, which over streamable HTTP
	// ends with the CreateTaskResult. Unrelated to a request, the task's
	// progress (same token, MCP 2025-11-25) and logs go to the session's GET
	// stream.
	rctx, cancel := context.WithCancel(context.WithValue(context.Background(), taskKey{}, t.TaskID))
	t.cancel = cancel
	m.mu.Lock()
	m.sweep(now)
	if err := m.admit(ss); err != nil {
		m.mu.Unlock()
		cancel()
		return nil, err
	}
	m.watch(ss)
	m.tasks[t.TaskID] = t
	t.timer = time.AfterFunc(ttl, func() { m.expire(t.TaskID) })
	snap := t.Task
	m.mu.Unlock()
	go m.run(rctx, t, run)
	return &snap, nil
}

// admit refuses a new task of ss beyond the session's or the global
// bounds (m.mu held).
func (m *Manager) admit(ss mcp.Session) error {
	n := 0
	for _, o := range m.tasks {
		if o.session == ss {
			n++
		}
	}
	var msg string
	switch {
	case n >= m.opts.MaxPerSession:
		msg = fmt.Sprintf("this session already has %d tasks: wait for some to expire or cancel them", n)
	case len(m.tasks) >= m.opts.MaxTasks:
		msg = fmt.Sprintf("the server holds %d tasks, its limit: retry later", len(m.tasks))
	case m.kept >= m.opts.MaxResultBytes:
		msg = fmt.Sprintf("the server keeps %d bytes of task results, its limit: retry later", m.kept)
	default:
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: json.RawMessage(`{"retryable":true}`)}
}

// watch drops the tasks of ss when the session ends (m.mu held): a closed
// session can never read them.
func (m *Manager) watch(ss mcp.Session) {
	s, ok := ss.(interface{ Wait() error })
	if !ok || m.watched[ss] {
		return
	}
	m.watched[ss] = true
	go func() {
		_ = s.Wait()
		m.dropSession(ss)
	}()
}

// dropSession cancels and forgets every task of a session that ended.
func (m *Manager) dropSession(ss mcp.Session) {
	m.mu.Lock()
	delete(m.watched, ss)
	var gone []*task
	for id, t := range m.tasks {
		if t.session == ss {
			m.removeLocked(id, t)
			gone = append(gone, t)
		}
	}
	m.mu.Unlock()
	for _, t := range gone {
		t.cancel()
	}
	if len(gone) > 0 {
		m.log.Debug("tasks: session ended; its tasks are dropped", "tasks", len(gone))
	}
}

// removeLocked forgets task id (m.mu held): its timer, its kept bytes.
func (m *Manager) removeLocked(id string, t *task) {
	delete(m.tasks, id)
	if t.timer != nil {
		t.timer.Stop()
	}
	m.kept -= t.size
	t.size = 0
}

func (m *Manager) run(ctx context.Context, t *task, run func(context.Context) (mcp.Result, error)) {
	res, err := run(ctx)
	m.finish(t, res, err)
}

// finish records the outcome unless the task was already cancelled.
func (m *Manager) finish(t *task, res mcp.Result, err error) {
	m.mu.Lock()
	if t.Status.terminal() {
		m.mu.Unlock()
		return
	}
	if err == nil {
		if size := resultSize(res); m.kept+size > m.opts.MaxResultBytes {
			res, err = nil, fmt.Errorf("the result (%d bytes) exceeds what the server keeps for tasks (%d bytes in all): call the tool without a task", size, m.opts.MaxResultBytes)
		} else if _, live := m.tasks[t.TaskID]; live {
			t.size = size
			m.kept += size
		}
	}
	t.result, t.err = res, err
	t.Status = Completed
	if err != nil {
		t.Status, t.StatusMessage = Failed, err.Error()
	}
	t.LastUpdatedAt = stamp(time.Now())
	close(t.done)
	snap := t.Task
	m.mu.Unlock()
	m.notifyStatus(t.session, snap)
}

// expire removes a task whose TTL ended, cancelling it if it still runs.
func (m *Manager) expire(id string) {
	m.mu.Lock()
	t, ok := m.tasks[id]
	running := ok && !t.Status.terminal()
	if ok {
		m.removeLocked(id, t)
		if running {
			t.Status, t.StatusMessage = Cancelled, "TTL expired"
			t.LastUpdatedAt = stamp(time.Now())
			close(t.done)
		}
	}
	var snap Task
	if ok {
		snap = t.Task
	}
	m.mu.Unlock()
	if ok {
		t.cancel()
	}
	if running {
		m.notifyStatus(t.session, snap)
	}
}

// sweep drops expired tasks whose timers have not fired yet (m.mu held).
func (m *Manager) sweep(now time.Time) {
	for id, t := range m.tasks {
		if now.After(t.expires) {
			m.removeLocked(id, t)
			t.cancel()
		}
	}
}

// lookup returns the session's task id.
func (m *Manager) lookup(ss mcp.Session, id string) (*task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || t.session != ss || time.Now().After(t.expires) {
		return nil, notFound(id)
	}
	return t, nil
}

func (m *Manager) snapshot(t *task) Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return t.Task
}

// cancelTask moves a working task to cancelled; terminal tasks refuse.
func (m *Manager) cancelTask(ss mcp.Session, id string) (Task, error) {
	t, err := m.lookup(ss, id)
	if err != nil {
		return Task{}, err
	}
	m.mu.Lock()
	if t.Status.terminal() {
		st := t.Status
		m.mu.Unlock()
		return Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q is already %s: terminal states do not change", id, st),
			Data: json.RawMessage(`{"field":"taskId"}`)}
	}
	t.Status, t.StatusMessage = Cancelled, "cancelled by the client"
	t.LastUpdatedAt = stamp(time.Now())
	close(t.done)
	snap := t.Task
	m.mu.Unlock()
	t.cancel()
	m.notifyStatus(t.session, snap)
	return snap, nil
}

// list returns one page of the session's tasks, oldest first.
func (m *Manager) list(ss mcp.Session, cursor string) ([]Task, string, error) {
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "malformed cursor", Data: json.RawMessage(`{"field":"cursor"}`)}
		}
		after = string(b)
	}
	m.mu.Lock()
	var mine []*task
	now := time.Now()
	for _, t := range m.tasks {
		if t.session == ss && !now.After(t.expires) {
			mine = append(mine, t)
		}
	}
	slices.SortFunc(mine, func(a, b *task) int { return cmp.Compare(orderKey(a), orderKey(b)) })
	page, next, last := []Task{}, "", ""
	for _, t := range mine {
		if after != "" && orderKey(t) <= after {
			continue
		}
		if len(page) == m.opts.PageSize {
			next = base64.RawURLEncoding.EncodeToString([]byte(last))
			break
		}
		page, last = append(page, t.Task), orderKey(t)
	}
	m.mu.Unlock()
	return page, next, nil
}

// orderKey sorts tasks by creation, then id; it is also the cursor.
func orderKey(t *task) string {
	return fmt.Sprintf("%020d/%s", t.created.UnixNano(), t.TaskID)
}

// result waits for the task to end and returns its outcome.
func (m *Manager) result(ctx context.Context, ss mcp.Session, id string) (mcp.Result, error) {
	t, err := m.lookup(ss, id)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case t.Status == Cancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q was cancelled (%s): it has no result", id, t.StatusMessage),
			Data: json.RawMessage(`{"field":"taskId"}`)}
	case t.err != nil:
		return nil, t.err
	}
	return t.result, nil
}
