package engine

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestCursorJSONMatchesEncodingJSON checks the hand-written cursor encoding
// against json.Marshal, byte for byte, for plain versions and for strings
// that need escaping (the encoding/json fallback), and that every cursor
// decodes back.
func TestCursorJSONMatchesEncodingJSON(t *testing.T) {
	for _, c := range []cursor{
		{Version: "5871a268.2", Offset: 3, Hash: "90I9468PNwsN"},
		{Version: "e.0", Offset: 0, Hash: "-_AZaz09"},
		{Version: "x", Offset: 1 << 40, Hash: ""},
		{Version: `quote"d`, Offset: 7, Hash: `back\slash`},
		{Version: "<b>&", Offset: 7, Hash: "h"},
		{Version: "tab\there", Offset: 7, Hash: "h"},
		{Version: "caf\u00e9", Offset: 7, Hash: "\u2028"},
		{Version: "bad\xffutf8", Offset: 7, Hash: "del\x7f"},
	} {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCursorJSON(nil, c); string(got) != string(want) {
			t.Errorf("appendCursorJSON(%+v) = %s; json.Marshal: %s", c, got, want)
		}
		if !utf8.ValidString(c.Version + c.Hash) {
			continue // encoding/json replaces invalid bytes: no round trip
		}
		if back, ok := decodeCursor(encodeCursor(c)); !ok || back != c {
			t.Errorf("decodeCursor(encodeCursor(%+v)) = %+v, %v", c, back, ok)
		}
	}
}
