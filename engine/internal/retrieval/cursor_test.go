package retrieval

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
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

// A cursor is checked as a whole: any changed character of its body, the
// rc1 format (SHA-256 checked) and truncations are malformed.
func TestDecodeCursorRejectsDamage(t *testing.T) {
	good := encodeCursor(cursor{Version: "5871a268.2", Offset: 3, Hash: "90I9468PNws"})
	if _, ok := decodeCursor(good); !ok {
		t.Fatalf("decodeCursor(%q) refused a cursor it issued", good)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := len(cursorPrefix); i < len(good); i++ {
		for _, r := range []byte{alphabet[(strings.IndexByte(alphabet, good[i])+1)%64], alphabet[(strings.IndexByte(alphabet, good[i])+37)%64]} {
			bad := good[:i] + string(r) + good[i+1:]
			if i == len(good)-1 {
				continue // the last character carries padding bits base64 ignores
			}
			if c, ok := decodeCursor(bad); ok {
				t.Errorf("decodeCursor(%q) accepted a damaged cursor: %+v", bad, c)
			}
		}
	}
	for _, bad := range []string{"", "rc2.", "rc1." + good[len(cursorPrefix):], good[:len(good)-3], "rc2.!!!!", "rc2.AAAAAAA"} {
		if c, ok := decodeCursor(bad); ok {
			t.Errorf("decodeCursor(%q) = %+v, accepted", bad, c)
		}
	}
}

// FuzzDecodeCursor: no input makes decodeCursor panic, and what it accepts
// is a cursor it would issue (non-empty version, offset ≥ 0) that survives
// a round trip.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursor{Version: "5871a268.2", Offset: 3, Hash: "90I9468PNws"}))
	f.Add(encodeCursor(cursor{Version: "<b>&", Offset: 0, Hash: "\u2028"}))
	f.Add("rc2.eyJ2IjoiIiwibyI6LTF9AAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := decodeCursor(s)
		if !ok {
			return
		}
		if c.Version == "" || c.Offset < 0 {
			t.Fatalf("decodeCursor(%q) accepted %+v", s, c)
		}
		c.v1 = false // re-encoded as rc2
		if back, ok := decodeCursor(encodeCursor(c)); utf8.ValidString(c.Version+c.Hash) && (!ok || back != c) {
			t.Fatalf("round trip of %+v: %+v, %v", c, back, ok)
		}
	})
}

// encodeCursorV1 is a cursor as rc1 wrote it: SHA-256 checked.
func encodeCursorV1(c cursor) string {
	b := appendCursorJSON(nil, c)
	sum := sha256.Sum256(b)
	return cursorPrefixV1 + base64.RawURLEncoding.EncodeToString(append(b, sum[:4]...))
}

// An rc1 cursor (issued before an upgrade; cursors survive a clean
// restart) decodes as one, marked so that its request hash is checked the
// rc1 way; a changed character of its body is refused.
func TestDecodeCursorV1(t *testing.T) {
	want := cursor{Version: "5871a268.2", Offset: 3, Hash: "90I9468PNws"}
	v1 := encodeCursorV1(want)
	got, ok := decodeCursor(v1)
	if want.v1 = true; !ok || got != want {
		t.Fatalf("decodeCursor(%q) = %+v, %v; want %+v", v1, got, ok, want)
	}
	i := len(cursorPrefixV1) + 2
	bad := v1[:i] + string(v1[i]^1) + v1[i+1:]
	if c, ok := decodeCursor(bad); ok {
		t.Fatalf("decodeCursor(%q) accepted a damaged rc1 cursor: %+v", bad, c)
	}
}
