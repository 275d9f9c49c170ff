package filter

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

func inList(n int) string {
	var b strings.Builder
	b.WriteString(`{"field":"year","op":"in","value":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`]}`)
	return b.String()
}

// in/nin lists are capped (item 8: a 12 MB list of 1.5 M ints took 3.2 s
// and 330 MB), before decoding when the raw filter is too large.
func TestFilterListCaps(t *testing.T) {
	fields := map[string]string{"year": TypeInt}
	for _, tc := range []struct {
		name   string
		filter string
		ok     bool
	}{
		{"at the cap", inList(DefaultMaxValues), true},
		{"over the cap", inList(DefaultMaxValues + 1), false},
		{"over across lists", `{"or":[` + inList(DefaultMaxValues/2+1) + `,` + inList(DefaultMaxValues/2) + `]}`, false},
		{"1.5 M values", inList(1_500_000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Validate(json.RawMessage(tc.filter), fields, nil)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				if re, _ := rcp.AsError(err); re == nil || re.Code != rcp.CodeInvalidParams || !strings.HasPrefix(re.Data.Field, "filter") {
					t.Fatalf("err = %v, want -32602 on filter", err)
				}
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
