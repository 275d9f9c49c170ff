// Package stdio is the framing of RCP's stdio transport (§5.1) as the SDK's
// server reads it — newline-delimited JSON-RPC 2.0 frames, each bounded in
// size and nesting — for Go programs that speak another JSON-RPC protocol
// over the same kind of stream. MCP's stdio transport frames messages the
// same way; rcpd's MCP face reads them with this package.
//
// A Reader splits a stream into frames: it tolerates blank lines, CRLF line
// ends, a leading UTF-8 byte-order mark and a last frame without a newline,
// and skips an oversize frame (reporting ErrFrameTooLarge) without losing
// its place. Check says whether one frame is a single well-formed JSON-RPC
// 2.0 message and, when it is not, how to answer it.
package stdio

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// Limits the SDK's server applies by default.
const (
	// DefaultMaxFrame caps one frame: 16 MiB.
	DefaultMaxFrame = jsonrpc.DefaultMaxFrame
	// DefaultMaxDepth caps the nesting of arrays and objects in a frame.
	DefaultMaxDepth = jsonrpc.DefaultMaxDepth
)

// ErrFrameTooLarge is returned by Reader.Next for a frame longer than the
// reader's cap. The frame has been consumed; the next call reads the frame
// after it.
var ErrFrameTooLarge = jsonrpc.ErrFrameTooLarge

// Reader reads newline-delimited frames.
type Reader struct {
	rd *jsonrpc.Reader
}

// NewReader returns a Reader on r that refuses frames longer than maxFrame
// bytes (DefaultMaxFrame when maxFrame <= 0).
func NewReader(r io.Reader, maxFrame int) *Reader {
	return &Reader{rd: jsonrpc.NewReader(r, maxFrame)}
}

// Next returns the next non-blank frame without its line terminator. The
// slice is valid until the next call. It returns io.EOF at the end of input
// and ErrFrameTooLarge for an oversize frame, after which the Reader may be
// used again.
func (r *Reader) Next() ([]byte, error) { return r.rd.Next() }

// Codes of the answers Check asks for (JSON-RPC 2.0).
const (
	CodeParseError     = jsonrpc.CodeParseError
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest
)

// A Problem is why a frame is not one JSON-RPC 2.0 message, and how to
// answer it: an error response with Code, Reason as its message, and ID as
// its id (null when ID is nil).
type Problem struct {
	// Code is CodeParseError (not UTF-8, not JSON, nested deeper than the
	// limit) or CodeInvalidRequest (JSON, but not a JSON-RPC 2.0 message).
	Code   int
	Reason string
	// ID is the frame's "id" when it can be read — a string or a number at
	// the top level of an object, found without recursing into the frame —
	// so the answer names the request; nil otherwise.
	ID json.RawMessage
	// Batch is set for a JSON array of messages (JSON-RPC 2.0 batches, which
	// RCP allows, §11, and MCP no longer does): Check accepts single
	// messages only, so a caller that refuses batches can say so.
	Batch bool
}

// Check reports whether frame is exactly one JSON-RPC 2.0 request,
// notification or response. When it is, Check returns the message's id as
// it appears in the frame (nil for a notification) and a nil Problem;
// otherwise it returns the Problem to answer the frame with. Frames nested
// deeper than maxDepth (DefaultMaxDepth when <= 0) are refused before any
// decoder recurses into them. RCP's compact envelope (§5.3: method and
// params, no "jsonrpc") is refused too: Check is for peers that require the
// full envelope.
func Check(frame []byte, maxDepth int) (id json.RawMessage, problem *Problem) {
	f := jsonrpc.Decode(frame, jsonrpc.Options{MaxDepth: maxDepth})
	switch {
	case f.Code != 0:
		return nil, &Problem{Code: f.Code, Reason: f.Reason, ID: topLevelID(frame)}
	case f.Batch:
		return nil, &Problem{Code: CodeInvalidRequest, Reason: "JSON-RPC batches are not accepted: send one message per line", Batch: true}
	}
	m := f.Messages[0]
	if m.Kind != jsonrpc.KindInvalid && !m.Compact {
		return m.ID, nil
	}
	reason := m.Reason
	if m.Compact {
		reason = `"jsonrpc" must be "2.0"`
	}
	if m.Kind == jsonrpc.KindInvalid && m.ID == nil && m.Method == "" {
		m.ID = topLevelID(frame)
	}
	return nil, &Problem{Code: CodeInvalidRequest, Reason: reason, ID: m.ID}
}

// topLevelID reads the "id" member of a frame refused as a whole (too
// deep, for instance) with the streaming tokenizer, so without recursion.
// It returns nil when there is none or the frame is not valid JSON.
func topLevelID(frame []byte) json.RawMessage {
	if !json.Valid(frame) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k != "id" {
			if skipValue(dec) != nil {
				return nil
			}
			continue
		}
		v, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := v.(type) {
		case string:
			b, _ := json.Marshal(v)
			return b
		case json.Number:
			return json.RawMessage(v.String())
		}
		return nil
	}
	return nil
}

// skipValue skips one value with the streaming tokenizer (no recursion).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
