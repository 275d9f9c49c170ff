package filter

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

func TestBuilderWireForm(t *testing.T) {
	f := And(
		Eq("lang", "en"),
		Or(Gte("year", 2023), In("tag", []string{"news", "blog"})),
		Not(Exists("draft", true)),
		Contains("body", "tower"),
		Lt("price", 9.5),
		Nin("id", []any{1, "x", nil}),
		Gt("created", time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)),
		Ne("n", json.Number("9007199254740993")),
		Lte("u", uint64(math.MaxUint64)),
	)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"and":[{"field":"lang","op":"eq","value":"en"},{"or":[{"field":"year","op":"gte","value":2023},{"field":"tag","op":"in","value":["news","blog"]}]},{"not":{"field":"draft","op":"exists","value":true}},{"field":"body","op":"contains","value":"tower"},{"field":"price","op":"lt","value":9.5},{"field":"id","op":"nin","value":[1,"x",null]},{"field":"created","op":"gt","value":"2023-01-01T00:00:00Z"},{"field":"n","op":"ne","value":9007199254740993},{"field":"u","op":"lte","value":18446744073709551615}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	// the builder output validates to the same tree
	n, err := Validate(f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.String() != want {
		t.Fatalf("validated %s", n)
	}
}

func TestBuilderRejectsNonsense(t *testing.T) {
	for name, n := range map[string]*Node{
		"in scalar":       In("tag", "news"),
		"in empty":        In("tag", []string{}),
		"in nested":       In("tag", [][]string{{"a"}}),
		"in nil":          In("tag", nil),
		"in bytes":        In("tag", []byte("ab")),
		"eq slice":        Eq("tag", []string{"a"}),
		"eq map":          Eq("tag", map[string]any{}),
		"eq struct":       Eq("tag", struct{}{}),
		"gt NaN":          Gt("x", math.NaN()),
		"gt Inf":          Gt("x", math.Inf(1)),
		"bad json.Number": Eq("x", json.Number("12abc")),
		"empty field":     Eq("", 1),
		"empty and":       And(),
		"empty or":        Or(),
		"nil child":       And(Eq("a", 1), nil),
		"nil not":         Not(nil),
		"nested error":    Or(Not(And(Eq("a", 1), In("b", 2)))),
	} {
		if n.Err() == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if _, err := json.Marshal(n); err == nil {
			t.Errorf("%s: marshals", name)
		}
		if _, err := Validate(n, nil, nil); rcp.CodeOf(err) != rcp.CodeInvalidParams {
			t.Errorf("%s: Validate err %v", name, err)
		}
	}
}

func TestValidateInputs(t *testing.T) {
	fields := map[string]string{"lang": TypeKeyword, "year": TypeInt, "created": TypeDate}
	good := `{"and":[{"field":"lang","op":"eq","value":"en"},{"field":"year","op":"gte","value":2020}]}`
	var decoded any
	_ = json.Unmarshal([]byte(good), &decoded) // float64 numbers
	for name, in := range map[string]any{
		"raw":     json.RawMessage(good),
		"bytes":   []byte(good),
		"decoded": decoded,
		"builder": And(Eq("lang", "en"), Gte("year", 2020)),
	} {
		n, err := Validate(in, fields, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n.String() != good {
			t.Fatalf("%s: %s", name, n)
		}
		if n.Children[1].Type != TypeInt {
			t.Fatalf("%s: leaf type %q", name, n.Children[1].Type)
		}
	}
	for name, in := range map[string]any{
		"nil": nil, "empty raw": json.RawMessage(nil), "spaces": []byte("  "),
		"null": json.RawMessage("null"), "empty object": json.RawMessage("{}"), "nil node": (*Node)(nil),
	} {
		if n, err := Validate(in, fields, nil); n != nil || err != nil {
			t.Errorf("%s: got %v, %v; want no filter", name, n, err)
		}
	}
	for name, raw := range map[string]string{
		"invalid json": `{"field":`,
		"trailing":     `{"field":"lang","op":"eq","value":"en"} {}`,
	} {
		_, err := Validate(json.RawMessage(raw), fields, nil)
		var re *rcp.Error
		if !errors.As(err, &re) || re.Code != rcp.CodeInvalidParams || re.Data.Field != "filter" {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateTypesAndDates(t *testing.T) {
	fields := map[string]string{"created": TypeDate, "year": TypeInt, "loc": TypeGeo, "odd": "vector"}
	for _, tc := range []struct {
		filter string
		field  string // "" = ok
	}{
		{`{"field":"created","op":"gte","value":"2023-01-01T00:00:00+02:00"}`, ""},
		{`{"field":"created","op":"gte","value":"2023-01-01T00:00:00.123456Z"}`, ""},
		{`{"field":"created","op":"lt","value":1672531200000}`, ""},
		{`{"field":"created","op":"lt","value":"yesterday"}`, "filter.value"},
		{`{"field":"created","op":"lt","value":"2023-01-01"}`, "filter.value"},
		{`{"field":"created","op":"lt","value":1.5}`, "filter.value"},
		{`{"field":"created","op":"in","value":[1672531200000,"2024-01-01T00:00:00Z"]}`, ""},
		{`{"field":"year","op":"gt","value":1e999}`, "filter.value"},
		{`{"field":"loc","op":"eq","value":48.85}`, ""},
		{`{"field":"odd","op":"eq","value":true}`, ""},
		{`{"field":"odd","op":"gt","value":1}`, "filter.op"},
		{`{"field":"year","op":"exists","value":"true"}`, "filter.value"},
	} {
		_, err := Validate(json.RawMessage(tc.filter), fields, nil)
		var got string
		if err != nil {
			var re *rcp.Error
			if !errors.As(err, &re) {
				t.Fatalf("%s: %v", tc.filter, err)
			}
			got = re.Data.Field
		}
		if got != tc.field {
			t.Errorf("%s: error field %q (%v), want %q", tc.filter, got, err, tc.field)
		}
	}
}

func TestLimits(t *testing.T) {
	wide := `{"or":[` + strings.TrimSuffix(strings.Repeat(`{"field":"a","op":"eq","value":1},`, 1100), ",") + `]}`
	_, err := Validate(json.RawMessage(wide), nil, nil)
	var re *rcp.Error
	if !errors.As(err, &re) || re.Code != rcp.CodeInvalidParams || re.Data.Field != "filter.or[1023]" {
		t.Fatalf("node limit: %v", err)
	}
	v := Validator{MaxNodes: 5000}
	if _, err := v.Validate(json.RawMessage(wide)); err != nil {
		t.Fatalf("raised node limit: %v", err)
	}
	deep := strings.Repeat(`{"not":`, 5) + `{"field":"a","op":"exists"}` + strings.Repeat(`}`, 5)
	v = Validator{MaxDepth: 4}
	if _, err := v.Validate(json.RawMessage(deep)); rcp.CodeOf(err) != rcp.CodeInvalidParams {
		t.Fatalf("depth limit: %v", err)
	}
	v = Validator{MaxDepth: 5}
	if _, err := v.Validate(json.RawMessage(deep)); err != nil {
		t.Fatalf("depth 5: %v", err)
	}
}

func TestOptionUnsupportedShape(t *testing.T) {
	_, err := Validate(json.RawMessage(`{"not":{"field":"a","op":"contains","value":"x"}}`), nil, []string{"eq"})
	var re *rcp.Error
	if !errors.As(err, &re) || re.Code != rcp.CodeOptionUnsupported || re.Data.Option != "contains" || re.Data.Field != "filter.not.op" {
		t.Fatalf("got %v", err)
	}
	if !IsFilterError(err) || IsFilterError(errors.New("x")) {
		t.Fatal("IsFilterError")
	}
}

func TestMatch(t *testing.T) {
	doc := map[string]any{
		"lang":    "en",
		"year":    2023,
		"price":   json.Number("9.5"),
		"tags":    []any{"news", "blog"},
		"ids":     []int{1, 2, 3},
		"body":    "the eiffel tower",
		"created": "2023-06-01T12:00:00+02:00",
		"when":    time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		"ms":      1672531200000.0,
		"nested":  map[string]any{"lang": "fr"},
		"gone":    nil,
		"flag":    false,
		"big":     json.Number("9007199254740993"),
	}
	types := map[string]string{"created": TypeDate, "when": TypeDate, "ms": TypeDate}
	cases := []struct {
		f    *Node
		want bool
	}{
		{Eq("lang", "en"), true},
		{Eq("lang", "EN"), false}, // case-sensitive (§8)
		{Ne("lang", "fr"), true},
		{Eq("year", 2023.0), true},
		{Eq("year", "2023"), false}, // different JSON types never match
		{Gt("price", 9), true},
		{Lte("price", json.Number("9.50")), true},
		{Eq("big", json.Number("9007199254740992")), false}, // exact beyond 2^53
		{Gt("big", int64(9007199254740992)), true},
		{Eq("tags", "blog"), true}, // any element
		{Ne("tags", "blog"), false},
		{In("tags", []string{"x", "news"}), true},
		{Nin("tags", []string{"x", "news"}), false},
		{Contains("tags", "news"), true},
		{Contains("tags", "new"), false}, // membership, not substring, on arrays
		{Contains("body", "eiffel"), true},
		{Contains("body", "Eiffel"), false},
		{Gt("ids", 2), true},
		{Lt("ids", 1), false},
		{Exists("lang", true), true},
		{Exists("missing", false), true},
		{Exists("gone", false), true}, // null is absent (§4.6)
		{Eq("gone", nil), true},
		{Ne("gone", nil), false},
		{Eq("missing", "x"), false},
		{Ne("missing", "x"), true},
		{Gt("missing", 1), false},
		{In("missing", []any{"a"}), false},
		{In("missing", []any{"a", nil}), true},
		{Nin("missing", []any{"a"}), true},
		{Contains("missing", "a"), false},
		{Eq("nested.lang", "fr"), true},
		{Eq("flag", false), true},
		{Gt("flag", false), false}, // false is not greater than false
		{Gt("lang", "de"), true},   // untyped: byte order
		{Eq("created", "2023-06-01T10:00:00Z"), true},
		{Gt("created", int64(1672531200000)), true},
		{Eq("ms", "2023-01-01T00:00:00Z"), true}, // epoch-ms vs RFC 3339
		{Lt("when", "2024-01-01T00:00:01Z"), true},
		{Eq("when", 1704067200000), true},
		{And(Eq("lang", "en"), Not(Eq("year", 2022))), true},
		{Or(Eq("lang", "fr"), Eq("year", 2022)), false},
	}
	for _, tc := range cases {
		raw, err := json.Marshal(tc.f)
		if err != nil {
			t.Fatalf("%v: %v", tc.f, err)
		}
		fields := map[string]string{}
		for k, v := range types {
			fields[k] = v
		}
		var probe map[string]any
		_ = json.Unmarshal(raw, &probe)
		collect(probe, fields)
		n, err := Validate(json.RawMessage(raw), fields, nil)
		if err != nil {
			// gt on an untyped bool is legal on the wire; validate without types
			n, err = Validate(json.RawMessage(raw), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
		}
		if got := n.Match(doc); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", raw, got, tc.want)
		}
	}
	var none *Node
	if !none.Match(doc) {
		t.Error("nil filter must match")
	}
}

// collect adds every leaf field of a decoded tree to fields as untyped.
func collect(x any, fields map[string]string) {
	switch x := x.(type) {
	case map[string]any:
		if f, ok := x["field"].(string); ok {
			if _, ok := fields[f]; !ok {
				fields[f] = ""
			}
		}
		for _, v := range x {
			collect(v, fields)
		}
	case []any:
		for _, v := range x {
			collect(v, fields)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	n, err := Validate(json.RawMessage(`{"field":"a","op":"in","value":["s",1.25,true,null,12345678901234567890]}`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	el := n.Value.Elems()
	if s, ok := el[0].Str(); !ok || s != "s" {
		t.Error("Str")
	}
	if f, ok := el[1].Float64(); !ok || f != 1.25 {
		t.Error("Float64")
	}
	if _, ok := el[1].Int64(); ok {
		t.Error("Int64 of 1.25")
	}
	if b, ok := el[2].Bool(); !ok || !b {
		t.Error("Bool")
	}
	if !el[3].IsNull() || el[3].Kind() != Null {
		t.Error("Null")
	}
	if num, ok := el[4].Number(); !ok || num != "12345678901234567890" {
		t.Error("Number text")
	}
	if _, ok := el[4].Int64(); ok {
		t.Error("Int64 overflow")
	}
	got, _ := json.Marshal(n.Value.Interface())
	if string(got) != `["s",1.25,true,null,12345678901234567890]` {
		t.Errorf("Interface: %s", got)
	}
	if n.Count() != 1 {
		t.Error("Count")
	}
}
