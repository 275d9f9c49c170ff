package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

func codecCases() []struct {
	name string
	doc  search.Document
	f    search.Facts
} {
	long := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 40)
	return []struct {
		name string
		doc  search.Document
		f    search.Facts
	}{
		{"minimal", search.Document{ID: "a", Text: "x"}, search.Facts{}},
		{"empty text", search.Document{ID: "e"}, search.Facts{ScreenRules: "r1"}},
		{"full", search.Document{ID: "p#c1", Title: "Tïtle", Text: "chunk text ✓",
			Meta: map[string]any{"year": json.Number("2019"), "tags": []any{"a", json.Number("-1.5e3"), true, nil},
				"nested": map[string]any{"k": "v", "empty": map[string]any{}, "none": []any{}}, "b": false},
			Source: &search.Source{Name: "wire", URI: "https://x/y", Page: -3}, Chunk: &search.ChunkRef{DocID: "p", Index: 1, Start: 5, End: 17}},
			search.Facts{ScreenRules: "r1", ScreenScore: 0.97, Suspected: true, Runes: 12, Tokens: 3}},
		{"empty source and chunk", search.Document{ID: "s", Text: "t", Source: &search.Source{}, Chunk: &search.ChunkRef{}}, search.Facts{}},
		{"compressed text", search.Document{ID: "long", Title: "L", Text: long}, search.Facts{ScreenRules: "r", Runes: len(long), Tokens: 400}},
	}
}

// TestRecordRoundTrip: every field and fact survives, with and without
// the text, and the JSON records of format 1 still decode.
func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range codecCases() {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := EncodeDoc(&tc.doc, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := EncodeDoc(&tc.doc, tc.f)
			if !bytes.Equal(enc, again) {
				t.Fatal("encoding is not canonical")
			}
			d, f, err := DecodeRecord(enc, true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*d, tc.doc) || f != tc.f {
				t.Fatalf("round trip:\n got %+v %+v\nwant %+v %+v", *d, f, tc.doc, tc.f)
			}
			head, f2, err := DecodeRecord(enc, false)
			if err != nil || head.Text != "" || f2 != tc.f || head.ID != tc.doc.ID || !reflect.DeepEqual(head.Meta, tc.doc.Meta) {
				t.Fatalf("head only: %+v %+v %v", head, f2, err)
			}
			legacy, _ := json.Marshal(&tc.doc)
			ld, lf, err := DecodeRecord(legacy, true)
			if err != nil || !reflect.DeepEqual(*ld, tc.doc) || lf != (search.Facts{}) {
				t.Fatalf("JSON record: %+v %+v %v", ld, lf, err)
			}
		})
	}
	// Text of a repetitive passage is stored compressed.
	c := codecCases()[4]
	enc, _ := EncodeDoc(&c.doc, c.f)
	if len(enc) > len(c.doc.Text)/4 {
		t.Errorf("a %d-byte repetitive text encodes to %d bytes: not compressed", len(c.doc.Text), len(enc))
	}
}

// TestRecordNormalisesNumbers: Go numbers take their JSON text and decode
// as json.Number, as the JSON records did.
func TestRecordNormalisesNumbers(t *testing.T) {
	d := search.Document{ID: "n", Meta: map[string]any{"f": 1.5, "i": 7, "u": uint8(3), "big": 1e21}}
	enc, err := EncodeDoc(&d, search.Facts{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDoc(enc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"f": json.Number("1.5"), "i": json.Number("7"), "u": json.Number("3"), "big": json.Number("1e+21")}
	if !reflect.DeepEqual(got.Meta, want) {
		t.Fatalf("meta %#v, want %#v", got.Meta, want)
	}
}

// TestRecordCorrupt: every truncation and a flipped tag are errors
// wrapping ErrCorrupt, never panics.
func TestRecordCorrupt(t *testing.T) {
	for _, tc := range codecCases() {
		enc, _ := EncodeDoc(&tc.doc, tc.f)
		for n := 0; n < len(enc); n++ {
			if _, _, err := DecodeRecord(enc[:n], true); err == nil {
				t.Fatalf("%s: truncated to %d of %d bytes decodes", tc.name, n, len(enc))
			} else if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: %v does not wrap ErrCorrupt", tc.name, err)
			}
		}
	}
	if _, err := DecodeDoc([]byte{0x7f, 1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown tag: %v", err)
	}
}
