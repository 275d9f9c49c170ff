package rcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// ID is a hit or entity identifier that is a JSON string or number on the
// wire (§7.7). It keeps the exact JSON text it was decoded from, so a proxy
// echoes 12345678901234567890 or 1.0 unchanged. The zero ID is absent.
// IDs are comparable and usable as map keys.
type ID struct{ raw string }

// StringID returns the ID for a JSON string.
func StringID(s string) ID {
	if plainJSON(s) { // the common case, with the bytes json.Marshal would write
		return ID{raw: "\"" + s + "\""}
	}
	b, _ := json.Marshal(s)
	return ID{raw: string(b)}
}

// plainJSON reports whether s is printable ASCII that json.Marshal writes
// between quotes unchanged (no quote, backslash or HTML-escaped <, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// IntID returns the ID for a JSON integer.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// IsZero reports whether the ID is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// IsString reports whether the ID is a JSON string.
func (id ID) IsString() bool { return len(id.raw) > 0 && id.raw[0] == '"' }

// Raw returns the JSON text of the ID.
func (id ID) Raw() string { return id.raw }

// String returns the stringified ID used to key hits across engines (§16.3):
// the string itself for string IDs, the JSON number literal as written for
// numeric IDs.
func (id ID) String() string {
	if id.IsString() {
		if len(id.raw) >= 2 && plainJSON(id.raw[1:len(id.raw)-1]) {
			return id.raw[1 : len(id.raw)-1]
		}
		var s string
		_ = json.Unmarshal([]byte(id.raw), &s)
		return s
	}
	return id.raw
}

// MarshalJSON writes the ID's JSON text.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON accepts a JSON string or number.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("rcp: empty id")
	}
	switch {
	case b[0] == '"':
		var s string
		if err := unquote(b, &s); err != nil {
			return err
		}
		// canonicalise escapes so equal strings compare equal
		id.raw = StringID(s).raw
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		id.raw = string(b)
	case string(b) == "null":
		id.raw = ""
	default:
		return errors.New("rcp: id must be a string or a number")
	}
	return nil
}
