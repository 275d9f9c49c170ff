package rcp

import (
	"encoding/json"
	"errors"
)

// DecodeParams decodes a params object into v, mapping every decoding
// problem to -32602 with error.data.field naming the offending path.
// TODO(protocol-core): enforce §4.6 (53-bit integers, null-as-absent, strict booleans) here.
func DecodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return InvalidParams(te.Field, "%s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return InvalidParams("", "%v", err)
	}
	return nil
}
