package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Task status notifications (notifications/tasks/status, optional in MCP
// 2025-11-25): every status change — completed, failed, cancelled by the
// client or by TTL expiry — is told to the task's session. go-sdk v1.8.0
// cannot send a notification it does not know, so the change leaves as a
// notifications/progress whose params._meta[statusKey] holds the task, and
// the transport turns that frame into notifications/tasks/status
// (RewriteStatus: the bridge's stdio transport and its HTTP handler do).
// It is not tied to a request, so over streamable HTTP it travels on the
// session's GET stream when the client opened one.

// statusKey marks a status notification in transit.
const statusKey = "io.rcpgo/tasks-status"

// statusTimeout bounds the write of one status notification.
const statusTimeout = 5 * time.Second

// notifyStatus sends t's status to its session (m.mu not held).
func (m *Manager) notifyStatus(ss mcp.Session, t Task) {
	srv, ok := ss.(*mcp.ServerSession)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	err := srv.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: statusKey, Meta: mcp.Meta{statusKey: t}})
	if err != nil {
		m.log.Debug("tasks: status notification not delivered", "task", t.TaskID, "status", t.Status, "err", err)
	}
}

// RewriteStatus returns the notifications/tasks/status frame a status
// notification in transit stands for, or nil when frame is not one.
func RewriteStatus(frame []byte) []byte {
	if !bytes.Contains(frame, []byte(statusKey)) {
		return nil
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(frame, &msg) != nil || msg.ID != nil || msg.Method != "notifications/progress" {
		return nil
	}
	task, ok := msg.Params.Meta[statusKey]
	if !ok {
		return nil
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", "notifications/tasks/status", task})
	if err != nil {
		return nil
	}
	return out
}
