package retrieval

import (
	"reflect"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// retrieveParamsSeeds are params the fast decoder takes and neighbours it
// must leave to rcp.DecodeParams.
var retrieveParamsSeeds = []string{
	`{"query":"eiffel tower","k":3}`,
	` { "k" : 10 , "query" : "q" , "includeText" : false , "mode" : "hybrid" , "unit" : "document" , "strict" : true } `,
	`{"query":"café 日本","k":-0}`, `{"query":"","k":0}`, `{"query":"caf\u00e9","k":1}`, `{}`, `{"k":1}`, `{"query":"x"}`,
	`{"query":"x","k":1,}`, `{"query":"x","k":1}x`, `{"query":"x","k":1}}`, `{"query":"x" "k":1}`, `{,"k":1}`,
	`{"query":"x","k":1.0}`, `{"query":"x","k":1e2}`, `{"query":"x","k":01}`, `{"query":"x","k":"3"}`,
	`{"query":"x","k":99999999999999999999}`, `{"query":"x","k":-}`, `{"query":"x","k":1x}`,
	`{"query":"a\"b","k":1}`, `{"query":"a\\nb","k":1}`, "{\"query\":\"a\tb\",\"k\":1}", "{\"query\":\"\xff\",\"k\":1}",
	`{"query":"x","query":"y","k":1}`, `{"Query":"x","k":1}`, `{"QUERY":"x","K":1}`, `{"query":null,"k":1}`,
	`{"query":["x"],"k":1}`, `{"query":{"type":"text","text":"x"},"k":1}`, `{"query":"x","k":null}`,
	`{"query":"x","k":1,"includeText":null}`, `{"query":"x","k":1,"includeText":"true"}`, `{"query":"x","k":1,"strict":tru}`,
	`{"query":"x","k":1,"strict":falsey}`, `{"query":"x","k":1,"_meta":{"a":1}}`, `{"query":"x","k":1,"filter":{}}`,
	`{"query":"x","k":1,"candidateK":5}`, `null`, `[]`, ``, ` `, `{"query":"x","k":1`, `{"query":"x`, "\v{\"k\":1}",
	`{"query":"x","k":1} `, "{\"query\":\"x\",\"k\":1}\n", `{"mode":"","unit":"","k":-12}`,
}

// checkFastDecode fails t when the fast decoder accepts raw but decodes it
// otherwise than rcp.DecodeParams (or accepts what it rejects).
func checkFastDecode(t *testing.T, raw string) (fast bool) {
	t.Helper()
	var got retrieveParams
	if !decodeRetrieveFast([]byte(raw), &got) {
		if !reflect.DeepEqual(got, retrieveParams{}) {
			t.Fatalf("%q: declined but wrote %+v", raw, got)
		}
		return false
	}
	var want retrieveParams
	if err := rcp.DecodeParams([]byte(raw), &want); err != nil {
		t.Fatalf("%q: fast path accepted what DecodeParams rejects: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: fast %+v, DecodeParams %+v", raw, got, want)
	}
	return true
}

func TestDecodeRetrieveFast(t *testing.T) {
	accepted := 0
	for _, raw := range retrieveParamsSeeds {
		if checkFastDecode(t, raw) {
			accepted++
		}
	}
	for _, raw := range retrieveParamsSeeds[:4] { // the common shapes must take the fast path
		if !decodeRetrieveFast([]byte(raw), new(retrieveParams)) {
			t.Errorf("%q: declined", raw)
		}
	}
	if accepted < 8 {
		t.Fatalf("only %d seeds took the fast path", accepted)
	}
}

// FuzzDecodeRetrieveFast is TestDecodeRetrieveFast over arbitrary input.
func FuzzDecodeRetrieveFast(f *testing.F) {
	for _, raw := range retrieveParamsSeeds {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkFastDecode(t, raw) })
}
