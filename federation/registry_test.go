package federation

import (
	"errors"
	"testing"
)

func TestLoadRegistryReferenceShape(t *testing.T) {
	reg, err := LoadRegistry("testdata/reference-shape.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Engines) != 3 {
		t.Fatalf("engines = %d, want 3", len(reg.Engines))
	}
	web, ok := reg.Engine("web")
	if !ok || web.EffectiveTransport() != TransportHTTP || web.EffectiveWeight() != 1.5 || web.Priority != 5 {
		t.Fatalf("web = %+v", web)
	}
	code, _ := reg.Engine("code")
	if code.EffectiveTransport() != TransportStdio || code.EffectiveWeight() != 2 || code.Required {
		t.Fatalf("code = %+v", code)
	}
}

func TestParseRegistryErrors(t *testing.T) {
	t.Setenv("RCPGO_TEST_TOKEN", "s3cret")
	tests := []struct {
		name, doc, path string
	}{
		{"not json", `{`, ""},
		{"no engines", `{}`, "engines"},
		{"engines not array", `{"engines": {}}`, "engines"},
		{"missing id", `{"engines":[{"command":["x"]}]}`, "engines[0].id"},
		{"bad id", `{"engines":[{"id":"a b","command":["x"]}]}`, "engines[0].id"},
		{"duplicate id", `{"engines":[{"id":"a","command":["x"]},{"id":"a","command":["y"]}]}`, "engines[1].id"},
		{"stdio without command", `{"engines":[{"id":"a","transport":"stdio"}]}`, "engines[0].command"},
		{"stdio with url", `{"engines":[{"id":"a","transport":"stdio","command":["x"],"url":"http://h/rcp"}]}`, "engines[0].url"},
		{"http without url", `{"engines":[{"id":"a","transport":"http"}]}`, "engines[0].url"},
		{"http bad scheme", `{"engines":[{"id":"a","transport":"http","url":"ftp://h/rcp"}]}`, "engines[0].url"},
		{"unknown transport", `{"engines":[{"id":"a","transport":"ws","url":"http://h"}]}`, "engines[0].transport"},
		{"negative weight", `{"engines":[{"id":"a","command":["x"],"weight":-1}]}`, "engines[0].weight"},
		{"weight string", `{"engines":[{"id":"a","command":["x"],"weight":"2"}]}`, "engines.weight"},
		{"missing env", `{"engines":[{"id":"a","url":"http://h/rcp","headers":{"Authorization":"Bearer ${RCPGO_TEST_UNSET_VAR}"}}]}`, "engines[0].headers.Authorization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRegistry([]byte(tt.doc))
			var re *RegistryError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *RegistryError", err)
			}
			if re.Path != tt.path {
				t.Fatalf("path = %q, want %q (%v)", re.Path, tt.path, err)
			}
		})
	}
	if _, err := ParseRegistry([]byte(`{"engines":[{"id":"a","url":"http://h/rcp","headers":{"Authorization":"Bearer ${RCPGO_TEST_TOKEN}"}}]}`)); err != nil {
		t.Fatalf("set env var: %v", err)
	}
}
