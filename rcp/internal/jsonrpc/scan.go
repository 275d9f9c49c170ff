package jsonrpc

import (
	"encoding/json"
	"strings"
)

// decodeFast is the single-pass decoder for the common case: one scan
// validates the frame, bounds its nesting and records where the envelope
// members of each message start and end, without building maps or a second
// parse. It declines (ok=false) every frame whose answer it cannot
// guarantee to equal decodeSlow's:
//   - invalid JSON, or nesting beyond maxDepth (the depth and syntax
//     diagnostics stay decodeSlow's);
//   - leading or trailing space other than JSON's (bytes.TrimSpace in
//     decodeSlow also trims Unicode spaces);
//   - a member key with an escape or a non-ASCII byte (encoding/json
//     unescapes keys and folds them with Unicode case rules; plain ASCII keys
//     are matched here exactly as it matches them: exact, else
//     ASCII-case-insensitively).
//
// The frame is copied once (the caller's buffer is reused for the next
// frame) and the raw values (id, params, result) are sub-slices of that copy,
// capped so an append cannot overwrite a neighbour.
func decodeFast(frame []byte, maxDepth int) (Frame, bool) {
	b := append([]byte(nil), frame...)
	s := scanner{b: b, max: maxDepth}
	s.skipSpace()
	if s.i == len(b) {
		return Frame{}, false
	}
	first := b[s.i]
	var envs [1]envelope
	var members []envelope
	switch first {
	case '{':
		if !s.object(&envs[0]) {
			return Frame{}, false
		}
	case '[':
		if !s.batch(&members) {
			return Frame{}, false
		}
	default:
		if !s.value() {
			return Frame{}, false
		}
	}
	s.skipSpace()
	if s.i != len(b) {
		return Frame{}, false
	}
	switch first {
	case '{':
		return Frame{Messages: []Message{decodeEnvelope(envs[0])}}, true
	case '[':
		if s.count == 0 {
			return Frame{Code: CodeInvalidRequest, Reason: "empty batch"}, true
		}
		f := Frame{Batch: true, Messages: make([]Message, s.count)}
		j := 0
		for i := range f.Messages {
			if s.objects[i] {
				f.Messages[i] = decodeEnvelope(members[j])
				j++
			} else {
				f.Messages[i] = invalid("a message must be a JSON object")
			}
		}
		return f, true
	}
	return Frame{Messages: []Message{invalid("a message must be a JSON object")}}, true
}

// Member finds key in the JSON object obj the way encoding/json fills a
// struct field tagged key: the last of duplicate members, the key matched
// exactly or ASCII-case-insensitively. ok is false when obj is not one
// valid object, or when a member key has an escape or a non-ASCII byte (whose
// matching encoding/json decides by Unicode folding): the caller then falls
// back to encoding/json. val aliases obj.
func Member(obj []byte, key string) (val []byte, found, ok bool) {
	s := scanner{b: obj, max: DefaultMaxDepth, want: key}
	s.skipSpace()
	if s.i == len(obj) || obj[s.i] != '{' || !s.object(nil) {
		return nil, false, false
	}
	s.skipSpace()
	if s.i != len(obj) {
		return nil, false, false
	}
	return s.got, s.got != nil, true
}

// scanner is a validating JSON scanner over one frame.
type scanner struct {
	b     []byte
	i     int
	depth int
	max   int
	// Member's key and the value found for it
	want string
	got  []byte
	// batch bookkeeping: members seen, and which of them are objects
	count   int
	objects []bool
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one JSON value at s.i (space already skipped).
func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(nil)
	case c == '[':
		return s.array()
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (s *scanner) digits() bool {
	n := s.i
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
	}
	return s.i > n
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return false
	}
	if s.b[s.i] == '0' {
		s.i++
	} else if !s.digits() {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// str scans a string at s.i; plain reports that it has no escape and only
// ASCII bytes.
func (s *scanner) str() (plain, ok bool) {
	s.i++ // opening quote
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return plain, true
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.b) {
				return false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false, false
					}
				}
				s.i += 5
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		default:
			if c >= 0x80 {
				plain = false // valid UTF-8 was checked by Decode
			}
			s.i++
		}
	}
	return false, false
}

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) enter() bool {
	s.depth++
	return s.depth <= s.max
}

func (s *scanner) array() bool { return s.container(']', s.value) }

// batch scans the top-level array of a batch, recording each member object's
// envelope.
func (s *scanner) batch(members *[]envelope) bool {
	return s.container(']', func() bool {
		if s.i < len(s.b) && s.b[s.i] == '{' {
			*members = append(*members, envelope{})
			if !s.object(&(*members)[len(*members)-1]) {
				return false
			}
			s.objects = append(s.objects, true)
		} else {
			if !s.value() {
				return false
			}
			s.objects = append(s.objects, false)
		}
		s.count++
		return true
	})
}

// container scans an array or object whose opening bracket is at s.i and
// whose closing one is end, calling elem with s.i at each element or member
// (white space skipped).
func (s *scanner) container(end byte, elem func() bool) bool {
	if !s.enter() {
		return false
	}
	s.i++
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		s.depth--
		return true
	}
	for {
		s.skipSpace()
		if !elem() {
			return false
		}
		s.skipSpace()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case end:
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// object scans an object; with env set, it records the envelope members
// (the last of duplicate keys wins, as with encoding/json).
func (s *scanner) object(env *envelope) bool {
	return s.container('}', func() bool { return s.member(env) })
}

// member scans one "key": value member of an object at s.i.
func (s *scanner) member(env *envelope) bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	k0 := s.i
	plain, ok := s.str()
	if !ok {
		return false
	}
	top := s.want != "" && s.depth == 1
	if (env != nil || top) && !plain {
		return false // escaped or non-ASCII key: encoding/json decides
	}
	key := s.b[k0+1 : s.i-1]
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return false
	}
	s.i++
	s.skipSpace()
	v0 := s.i
	if !s.value() {
		return false
	}
	if env != nil {
		if f := env.field(key); f != nil {
			*f = json.RawMessage(s.b[v0:s.i:s.i])
		}
	} else if top && (string(key) == s.want || strings.EqualFold(string(key), s.want)) {
		s.got = s.b[v0:s.i:s.i]
	}
	return true
}

// field maps an ASCII key to its envelope member the way encoding/json
// matches struct fields: exactly, else case-insensitively.
func (e *envelope) field(key []byte) *json.RawMessage {
	members := [...]struct {
		name string
		raw  *json.RawMessage
	}{
		{"jsonrpc", &e.JSONRPC},
		{"id", &e.ID},
		{"method", &e.Method},
		{"params", &e.Params},
		{"result", &e.Result},
		{"error", &e.Error},
	}
	for _, m := range members {
		if string(key) == m.name {
			return m.raw
		}
	}
	if len(key) > len("jsonrpc") || len(key) < len("id") {
		return nil
	}
	k := string(key)
	for _, m := range members {
		if strings.EqualFold(k, m.name) {
			return m.raw
		}
	}
	return nil
}

// unquote decodes a JSON string literal into *out; strings without escapes
// are copied directly.
func unquote(raw []byte, out *string) bool {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		body := raw[1 : len(raw)-1]
		plain := true
		for _, c := range body {
			if c == '\\' || c == '"' || c < 0x20 {
				plain = false
				break
			}
		}
		if plain {
			*out = string(body)
			return true
		}
	}
	return json.Unmarshal(raw, out) == nil
}
