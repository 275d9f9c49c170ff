package retrieval

import (
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/rcp"
)

// decodeRetrieveFast decodes the common shape of retrieve params — an
// object of "query" (a string), "k" (an integer) and optionally "mode",
// "unit" (strings), "includeText" and "strict" (booleans) — without
// encoding/json's reflection. It reports false, leaving p untouched, for
// anything else: other or repeated members, escapes in strings, invalid
// UTF-8, other spellings of numbers, malformed JSON; rcp.DecodeParams then
// decodes (or rejects) the params as before. What it accepts it decodes
// exactly as rcp.DecodeParams does (TestDecodeRetrieveFast,
// FuzzDecodeRetrieveFast). p.KRaw aliases raw, which outlives the call.
func decodeRetrieveFast(raw []byte, p *retrieveParams) bool {
	d := fastDecoder{b: raw}
	var out retrieveParams
	var seen uint8
	if !d.byte('{') {
		return false
	}
	for !d.byte('}') {
		if seen != 0 && !d.byte(',') {
			return false
		}
		key, ok := d.plainString()
		if !ok || !d.byte(':') {
			return false
		}
		bit, ok := d.member(key, &out)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	if !d.end() {
		return false
	}
	*p = out
	return true
}

// fastDecoder scans JSON for decodeRetrieveFast.
type fastDecoder struct {
	b []byte
	i int
}

// member decodes the value of key into out; bit identifies the member.
func (d *fastDecoder) member(key string, out *retrieveParams) (bit uint8, ok bool) {
	switch key {
	case "query":
		s, ok := d.plainString()
		if ok {
			out.Query = rcp.TextQuery(s)
		}
		return 1, ok
	case "k":
		out.KRaw, ok = d.integer()
		return 2, ok
	case "mode":
		out.Mode, ok = d.plainString()
		return 4, ok
	case "unit":
		out.Unit, ok = d.plainString()
		return 8, ok
	case "includeText":
		out.IncludeText, ok = d.boolean()
		return 16, ok
	case "strict":
		out.Strict, ok = d.boolean()
		return 32, ok
	}
	return 0, false
}

func (d *fastDecoder) skipSpace() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte consumes c (after whitespace) if it is next.
func (d *fastDecoder) byte(c byte) bool {
	d.skipSpace()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (d *fastDecoder) end() bool {
	d.skipSpace()
	return d.i == len(d.b)
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8: its bytes are then its value.
func (d *fastDecoder) plainString() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		}
		d.i++
	}
	return "", false
}

// integer reads -?(0|[1-9][0-9]*) followed by a delimiter: the raw bytes.
func (d *fastDecoder) integer() ([]byte, bool) {
	d.skipSpace()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 1 && d.b[digits] == '0' {
		return nil, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case ',', '}', ' ', '\t', '\n', '\r':
		default:
			return nil, false // a fraction, an exponent, or garbage
		}
	}
	return d.b[start:d.i], true
}

// boolean reads true or false.
func (d *fastDecoder) boolean() (*bool, bool) {
	d.skipSpace()
	for _, lit := range [...]string{"true", "false"} {
		if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
			d.i += len(lit)
			v := lit == "true"
			return &v, true
		}
	}
	return nil, false
}
