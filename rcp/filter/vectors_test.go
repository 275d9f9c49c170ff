package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/internal/jsonltest"
)

type filterExpect struct {
	OK         bool            `json:"ok"`
	Normalized json.RawMessage `json:"normalized"`
	Code       *int            `json:"code"`
	Field      *string         `json:"field"`
	Exception  string          `json:"exception"`
}

type filterCase struct {
	Name         string          `json:"name"`
	Filter       json.RawMessage `json:"filter"`
	Fields       json.RawMessage `json:"fields"`
	Operators    []string        `json:"operators"`
	Expect       *filterExpect   `json:"expect"`
	SpecExpect   *filterExpect   `json:"spec_expect"`
	ExpectPython *filterExpect   `json:"expect_python"`
	ExpectNode   *filterExpect   `json:"expect_node"`
	Recommended  string          `json:"recommended"`
}

// outcome is what this package returns for a vector.
type outcome struct {
	ok         bool
	normalized string // JSON, for ok outcomes
	code       rcp.Code
	field      string // error.data.field
	option     string // error.data.option (-32005)
}

// divergence records a vector where this package deliberately differs from
// the line's agreed expectation (or, for Python/Node disagreements, where it
// picks a side), with the spec section that decides it.
type divergence struct {
	section string
	want    outcome
	reason  string
}

func fail(code rcp.Code, field string) outcome { return outcome{code: code, field: field} }
func okNorm(n string) outcome                  { return outcome{ok: true, normalized: n} }

var divergences = map[string]divergence{
	// §8: "MUST return -32602 if a value's JSON type is incompatible with the field type".
	"type/int-eq-string":        {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "string on int field"},
	"type/int-gt-string":        {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "string on int field"},
	"type/int-in-mixed":         {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "string element on int field"},
	"type/float-gte-bool":       {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "bool on float field"},
	"type/float-lt-string":      {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "string on float field"},
	"type/keyword-eq-number":    {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "number on keyword field"},
	"type/keyword-in-numbers":   {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "numbers on keyword field"},
	"type/text-contains-number": {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "number on text field"},
	"type/bool-eq-string":       {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), `"true" is not a boolean`},
	"type/bool-eq-int":          {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "1 is not a boolean"},
	"type/date-gt-bool":         {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "bool is not a timestamp"},
	"shape/eq-bool-on-keyword":  {"§8", fail(rcp.CodeInvalidParams, "filter.value"), "bool on keyword field"},
	// §8 table: exists takes a boolean; §4.6: booleans are never 0/1/"true".
	"exists/non-bool-string-false": {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/non-bool-string-empty": {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/non-bool-string-yes":   {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/non-bool-zero":         {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/non-bool-one":          {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/non-bool-float-zero":   {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/non-bool-empty-array":  {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "Python/Node disagree on truthiness; spec rejects"},
	"exists/non-bool-empty-object": {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "Python/Node disagree on truthiness; spec rejects"},
	"exists/non-bool-array":        {"§8, §4.6", fail(rcp.CodeInvalidParams, "filter.value"), "no truthiness coercion"},
	"exists/null": {"§4.6", okNorm(`{"field":"lang","op":"exists","value":true}`),
		"null is absent, so the default true applies (references: false)"},
	// §8 / §12 (normative overlap rule): unadvertised operator is -32005 (§15.4 says -32602).
	"operators/unadvertised":        {"§8, §12", outcome{code: rcp.CodeOptionUnsupported, field: "filter.op", option: "gte"}, "-32005 not -32602"},
	"operators/unadvertised-nested": {"§8, §12", outcome{code: rcp.CodeOptionUnsupported, field: "filter.or[1].op", option: "contains"}, "-32005 not -32602"},
	"operators/unadvertised-exists": {"§8, §12", outcome{code: rcp.CodeOptionUnsupported, field: "filter.op", option: "exists"}, "-32005 not -32602"},
	"operators/empty-allow-list":    {"§8, §12", outcome{code: rcp.CodeOptionUnsupported, field: "filter.op", option: "eq"}, "-32005 not -32602"},
	"operators/op-checked-before-field": {"§8, §12", outcome{code: rcp.CodeOptionUnsupported, field: "filter.op", option: "gte"},
		"same rule; the operator check still precedes the field check as in the references"},
	// §8: "an empty and/or array is -32602".
	"comb/and-empty":            {"§8", fail(rcp.CodeInvalidParams, "filter.and"), "empty and"},
	"comb/or-empty":             {"§8", fail(rcp.CodeInvalidParams, "filter.or"), "empty or"},
	"comb/empty-or-nested":      {"§8", fail(rcp.CodeInvalidParams, "filter.not.or"), "empty or"},
	"comb/empty-and-inside-and": {"§8", fail(rcp.CodeInvalidParams, "filter.and[1].and"), "empty and"},
	// Python/Node disagreements: the side taken.
	"field/proto-constructor":                {"§8", fail(rcp.CodeInvalidParams, "filter.constructor"), "Python: unadvertised field"},
	"field/proto-__proto__":                  {"§8", fail(rcp.CodeInvalidParams, "filter.__proto__"), "Python: unadvertised field"},
	"field/proto-hasOwnProperty-list-fields": {"§8", fail(rcp.CodeInvalidParams, "filter.hasOwnProperty"), "Python: unadvertised field"},
	"field/proto-toString-gt":                {"§8", fail(rcp.CodeInvalidParams, "filter.toString"), "Python: unadvertised field"},
	"field/type-empty-string": {"§8", okNorm(`{"field":"x","op":"gt","value":1}`),
		"Node (not the recommended Python): \"\" means untyped, as in rcp.FilterCap.FieldTypes"},
	"operators/op-array":  {"§8, §12.1", fail(rcp.CodeInvalidParams, "filter.op"), "Node: -32602 at .op (Python leaks TypeError)"},
	"operators/op-object": {"§8, §12.1", fail(rcp.CodeInvalidParams, "filter.op"), "Node: -32602 at .op (Python leaks TypeError)"},
	"type/large-int-beyond-2^53": {"§4.6", okNorm(`{"field":"year","op":"eq","value":9007199254740993}`),
		"Python: exact number text (UseNumber); Node rounds"},
}

func loadFilterCases(t testing.TB) []filterCase {
	// testdata/README.md: where it comes from
	return jsonltest.Load[filterCase](t, filepath.Join("testdata", "filter.jsonl"), func(line []byte, c any) error {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		return dec.Decode(c)
	})
}

func parseFields(t testing.TB, raw json.RawMessage) map[string]string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		m := make(map[string]string, len(list))
		for _, n := range list {
			m[n] = ""
		}
		return m
	}
	var obj map[string]*string
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("fields %s: %v", raw, err)
	}
	m := make(map[string]string, len(obj))
	for k, v := range obj {
		if v != nil {
			m[k] = *v
		} else {
			m[k] = ""
		}
	}
	return m
}

func fromExpect(t *testing.T, e *filterExpect) outcome {
	if e.OK {
		return outcome{ok: true, normalized: string(e.Normalized)}
	}
	if e.Code == nil {
		t.Fatalf("expectation without a code: %+v", e)
	}
	o := outcome{code: rcp.Code(*e.Code)}
	if e.Field != nil {
		o.field = *e.Field
	}
	return o
}

func jsonEqual(t *testing.T, a, b string) bool {
	dec := func(s string) any {
		d := json.NewDecoder(bytes.NewReader([]byte(s)))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("bad JSON %s: %v", s, err)
		}
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

func run(c filterCase, fields map[string]string) outcome {
	n, err := Validate(c.Filter, fields, c.Operators)
	if err != nil {
		var re *rcp.Error
		if !errors.As(err, &re) {
			return outcome{code: -1, field: err.Error()}
		}
		o := outcome{code: re.Code}
		if re.Data != nil {
			o.field, o.option = re.Data.Field, re.Data.Option
		}
		return o
	}
	if n == nil {
		return outcome{ok: true, normalized: "null"}
	}
	b, _ := json.Marshal(n)
	return outcome{ok: true, normalized: string(b)}
}

func TestFilterVectors(t *testing.T) {
	cases := loadFilterCases(t)
	if len(cases) != 207 {
		t.Fatalf("filter.jsonl has %d cases, want 207", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			div, diverges := divergences[c.Name]
			seen[c.Name] = diverges
			var want outcome
			switch {
			case diverges:
				want = div.want
				if c.SpecExpect != nil {
					// the table must agree with the vector's spec expectation
					se := fromExpect(t, c.SpecExpect)
					if se.code != want.code || (se.field != "" && se.field != want.field) {
						t.Fatalf("divergence table %+v disagrees with spec_expect %+v", want, se)
					}
				}
			case c.SpecExpect != nil:
				t.Fatalf("spec_expect line missing from the divergence table")
			case c.Expect != nil:
				want = fromExpect(t, c.Expect)
			default:
				t.Fatalf("Python/Node disagreement missing from the divergence table")
			}
			got := run(c, parseFields(t, c.Fields))
			if got.ok != want.ok {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			if got.ok {
				if !jsonEqual(t, got.normalized, want.normalized) {
					t.Fatalf("normalized %s, want %s", got.normalized, want.normalized)
				}
				// normalised output is a fixed point of the validator
				again := run(filterCase{Filter: json.RawMessage(got.normalized), Operators: c.Operators}, parseFields(t, c.Fields))
				if !again.ok || !jsonEqual(t, again.normalized, got.normalized) {
					t.Fatalf("re-validating the normalized tree gives %+v", again)
				}
				return
			}
			if got.code != want.code || got.field != want.field {
				t.Fatalf("error code %d field %q, want %d %q", got.code, got.field, want.code, want.field)
			}
			if want.option != "" && got.option != want.option {
				t.Fatalf("error option %q, want %q", got.option, want.option)
			}
		})
	}
	for name := range divergences {
		if _, ok := seen[name]; !ok {
			t.Errorf("divergence table names %q, which is not a vector", name)
		}
	}
}

// TestDivergenceTable prints the divergence list (go test -v -run DivergenceTable).
func TestDivergenceTable(t *testing.T) {
	for name, d := range divergences {
		if d.section == "" || d.reason == "" {
			t.Errorf("%s: missing section or reason", name)
		}
		t.Logf("%-40s %-10s %s", name, d.section, d.reason)
	}
}
