package weaviate

import (
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp/filter"
)

var testFields = map[string]string{"lang": "keyword", "year": "int", "score": "float", "ok": "bool", "day": "date", "tags": "keyword", "title": "text"}

func TestCompileFilter(t *testing.T) {
	sc, err := newSchema(testFields)
	if err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return sc.fields[name].prop }
	for _, tc := range []struct {
		filter string
		want   []string // substrings of the compiled where-filter ("" = no restriction)
		exact  bool
	}{
		{`{"field":"lang","op":"eq","value":"en"}`, []string{"operator: ContainsAny", p("lang"), `valueText: ["en"]`}, true},
		{`{"field":"lang","op":"ne","value":"en"}`, []string{"operator: Not", "ContainsAny"}, true},
		{`{"field":"lang","op":"eq","value":null}`, []string{"operator: Not", propPresent, p("lang")}, true},
		{`{"field":"lang","op":"in","value":["en","fr"]}`, []string{`valueText: ["en","fr"]`}, true},
		{`{"field":"lang","op":"in","value":["en",null]}`, []string{"operator: Or", "operator: Not", propPresent}, true},
		{`{"field":"lang","op":"nin","value":["en"]}`, []string{"operator: Not"}, true},
		{`{"field":"year","op":"gte","value":2000}`, []string{"operator: GreaterThanEqual", p("year"), "valueNumber: 2000"}, true},
		{`{"field":"score","op":"lt","value":0.5}`, []string{"operator: LessThan", "valueNumber: 0.5"}, true},
		{`{"field":"ok","op":"eq","value":true}`, []string{"valueBoolean: [true]"}, true},
		{`{"field":"day","op":"gt","value":"2020-01-02T00:00:00Z"}`, []string{"operator: GreaterThan", "valueDate"}, true},
		{`{"field":"title","op":"contains","value":"wing"}`, []string{"operator: Like", `"*wing*"`}, true},
		{`{"field":"tags","op":"exists","value":true}`, []string{"operator: ContainsAny", propPresent, p("tags")}, true},
		{`{"field":"tags","op":"exists","value":false}`, []string{"operator: Not", propPresent}, true},
		{`{"and":[{"field":"lang","op":"eq","value":"en"},{"field":"year","op":"lt","value":1990}]}`, []string{"operator: And"}, true},
		{`{"or":[{"field":"lang","op":"eq","value":"en"},{"field":"year","op":"lt","value":1990}]}`, []string{"operator: Or"}, true},
		// Undecidable in Weaviate: a superset, re-checked by the evaluator.
		{`{"field":"title","op":"contains","value":"a*b"}`, nil, false},
		{`{"field":"lang","op":"eq","value":" en"}`, nil, false},
		// Not over a superset cannot be compiled (it would be a subset).
		{`{"not":{"field":"title","op":"contains","value":"a?b"}}`, nil, false},
		// And keeps the decidable part.
		{`{"and":[{"field":"lang","op":"eq","value":"en "},{"field":"year","op":"eq","value":1999}]}`, []string{"valueNumber: [1999]"}, false},
	} {
		n, err := filter.Validate([]byte(tc.filter), testFields, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		f := sc.compile(n)
		got := ""
		if f.Where != nil {
			got = f.Where.String()
		}
		if f.Exact != tc.exact {
			t.Errorf("%s: exact %v, want %v (%s)", tc.filter, f.Exact, tc.exact, got)
		}
		if tc.want == nil && got != "" {
			t.Errorf("%s: compiled to %s, want no restriction", tc.filter, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %s lacks %q", tc.filter, got, w)
			}
		}
	}
}

func TestPropNames(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"lang", "a.b", "a_b", "année", "with space", strings.Repeat("x", 300), "_", "0day"} {
		p := propName(name)
		if !propRE.MatchString(p) {
			t.Errorf("propName(%q) = %q: not a Weaviate property name", name, p)
		}
		if o, dup := seen[p]; dup {
			t.Errorf("propName(%q) = propName(%q) = %q", name, o, p)
		}
		seen[p] = name
	}
}

func TestOpenValidates(t *testing.T) {
	for _, cfg := range []Config{
		{URL: "127.0.0.1:8080"},
		{URL: "http://127.0.0.1:8080", Class: "lower"},
		{URL: "http://127.0.0.1:8080", WriteConsistency: "SOME"},
		{URL: "http://127.0.0.1:8080", Fields: map[string]string{"g": "geo"}},
	} {
		if b, err := Open(cfg); err == nil {
			b.Close()
			t.Errorf("Open(%+v) accepted", cfg)
		}
	}
}
