package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Wire types of the tasks methods.
type (
	// TaskParams name one task (tasks/get, tasks/result, tasks/cancel).
	TaskParams struct {
		mcp.ParamsBase
		TaskID string `json:"taskId"`
	}
	// ListParams page tasks/list.
	ListParams struct {
		mcp.ParamsBase
		Cursor string `json:"cursor,omitempty"`
	}
	// TaskResult answers tasks/get and tasks/cancel: the task itself.
	TaskResult struct {
		mcp.ResultBase
		Task
	}
	// CreateResult answers a task-augmented request.
	CreateResult struct {
		mcp.ResultBase
		Task Task `json:"task"`
	}
	// ListResult answers tasks/list.
	ListResult struct {
		mcp.ResultBase
		Tasks      []Task `json:"tasks"`
		NextCursor string `json:"nextCursor,omitempty"`
	}
)

// Install registers tasks/get, tasks/result, tasks/list and tasks/cancel on
// s and adds the middleware (call it once, before serving).
func (m *Manager) Install(s *mcp.Server) error {
	for method, add := range map[string]func() error{
		"tasks/get": func() error {
			return mcp.AddReceivingCustomMethod(s, "tasks/get", func(_ context.Context, ss *mcp.ServerSession, p *TaskParams) (*TaskResult, error) {
				t, err := m.lookup(ss, idOf(p))
				if err != nil {
					return nil, err
				}
				return &TaskResult{Task: m.snapshot(t)}, nil
			})
		},
		"tasks/result": func() error {
			return mcp.AddReceivingCustomMethod(s, "tasks/result", func(ctx context.Context, ss *mcp.ServerSession, p *TaskParams) (*mcp.CallToolResult, error) {
				res, err := m.result(ctx, ss, idOf(p))
				if err != nil {
					return nil, err
				}
				ctr, ok := res.(*mcp.CallToolResult)
				if !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %q has no tool result", idOf(p))}
				}
				out := *ctr
				out.Meta = mcp.Meta{}
				for k, v := range ctr.Meta {
					out.Meta[k] = v
				}
				out.Meta[relatedTask] = map[string]any{"taskId": idOf(p)}
				return &out, nil
			})
		},
		"tasks/list": func() error {
			return mcp.AddReceivingCustomMethod(s, "tasks/list", func(_ context.Context, ss *mcp.ServerSession, p *ListParams) (*ListResult, error) {
				cursor := ""
				if p != nil {
					cursor = p.Cursor
				}
				page, next, err := m.list(ss, cursor)
				if err != nil {
					return nil, err
				}
				return &ListResult{Tasks: page, NextCursor: next}, nil
			})
		},
		"tasks/cancel": func() error {
			return mcp.AddReceivingCustomMethod(s, "tasks/cancel", func(_ context.Context, ss *mcp.ServerSession, p *TaskParams) (*TaskResult, error) {
				t, err := m.cancelTask(ss, idOf(p))
				if err != nil {
					return nil, err
				}
				return &TaskResult{Task: t}, nil
			})
		},
	} {
		if err := add(); err != nil {
			return fmt.Errorf("tasks: %s: %w", method, err)
		}
	}
	s.AddReceivingMiddleware(m.middleware)
	return nil
}

// idOf is the task id a request names ("" when params are missing, which
// no task has).
func idOf(p *TaskParams) string {
	if p == nil {
		return ""
	}
	return p.TaskID
}

// requested is a lifted params.task.
type requested struct {
	TTL int64 `json:"ttl"`
}

// taskOf returns the lifted task request of a tools/call, if any.
func taskOf(p *mcp.CallToolParamsRaw) (*requested, error) {
	if p == nil || p.Meta == nil {
		return nil, nil
	}
	raw, ok := p.Meta[MetaKey]
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var r requested
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params.task must be an object {ttl?: number}", Data: json.RawMessage(`{"field":"task"}`)}
	}
	delete(p.Meta, MetaKey)
	return &r, nil
}

func methodNotFound(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(format, args...)}
}

// middleware gates tools/call on taskSupport and runs task-augmented calls
// in the background; it adds execution.taskSupport to tools/list and the
// tasks capability to initialize (the go-sdk's types have neither).
func (m *Manager) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
			tr, err := taskOf(p)
			if err != nil {
				return nil, err
			}
			name := ""
			if p != nil {
				name = p.Name
			}
			switch sup := m.SupportOf(name); {
			case tr == nil && sup == Required:
				return nil, methodNotFound("tool %q must be called as a task (execution.taskSupport is required): add params.task", name)
			case tr == nil:
				return next(ctx, method, req)
			case sup == Forbidden:
				return nil, methodNotFound("tool %q cannot be called as a task (execution.taskSupport is forbidden): call it without params.task", name)
			}
			t, err := m.start(req.GetSession(), m.ttl(tr.TTL), func(ctx context.Context) (mcp.Result, error) {
				return next(ctx, method, req)
			})
			if err != nil {
				return nil, err
			}
			return &CreateResult{Task: *t}, nil
		case "tools/list":
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return m.withExecution(lt), nil
			}
			return res, err
		case "initialize":
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && ir.ProtocolVersion >= "2025-11-25" {
				return &initializeResult{InitializeResult: ir, Capabilities: &capabilities{ServerCapabilities: ir.Capabilities, Tasks: Capability()}}, nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// Execution is a tool's execution member.
type Execution struct {
	TaskSupport Support `json:"taskSupport"`
}

type toolWithExecution struct {
	*mcp.Tool
	Execution *Execution `json:"execution,omitempty"`
}

type listToolsResult struct {
	*mcp.ListToolsResult
	Tools []toolWithExecution `json:"tools"`
}

type capabilities struct {
	*mcp.ServerCapabilities
	Tasks map[string]any `json:"tasks,omitempty"`
}

type initializeResult struct {
	*mcp.InitializeResult
	Capabilities *capabilities `json:"capabilities"`
}

func (m *Manager) withExecution(lt *mcp.ListToolsResult) mcp.Result {
	out := &listToolsResult{ListToolsResult: lt, Tools: make([]toolWithExecution, len(lt.Tools))}
	for i, t := range lt.Tools {
		out.Tools[i] = toolWithExecution{Tool: t}
		if s := m.SupportOf(t.Name); s != Forbidden {
			out.Tools[i].Execution = &Execution{TaskSupport: s}
		}
	}
	return out
}

// Lift moves params.task of a tools/call frame into params._meta[MetaKey],
// where the middleware finds it; other frames are returned unchanged.
func Lift(frame []byte) []byte {
	if !bytes.Contains(frame, []byte(`"task"`)) || !bytes.Contains(frame, []byte(`tools/call`)) {
		return frame
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(frame, &msg) != nil {
		return frame
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || method != "tools/call" {
		return frame
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil {
		return frame
	}
	t, ok := params["task"]
	if !ok {
		return frame
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return frame
	}
	if meta == nil { // "_meta": null
		meta = map[string]json.RawMessage{}
	}
	meta[MetaKey] = t
	delete(params, "task")
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return frame
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return frame
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return frame
	}
	return out
}

// LiftHTTP applies Lift to the JSON body of POST requests (up to maxBody
// bytes; larger bodies pass unchanged for the handler to refuse).
func LiftHTTP(h http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		rest := r.Body
		if int64(len(body)) <= maxBody {
			body = Lift(body)
			r.ContentLength = int64(len(body))
			rest = http.NoBody
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), r.Body}
		h.ServeHTTP(w, r)
	})
}
