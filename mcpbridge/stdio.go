package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/mcpbridge/tasks"
	"github.com/rcpgo/rcpgo/rcp/stdio"
)

// Stdio limits. A frame deeper than MaxFrameDepth is refused before any
// decoder recurses into it; a valid search filter (32 levels, RCP §8) needs
// well under 100.
const (
	MaxFrameBytes = 16 << 20
	MaxFrameDepth = 256
)

// StdioTransport is the bridge's MCP stdio transport: newline-delimited
// JSON-RPC like the go-sdk's IOTransport, hardened for a long-lived server.
//
//   - A malformed line (not JSON, not JSON-RPC, too deep, too long, a
//     batch) is answered with -32700 or -32600 (with the request's id when
//     it can be read) and serving continues: one bad line never ends the
//     session.
//   - Every request read is answered before end of input is reported to
//     the MCP server, so a client that writes its requests and closes stdin
//     at once still gets every answer.
//   - A request the client cancelled (notifications/cancelled) is not
//     answered, as MCP requires.
//   - Task status notifications leave as notifications/tasks/status
//     (tasks.RewriteStatus).
//
// JSON-RPC batches (allowed only by MCP 2025-03-26) are refused with -32600.
type StdioTransport struct {
	Reader io.Reader
	Writer io.Writer
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{w: t.Writer, frames: make(chan frameOrErr), closed: make(chan struct{}),
		open: map[string]bool{}, cancelled: map[string]bool{}, drained: make(chan struct{}, 1)}
	go c.readLoop(stdio.NewReader(t.Reader, MaxFrameBytes))
	return c, nil
}

type frameOrErr struct {
	frame []byte
	err   error
}

type stdioConn struct {
	w      io.Writer
	wmu    sync.Mutex
	frames chan frameOrErr
	closed chan struct{}
	once   sync.Once

	mu        sync.Mutex
	open      map[string]bool // requests read and not yet answered
	cancelled map[string]bool // requests the client cancelled: their answers are dropped
	drained   chan struct{}   // signalled when open becomes empty
}

func (c *stdioConn) readLoop(rd *stdio.Reader) {
	for {
		frame, err := rd.Next()
		if frame != nil {
			frame = bytes.Clone(frame)
		}
		select {
		case c.frames <- frameOrErr{frame, err}:
		case <-c.closed:
			return
		}
		if err != nil && !errors.Is(err, stdio.ErrFrameTooLarge) {
			return
		}
	}
}

// Read returns the next well-formed message, answering malformed ones on
// the way. At end of input it waits for the requests in flight to be
// answered first.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var fe frameOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case fe = <-c.frames:
		}
		switch {
		case errors.Is(fe.err, stdio.ErrFrameTooLarge):
			c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("frame exceeds %d bytes", MaxFrameBytes))
			continue
		case fe.err != nil:
			return nil, c.endOfInput(ctx, fe.err)
		}
		if msg := c.accept(fe.frame); msg != nil {
			return msg, nil
		}
	}
}

// accept decodes one frame, or answers it and returns nil.
func (c *stdioConn) accept(frame []byte) jsonrpc.Message {
	id, p := stdio.Check(frame, MaxFrameDepth)
	if p != nil {
		reason := p.Reason
		if p.Batch {
			reason = "JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send one message per line"
		}
		c.refuse(p.ID, p.Code, reason)
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(tasks.Lift(frame))
	if err != nil {
		c.refuse(id, jsonrpc.CodeInvalidRequest, err.Error())
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.track(req)
	}
	return msg
}

// track records requests in flight and cancellations.
func (c *stdioConn) track(req *jsonrpc.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.open[idKey(req.ID)] = true
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	if k := idKey(id); c.open[k] {
		c.cancelled[k] = true
		c.answered(k)
	}
}

// answered removes k from the requests in flight (c.mu held).
func (c *stdioConn) answered(k string) {
	delete(c.open, k)
	if len(c.open) == 0 {
		select {
		case c.drained <- struct{}{}:
		default:
		}
	}
}

// endOfInput waits until every request read has been answered, then
// reports the end of input.
func (c *stdioConn) endOfInput(ctx context.Context, err error) error {
	for {
		c.mu.Lock()
		n := len(c.open)
		c.mu.Unlock()
		if n == 0 {
			return err
		}
		select {
		case <-c.drained:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return err
		}
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		k := idKey(resp.ID)
		c.mu.Lock()
		drop := c.cancelled[k]
		delete(c.cancelled, k)
		c.answered(k)
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpbridge: encoding a message: %w", err)
	}
	if status := tasks.RewriteStatus(data); status != nil {
		data = status
	}
	return c.writeLine(data)
}

func (c *stdioConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// refuse answers a frame that never reaches the MCP server: an error
// response with id (null when nil).
func (c *stdioConn) refuse(id json.RawMessage, code int, reason string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	e, _ := json.Marshal(map[string]any{"code": code, "message": reason})
	frame := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	frame = append(append(append(frame, `,"error":`...), e...), '}')
	if err := c.writeLine(frame); err != nil {
		c.Close()
	}
}

func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return "s:" + v
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	}
	return fmt.Sprintf("x:%v", id.Raw())
}
