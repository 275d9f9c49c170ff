package federation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/rcpgo/rcpgo/rcp"
)

// scopeSessionID replaces a request's sessionId with one derived from the
// gateway's caller (rcp.Caller.Scope) and the id. Every engine sees the
// gateway as one caller and scopes session ids by caller, so without this
// two clients of the gateway using the same sessionId would share one
// trajectory on every engine (issue 33 item 9). Params without a string
// sessionId are returned as they are.
func scopeSessionID(ctx context.Context, params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(`"sessionId"`)) {
		return params
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params
	}
	var id string
	if json.Unmarshal(m["sessionId"], &id) != nil || id == "" {
		return params
	}
	sum := sha256.Sum256([]byte(rcp.CallerOf(ctx).Scope() + "\x00" + id))
	m["sessionId"], _ = json.Marshal("gw-" + hex.EncodeToString(sum[:16]))
	out, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return out
}
