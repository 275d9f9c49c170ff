package derive

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDenseRecordCodec: dense records round-trip in the binary encoding
// (long texts compressed), decode their parent without the text, and the
// JSON records of earlier logs still read.
func TestDenseRecordCodec(t *testing.T) {
	long := strings.Repeat("the dense text log keeps what the encoder sees. ", 40)
	for _, tc := range []struct{ parent, text string }{
		{"", ""},
		{"", "short text"},
		{"doc-1", long},
		{"doc-ü", "héhé"},
	} {
		enc := encodeDenseRecord(tc.parent, tc.text)
		if len(tc.text) == len(long) && len(enc) >= len(long)/2 {
			t.Errorf("a repetitive %d-byte text encodes to %d bytes: not compressed", len(long), len(enc))
		}
		r, err := decodeDenseRecord(enc, true)
		if err != nil || r.Parent != tc.parent || r.Text != tc.text {
			t.Errorf("round trip of %q/%.20q: %+v, %v", tc.parent, tc.text, r, err)
		}
		if r, err := decodeDenseRecord(enc, false); err != nil || r.Parent != tc.parent || r.Text != "" {
			t.Errorf("parent only: %+v, %v", r, err)
		}
	}
	old, _ := json.Marshal(denseRecord{Parent: "p", Text: "json text"})
	if r, err := decodeDenseRecord(old, true); err != nil || r.Parent != "p" || r.Text != "json text" {
		t.Errorf("JSON record: %+v, %v", r, err)
	}
	for _, bad := range [][]byte{nil, {0x01}, {denseRecordTag}, {denseRecordTag, 9, 'a'}, {denseRecordTag, 0, 5, 0, 'a'}} {
		if _, err := decodeDenseRecord(bad, true); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

// FuzzDenseRecord: no input crashes the dense record decoder, and what it
// accepts re-encodes to a record that decodes the same.
func FuzzDenseRecord(f *testing.F) {
	f.Add(encodeDenseRecord("doc", strings.Repeat("abc ", 60)))
	f.Add([]byte(`{"p":"x","t":"y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeDenseRecord(b, true)
		if err != nil {
			return
		}
		r2, err := decodeDenseRecord(encodeDenseRecord(r.Parent, r.Text), true)
		if err != nil || r2 != r {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", r, r2, err)
		}
	})
}
