package schematest

import "testing"

func TestValidateKnownShapes(t *testing.T) {
	valid := []struct{ def, json string }{
		{"Hit", `{"id":"d1","score":0.5}`},
		{"Hit", `{"id":7,"score":1,"citation":{"source":"s"},"trust":{"level":"trusted"}}`},
		{"PingResult", `{"nonce":"x"}`},
		{"Message", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"Message", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`},
	}
	for _, tc := range valid {
		if err := Check(t, tc.def, []byte(tc.json)); err != nil {
			t.Errorf("%s %s: %v", tc.def, tc.json, err)
		}
	}
	invalid := []struct{ def, json string }{
		{"Hit", `{"score":0.5}`},
		{"Message", `{"jsonrpc":"1.0","id":1,"result":{}}`},
		{"Message", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`},
	}
	for _, tc := range invalid {
		if err := Check(t, tc.def, []byte(tc.json)); err == nil {
			t.Errorf("%s %s: validated, want an error", tc.def, tc.json)
		}
	}
	ValidateResult(t, "retrieve", []byte(`{"hits":[{"id":"a","score":1}]}`))
	ValidateResponse(t, "ping", []byte(`{"jsonrpc":"2.0","id":"p","result":{"nonce":3}}`))
	ValidateMessage(t, []byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`))
}
