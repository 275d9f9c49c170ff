package engine

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// Cursors survive a clean restart, so one issued before the rc2 format
// (an rc1 cursor, SHA-256 checked, request hashed with SHA-256) still
// pages after an upgrade, and a damaged or foreign one is still refused.
func TestCursorV1StillPages(t *testing.T) {
	e := newEngine(t, nil)
	page1 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2})
	// An rc2 cursor is "rc2." and the base64 of its JSON body and a
	// 4-byte checksum; an rc1 cursor "rc1." and the base64 of the body and
	// the first 4 bytes of its SHA-256, the request hashed with SHA-256.
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(page1.NextCursor, "rc2."))
	var c struct {
		V string `json:"v"`
		O int    `json:"o"`
	}
	if err != nil || len(raw) < 5 || json.Unmarshal(raw[:len(raw)-4], &c) != nil {
		t.Fatalf("rc2 cursor %q: %v", page1.NextCursor, err)
	}
	// The list-defining key of {"query":"retrieval","k":2} as rc1 hashed it.
	key := sha256.Sum256([]byte("retrieval\x00sparse|" + rcp.UnitChunk + "|100|0|nullnullnull"))
	body, _ := json.Marshal(map[string]any{"v": c.V, "o": c.O, "h": base64.RawURLEncoding.EncodeToString(key[:9])})
	sum := sha256.Sum256(body)
	v1 := "rc1." + base64.RawURLEncoding.EncodeToString(append(body, sum[:4]...))
	viaV1 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "cursor": v1})
	viaV2 := retrieve(t, e, map[string]any{"query": "retrieval", "k": 2, "cursor": page1.NextCursor})
	if fmt.Sprint(ids(viaV1)) != fmt.Sprint(ids(viaV2)) || viaV1.IndexVersion != viaV2.IndexVersion || !strings.HasPrefix(viaV1.NextCursor, "rc2.") {
		t.Fatalf("rc1 cursor page %v (%s, next %q), rc2 cursor page %v (%s)", ids(viaV1), viaV1.IndexVersion, viaV1.NextCursor, ids(viaV2), viaV2.IndexVersion)
	}
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "other", "k": 2, "cursor": v1}); err == nil || err.Code != rcp.CodeInvalidParams {
		t.Fatalf("rc1 cursor of another query: %v", err)
	}
	if _, err := call(t, e, rcp.MethodRetrieve, map[string]any{"query": "retrieval", "k": 2, "cursor": v1[:len(v1)-2] + "AA"}); err == nil || err.Code != rcp.CodeInvalidParams {
		t.Fatalf("damaged rc1 cursor: %v", err)
	}
}
