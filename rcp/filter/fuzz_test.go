package filter

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

var fuzzFields = map[string]string{
	"lang": TypeKeyword, "body": TypeText, "year": TypeInt, "price": TypeFloat,
	"published": TypeBool, "created": TypeDate, "loc": TypeGeo, "tag": "",
}

// FuzzValidate: arbitrary bytes never panic; the result is either a valid
// tree (which marshals, re-validates to itself and evaluates) or a -32602 /
// -32005 *rcp.Error carrying error.data.field (and option for -32005).
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"and":[{"field":"lang","op":"eq","value":"en"},{"or":[{"field":"year","op":"gte","value":2023},{"field":"tag","op":"in","value":["news","blog"]}]}]}`,
		`{"not":{"field":"created","op":"lt","value":"2023-01-01T00:00:00Z"}}`,
		`{"field":"price","op":"in","value":[1,2.5,null]}`,
		`{"field":"lang","op":"exists"}`,
		`{"and":[]}`, `{"or":{}}`, `[]`, `null`, `{}`, `"x"`, `{"field":"lang","op":["eq"]}`,
		`{"field":"year","op":"eq","value":9007199254740993}`,
		strings.Repeat(`{"not":`, 40) + `{"field":"lang","op":"exists"}` + strings.Repeat(`}`, 40),
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, opsMask uint8) {
		var ops []string
		if opsMask != 0 {
			ops = []string{}
			for i, op := range AllOperators[:8] {
				if opsMask&(1<<i) != 0 {
					ops = append(ops, string(op))
				}
			}
		}
		n, err := Validate(json.RawMessage(data), fuzzFields, ops)
		if err != nil {
			var re *rcp.Error
			if !errors.As(err, &re) {
				t.Fatalf("non-RCP error %T %v", err, err)
			}
			switch re.Code {
			case rcp.CodeInvalidParams:
				if re.Data == nil || !strings.HasPrefix(re.Data.Field, "filter") {
					t.Fatalf("-32602 without a filter path: %v", err)
				}
			case rcp.CodeOptionUnsupported:
				if re.Data == nil || re.Data.Option == "" {
					t.Fatalf("-32005 without an option: %v", err)
				}
			default:
				t.Fatalf("unexpected code %v", re.Code)
			}
			if n != nil {
				t.Fatal("tree returned with an error")
			}
			return
		}
		if n == nil {
			return
		}
		raw, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("validated tree does not marshal: %v", err)
		}
		again, err := Validate(json.RawMessage(raw), fuzzFields, ops)
		if err != nil || again.String() != string(raw) {
			t.Fatalf("not a fixed point: %s -> %v, %v", raw, again, err)
		}
		if n.Count() > DefaultMaxNodes {
			t.Fatalf("tree of %d nodes", n.Count())
		}
		n.Match(map[string]any{"lang": "en", "year": 2023, "tag": []any{"a", 1.5}, "created": "2023-01-01T00:00:00Z"})
	})
}

// bigFilter returns a filter of exactly n nodes: an and over leaves and
// not-wrapped leaves of every value type.
func bigFilter(n int) []byte {
	var leaves []string
	ops := []string{
		`{"field":"lang","op":"eq","value":"en"}`,
		`{"field":"year","op":"gte","value":2020}`,
		`{"field":"tag","op":"in","value":["a","b","c"]}`,
		`{"field":"created","op":"lt","value":"2024-01-01T00:00:00Z"}`,
		`{"not":{"field":"published","op":"eq","value":false}}`,
	}
	count := 1 // the root and
	for i := 0; count < n; i++ {
		s := ops[i%len(ops)]
		c := 1
		if strings.HasPrefix(s, `{"not"`) {
			c = 2
		}
		if count+c > n {
			s, c = ops[0], 1
		}
		leaves = append(leaves, s)
		count += c
	}
	return []byte(`{"and":[` + strings.Join(leaves, ",") + `]}`)
}

func BenchmarkValidate200(b *testing.B) {
	raw := json.RawMessage(bigFilter(200))
	n, err := Validate(raw, fuzzFields, nil)
	if err != nil || n.Count() != 200 {
		b.Fatalf("setup: %v, %d nodes", err, n.Count())
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(raw, fuzzFields, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatch200(b *testing.B) {
	n, _ := Validate(json.RawMessage(bigFilter(200)), fuzzFields, nil)
	doc := map[string]any{"lang": "en", "year": 2023, "tag": []any{"c"}, "created": "2023-05-01T00:00:00Z", "published": true}
	if !n.Match(doc) {
		b.Fatal("setup: no match")
	}
	b.ReportAllocs()
	for b.Loop() {
		n.Match(doc)
	}
}
