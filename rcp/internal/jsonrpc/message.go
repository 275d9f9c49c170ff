package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Standard JSON-RPC codes used by the decoder.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

// DefaultMaxDepth bounds JSON nesting. Deeper frames are parse errors: the
// decoder refuses to recurse into them.
const DefaultMaxDepth = 256

// Kind classifies a decoded message.
type Kind uint8

const (
	// KindInvalid is a member that is not a well-formed JSON-RPC message;
	// Code and Reason say why, and the answer carries id null.
	KindInvalid Kind = iota
	// KindRequest has an id and a method.
	KindRequest
	// KindNotification has a method and no id.
	KindNotification
	// KindResponse has an id and a result or an error.
	KindResponse
)

// WireError is a JSON-RPC error object as it travels.
type WireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Message is one decoded JSON-RPC message (or batch member).
type Message struct {
	Kind Kind
	// ID is the id's JSON text, compacted; nil when absent.
	ID json.RawMessage
	// Method is the method name of a request or notification.
	Method string
	// Params is the raw params value; nil when absent or null.
	Params json.RawMessage
	// Result and Error belong to responses.
	Result json.RawMessage
	Error  *WireError
	// Compact marks a {method, params} envelope without jsonrpc and id
	// (RCP §5.3); transports that accept it treat it as a request.
	Compact bool

	// Code and Reason describe why a KindInvalid member is invalid.
	Code   int
	Reason string
}

// Frame is a decoded frame: one message, or a batch of them.
type Frame struct {
	Batch    bool
	Messages []Message
	// Code and Reason are set when the frame as a whole is rejected (parse
	// error, empty batch); it is then answered with one error, id null.
	Code   int
	Reason string
}

// Options tune Decode.
type Options struct {
	// MaxDepth bounds nesting (DefaultMaxDepth when <= 0).
	MaxDepth int
}

// Decode parses one frame. It never fails: problems are reported in the
// returned Frame so the caller can answer them.
func Decode(b []byte, opts Options) Frame {
	maxDepth := opts.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if !utf8.Valid(b) {
		return Frame{Code: CodeParseError, Reason: "frame is not valid UTF-8"}
	}
	if f, ok := decodeFast(b, maxDepth); ok {
		return f
	}
	return decodeSlow(b, maxDepth)
}

// decodeSlow is the general decoder, built on encoding/json. decodeFast
// hands it every frame it does not take on (invalid or too deep JSON,
// surrounding non-ASCII space, keys with escapes or non-ASCII letters), so
// those keep exactly the answers encoding/json gives them.
func decodeSlow(b []byte, maxDepth int) Frame {
	if d := depth(b); d > maxDepth {
		return Frame{Code: CodeParseError, Reason: "JSON nesting exceeds " + strconv.Itoa(maxDepth) + " levels"}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Frame{Code: CodeParseError, Reason: "empty frame"}
	}
	if b[0] == '[' {
		var members []json.RawMessage
		if err := json.Unmarshal(b, &members); err != nil {
			return Frame{Code: CodeParseError, Reason: "invalid JSON"}
		}
		if len(members) == 0 {
			return Frame{Code: CodeInvalidRequest, Reason: "empty batch"}
		}
		f := Frame{Batch: true, Messages: make([]Message, len(members))}
		for i, m := range members {
			f.Messages[i] = decodeOne(m)
		}
		return f
	}
	if b[0] != '{' {
		if !json.Valid(b) {
			return Frame{Code: CodeParseError, Reason: "invalid JSON"}
		}
		return Frame{Messages: []Message{invalid("a message must be a JSON object")}}
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		// Unmarshal validates the whole frame first, so any error on an
		// object is a syntax error.
		return Frame{Code: CodeParseError, Reason: "invalid JSON"}
	}
	return Frame{Messages: []Message{decodeEnvelope(env)}}
}

type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

func invalid(reason string) Message {
	return Message{Kind: KindInvalid, Code: CodeInvalidRequest, Reason: reason}
}

func decodeOne(b json.RawMessage) Message {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return invalid("a message must be a JSON object")
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return invalid("a message must be a JSON object")
	}
	return decodeEnvelope(env)
}

func decodeEnvelope(env envelope) Message {
	// compact {method, params} envelope (§5.3)
	if env.JSONRPC == nil && env.ID == nil && env.Result == nil && env.Error == nil && env.Method != nil {
		m := decodeRequestish(env)
		if m.Kind == KindNotification {
			m.Compact = true
		}
		return m
	}
	if string(env.JSONRPC) != `"2.0"` {
		m := invalid(`"jsonrpc" must be "2.0"`)
		if id, ok := validID(env.ID); ok {
			m.ID = id
		}
		return m
	}
	if env.Method == nil && (env.Result != nil || env.Error != nil) {
		return decodeResponse(env)
	}
	return decodeRequestish(env)
}

func decodeRequestish(env envelope) Message {
	var method string
	if env.Method == nil || env.Method[0] != '"' || !unquote(env.Method, &method) {
		m := invalid(`"method" must be a string`)
		if id, ok := validID(env.ID); ok {
			m.ID = id // answerable with the caller's id
		}
		return m
	}
	m := Message{Method: method}
	if env.Params != nil && string(env.Params) != "null" {
		m.Params = env.Params
	}
	if env.ID == nil {
		m.Kind = KindNotification
	} else {
		id, ok := validID(env.ID)
		if !ok {
			return invalid(`"id" must be a string or a number`)
		}
		m.Kind = KindRequest
		m.ID = id
	}
	if m.Params != nil && m.Params[0] != '{' && m.Params[0] != '[' {
		bad := invalid(`"params" must be an object`)
		bad.ID = m.ID
		bad.Method = method
		return bad
	}
	return m
}

func decodeResponse(env envelope) Message {
	m := Message{Kind: KindResponse}
	id := bytes.TrimSpace(env.ID)
	if string(id) == "null" {
		m.ID = json.RawMessage("null")
	} else if v, ok := validID(env.ID); ok {
		m.ID = v
	} else {
		return invalid(`"id" must be a string, a number or null`)
	}
	if env.Error != nil && string(env.Error) != "null" {
		var we WireError
		if err := json.Unmarshal(env.Error, &we); err != nil {
			return invalid(`"error" must be an error object`)
		}
		m.Error = &we
		return m
	}
	m.Result = env.Result
	return m
}

// validID reports whether raw is a string or number id and returns it compacted.
func validID(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	switch c := raw[0]; {
	case c == '"':
		return raw, true
	case c == '-' || (c >= '0' && c <= '9'):
		return raw, true
	}
	return nil, false
}

// IDKey returns a canonical key for an id so that "a\u0062" and "ab" match.
// Numbers keep their literal text.
func IDKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s:" + s
		}
	}
	return "n:" + string(id)
}

// depth returns the maximum nesting of arrays/objects in b, stopping early
// once it is clearly too deep. Strings are skipped.
func depth(b []byte) int {
	d, maxD := 0, 0
	inStr, esc := false, false
	for _, c := range b {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			d++
			if d > maxD {
				maxD = d
			}
		case '}', ']':
			d--
		}
	}
	return maxD
}

// Response builds a compact JSON-RPC response. result must already be JSON.
func Response(id json.RawMessage, result json.RawMessage) []byte {
	return reply(id, `,"result":`, result)
}

// ErrorResponse builds a compact JSON-RPC error response. errObj must already
// be a JSON error object.
func ErrorResponse(id json.RawMessage, errObj json.RawMessage) []byte {
	return reply(id, `,"error":`, errObj)
}

// reply builds a response to id whose one other member, introduced by
// member (`,"name":`), holds body (already JSON); a nil id is null.
func reply(id json.RawMessage, member string, body json.RawMessage) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	out := make([]byte, 0, len(body)+len(id)+32)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, member...)
	out = append(out, body...)
	out = append(out, '}')
	return out
}

// Notification builds a compact JSON-RPC notification. params must be JSON.
func Notification(method string, params json.RawMessage) []byte {
	mb, _ := json.Marshal(method)
	out := make([]byte, 0, len(params)+len(mb)+40)
	out = append(out, `{"jsonrpc":"2.0","method":`...)
	out = append(out, mb...)
	out = append(out, `,"params":`...)
	out = append(out, params...)
	out = append(out, '}')
	return out
}

// Request builds a compact JSON-RPC request. params must be JSON.
func Request(id json.RawMessage, method string, params json.RawMessage) []byte {
	mb, _ := json.Marshal(method)
	out := make([]byte, 0, len(params)+len(mb)+len(id)+48)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"method":`...)
	out = append(out, mb...)
	out = append(out, `,"params":`...)
	out = append(out, params...)
	out = append(out, '}')
	return out
}
