package engine

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/rcp"
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

// Cursors survive a clean restart, so one issued before the rc2 format
// (an rc1 cursor, SHA-256 checked, request hashed with SHA-256) still
// pages after an upgrade, and a damaged or foreign one is still refused.
func TestCursorV1StillPages(t *testing.T) {
	e := newEngine(t, nil)
	page1 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2})
	c, ok := decodeCursor(page1.NextCursor)
	if !ok || c.v1 {
		t.Fatalf("decodeCursor(%q) = %+v, %v", page1.NextCursor, c, ok)
	}
	// The list-defining key of {"query":"retrieval","k":2} as rc1 hashed it.
	key := sha256.Sum256([]byte("retrieval\x00sparse|" + rcp.UnitChunk + "|100|0|nullnullnull"))
	v1 := encodeCursorV1(cursor{Version: c.Version, Offset: c.Offset, Hash: base64.RawURLEncoding.EncodeToString(key[:9])})
	if back, ok := decodeCursor(v1); !ok || !back.v1 || back.Offset != c.Offset {
		t.Fatalf("decodeCursor(rc1 %q) = %+v, %v", v1, back, ok)
	}
	viaV1 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "cursor": v1})
	viaV2 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "cursor": page1.NextCursor})
	if fmt.Sprint(ids(viaV1)) != fmt.Sprint(ids(viaV2)) || viaV1.IndexVersion != viaV2.IndexVersion || !strings.HasPrefix(viaV1.NextCursor, cursorPrefix) {
		t.Fatalf("rc1 cursor page %v (%s, next %q), rc2 cursor page %v (%s)", ids(viaV1), viaV1.IndexVersion, viaV1.NextCursor, ids(viaV2), viaV2.IndexVersion)
	}
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "other", "k": 2, "cursor": v1}); err == nil || err.Code != rcp.CodeInvalidParams {
		t.Fatalf("rc1 cursor of another query: %v", err)
	}
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "retrieval", "k": 2, "cursor": v1[:len(v1)-2] + "AA"}); err == nil || err.Code != rcp.CodeInvalidParams {
		t.Fatalf("damaged rc1 cursor: %v", err)
	}
}
