package rcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestErrorCodesJSON checks package rcp's code constants against
// testdata/errors.json (§12, §12.1, §12.2; testdata/README.md says where it
// comes from).
func TestErrorCodesJSON(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "errors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Reserved struct{ Min, Max int } `json:"rcp_reserved_range"`
		Fields   []struct {
			Name string `json:"name"`
		} `json:"error_data_fields"`
		Codes []struct {
			Code      int    `json:"code"`
			Symbol    string `json:"symbol"`
			Range     string `json:"range"`
			Retryable bool   `json:"sdk_default_retryable"`
		} `json:"codes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Codes) != 18 {
		t.Fatalf("errors.json lists %d codes, want 18", len(doc.Codes))
	}
	for _, c := range doc.Codes {
		code := rcp.Code(c.Code)
		if got := code.String(); got != c.Symbol {
			t.Errorf("Code(%d).String() = %q, want %q", c.Code, got, c.Symbol)
		}
		if got := code.Retryable(); got != c.Retryable {
			t.Errorf("Code(%d).Retryable() = %v, want %v", c.Code, got, c.Retryable)
		}
		inRCP := c.Code >= doc.Reserved.Min && c.Code <= doc.Reserved.Max
		if inRCP != (c.Range == "rcp") {
			t.Errorf("code %d: range %q but reserved-range membership %v", c.Code, c.Range, inRCP)
		}
		// the retryable default only ever comes from the code
		e := rcp.NewError(code, "x")
		if e.Retryable() != c.Retryable {
			t.Errorf("Error{%d}.Retryable() = %v", c.Code, e.Retryable())
		}
	}
	for name, c := range map[string]rcp.Code{"InvalidParams": rcp.CodeInvalidParams, "OptionUnsupported": rcp.CodeOptionUnsupported} {
		if c.String() != name {
			t.Errorf("%s = %v", name, c)
		}
	}
	// §12.1 conventional error.data fields all round-trip through rcp.ErrorData
	f, ra := true, int64(5)
	d := rcp.ErrorData{Field: "f", Option: "o", Retryable: &f, RetryAfterMs: &ra, Detail: "d"}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	for _, fd := range doc.Fields {
		if _, ok := m[fd.Name]; !ok {
			t.Errorf("rcp.ErrorData does not carry error.data.%s", fd.Name)
		}
	}
}
