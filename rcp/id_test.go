package rcp

import (
	"encoding/json"
	"testing"
)

// TestStringIDMatchesJSON: StringID's fast path writes exactly what
// json.Marshal writes, and String gives the string back, for plain and
// escaped strings alike.
func TestStringIDMatchesJSON(t *testing.T) {
	for _, s := range []string{"", "doc-1", "a b/c:d", "q\"uote", `back\slash`, "<tag>&", "tab\t", "é", "\xff", "\u2028", "~", " "} {
		want, _ := json.Marshal(s)
		id := StringID(s)
		if id.Raw() != string(want) {
			t.Errorf("StringID(%q).Raw() = %s, json.Marshal = %s", s, id.Raw(), want)
		}
		var back string
		_ = json.Unmarshal(want, &back)
		if id.String() != back {
			t.Errorf("StringID(%q).String() = %q, want %q", s, id.String(), back)
		}
	}
}

func BenchmarkStringID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = StringID("demo-chunk-17").String()
	}
}
