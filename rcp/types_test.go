package rcp

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp/internal/wiretest"
)

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestCapabilitiesRoundTripIsLossless(t *testing.T) {
	golden, err := os.ReadFile("testdata/capabilities.json")
	if err != nil {
		t.Fatal(err)
	}
	var c Capabilities
	if err := json.Unmarshal(golden, &c); err != nil {
		t.Fatal(err)
	}
	if c.Embed.Dimension != 384 || !c.Retrieve.MMR || c.Filter.FieldTypes()["year"] != "number" || !c.Has("x-acme") || !c.Has("futureKey") || c.Has("x-nope") {
		t.Fatalf("typed view: %+v", c)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	// unknown and x-vendor keys survive exactly; typed keys keep their values
	// (unknown fields inside a known capability are informational, §6)
	for _, key := range []string{"x-acme", "x-acme-beta", "futureKey"} {
		var a, b map[string]json.RawMessage
		_ = json.Unmarshal(golden, &a)
		_ = json.Unmarshal(out, &b)
		if !bytes.Equal(a[key], b[key]) {
			t.Errorf("%s: %s became %s", key, a[key], b[key])
		}
	}
	var again Capabilities
	if err := json.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	out2, _ := json.Marshal(again)
	if !bytes.Equal(out, out2) {
		t.Fatalf("not stable:\n%s\n%s", out, out2)
	}
	wiretest.Value(t, "Capabilities", out)
}

func TestCapabilitiesFalseAndNullAreAbsent(t *testing.T) {
	var c Capabilities
	if err := json.Unmarshal([]byte(`{"citations":true,"streaming":false,"rerank":null,"x-v":false}`), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Has(CapCitations) || c.Has(CapStreaming) || c.Has(CapRerank) || c.Has("x-v") {
		t.Fatalf("%+v", c)
	}
}

func TestErrorDataRoundTrip(t *testing.T) {
	in := `{"code":-32011,"message":"slow down","data":{"retryable":true,"retryAfterMs":250,"field":"k","option":"mode","detail":"d","x-acme-shard":3}}`
	var e Error
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	if !e.Retryable() || *e.Data.RetryAfterMs != 250 || string(e.Data.Extra["x-acme-shard"]) != "3" {
		t.Fatalf("%+v", e.Data)
	}
	out, _ := json.Marshal(&e)
	if !jsonEqual(t, []byte(in), out) {
		t.Fatalf("%s", out)
	}
	wiretest.Value(t, "ErrorData", mustJSON(t, e.Data))
	f := false
	e.Data.Retryable = &f
	if e.Retryable() {
		t.Fatal("explicit retryable:false ignored")
	}
	if CodeOf(NewError(CodeConflict, "x")) != CodeConflict || CodeOf(os.ErrNotExist) != CodeInternalError {
		t.Fatal("CodeOf")
	}
	if Code(-32099).String() != "Code(-32099)" || CodeTimeout.String() != "Timeout" {
		t.Fatal("String")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHitWithEveryOptionalFieldValidates(t *testing.T) {
	h := Hit{ID: IntID(7), Score: 0.9, Confidence: ptr(0.8), Text: ptr("t"),
		Content:  []Content{{Type: ContentImage, MimeType: "image/png", URI: "https://x/p.png"}},
		Modality: ModalityMultimodal, Unit: UnitChunk, Level: ptr(0), Meta: map[string]any{"lang": "en"},
		Vector: json.RawMessage(`[0.1,0.2]`), Scores: map[string]float64{"dense": 0.7, "rerank": 0.9},
		Citation:   &Citation{Source: "s", URI: "u", Title: "t", Start: ptr(0), End: ptr(10), Page: ptr(3)},
		Provenance: &Provenance{Path: []string{"a"}, Nodes: []string{"n"}, Edges: []Edge{{Src: "a", Dst: "b", Weight: ptr(1.0)}}, Leaves: []string{"l"}},
		Trust:      &Trust{Level: TrustUntrusted, Score: ptr(0.1), InjectionSuspected: ptr(true), Sanitized: ptr(false)},
		Chunk:      &ChunkRef{DocID: "doc", Index: 2, Context: "ctx"}}
	b := mustJSON(t, h)
	wiretest.Value(t, "Hit", b)
	var back Hit
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, b, mustJSON(t, back)) {
		t.Fatal("hit round trip")
	}
	// §4.6: non-finite numbers are never emitted; the handler's data is
	// not modified
	bad := &RetrieveResult{Hits: []Hit{{ID: StringID("x"), Score: math.Inf(1), Confidence: ptr(math.NaN()),
		Scores: map[string]float64{"a": math.Inf(-1), "b": 1}, Meta: map[string]any{"m": math.NaN()}}}}
	b, err := marshalResult(bad)
	if err != nil {
		t.Fatal(err)
	}
	wiretest.Result(t, MethodRetrieve, b)
	if strings.Contains(string(b), "confidence") || !strings.Contains(string(b), `"a":-1.7976931348623157e+308`) ||
		!strings.Contains(string(b), `"score":1.7976931348623157e+308`) || !strings.Contains(string(b), `"b":1`) {
		t.Fatalf("%s", b)
	}
	if !math.IsInf(bad.Hits[0].Score, 1) || !math.IsNaN(*bad.Hits[0].Confidence) || !math.IsInf(bad.Hits[0].Scores["a"], -1) {
		t.Fatal("sanitising wrote through to the handler's result")
	}
}

func TestContentAndQuery(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
		out   string
	}{
		{`"plain"`, true, `"plain"`},
		{`{"type":"text","text":"t"}`, true, `{"type":"text","text":"t"}`},
		{`{"type":"image","mimeType":"image/png","data":"AAAA"}`, true, ""},
		{`{"type":"image","mimeType":"image/png","uri":"https://x"}`, true, ""},
		{`{"type":"image","mimeType":"image/png","data":"AAAA","uri":"https://x"}`, false, ""},
		{`{"type":"image","data":"AAAA"}`, false, ""},
		{`{"type":"blob","mimeType":"audio/wav"}`, false, ""},
		{`{"type":"video","mimeType":"video/mp4","uri":"u"}`, false, ""},
	}
	for _, tc := range tests {
		var c Content
		if err := json.Unmarshal([]byte(tc.in), &c); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if err := c.Validate(); (err == nil) != tc.valid {
			t.Errorf("%s: valid=%v err=%v", tc.in, tc.valid, err)
		}
		if tc.out != "" && string(mustJSON(t, c)) != tc.out {
			t.Errorf("%s re-encoded as %s", tc.in, mustJSON(t, c))
		}
	}
	for _, q := range []string{`"q"`, `{"type":"text","text":"q"}`, `[{"type":"text","text":"q"},{"type":"image","mimeType":"image/png","uri":"u"}]`} {
		var qq Query
		if err := json.Unmarshal([]byte(q), &qq); err != nil {
			t.Fatal(err)
		}
		if string(mustJSON(t, qq)) != q {
			t.Errorf("query %s re-encoded as %s", q, mustJSON(t, qq))
		}
		wiretest.Value(t, "QueryInput", []byte(q))
	}
}

func TestDecodeParamsDataRules(t *testing.T) {
	tests := []struct {
		in    string
		field string // "" when valid
	}{
		{`{"query":"q","k":3}`, ""},
		{`{"query":"q","k":9007199254740991}`, ""},
		{`{"query":"q","k":-9007199254740991}`, ""},
		{`{"query":"q","k":9007199254740992}`, "k"},
		{`{"query":"q","k":-9007199254740992}`, "k"},
		{`{"query":"q","k":"3"}`, "k"},
		{`{"query":"q","k":3.5}`, "k"},
		{`{"query":"q","k":1,"seed":18014398509481984}`, "seed"},
		{`{"query":"q","k":1,"candidateK":1e30}`, "candidateK"},
		{`{"query":"q","k":1,"includeText":"true"}`, "includeText"},
		{`{"query":"q","k":1,"includeText":1}`, "includeText"},
		{`{"query":"q","k":1,"strict":"false"}`, "strict"},
		{`{"query":"q","k":1,"fusion":{"rrfK":"60"}}`, "fusion.rrfK"},
		{`{"query":"q","k":1,"mode":null,"fusion":null,"rerank":null,"query2":null}`, ""},
		{`{"query":null,"k":1}`, ""},
		{`{"query":"q","k":1,"unknown":{"deep":[1,2,3]},"x-acme":true}`, ""},
		{`[1]`, "params"},
	}
	for _, tc := range tests {
		var p RetrieveParams
		err := DecodeParams(json.RawMessage(tc.in), &p)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			}
			continue
		}
		var e *Error
		if !asErr(err, &e) || e.Code != CodeInvalidParams || e.Data == nil || e.Data.Field != tc.field {
			t.Errorf("%s: %v, want -32602 field %s", tc.in, err, tc.field)
		}
	}
	var e EmbedParams
	if err := DecodeParams(nil, &e); err != nil {
		t.Fatal("absent params must decode as {}")
	}
	var ix IndexAddParams
	err := DecodeParams(json.RawMessage(`{"documents":[{"id":"a","text":"t"},{"text":5}]}`), &ix)
	if e, ok := AsError(err); !ok || e.Data.Field != "documents.text" {
		t.Errorf("nested field: %v", err)
	}
}

func asErr(err error, e **Error) bool {
	x, ok := AsError(err)
	*e = x
	return ok && err != nil
}

func TestIDs(t *testing.T) {
	for _, in := range []string{`"a"`, `7`, `12345678901234567890`, `1.0`} {
		var id ID
		if err := json.Unmarshal([]byte(in), &id); err != nil {
			t.Fatal(err)
		}
		if string(mustJSON(t, id)) != in {
			t.Errorf("%s re-encoded as %s", in, mustJSON(t, id))
		}
	}
	var a, b ID
	_ = json.Unmarshal([]byte(`"a\u0062"`), &a)
	_ = json.Unmarshal([]byte(`"ab"`), &b)
	if a != b || a.String() != "ab" {
		t.Fatal("escaped string ids differ")
	}
}

func TestMethodTable(t *testing.T) {
	for _, m := range Methods() {
		if _, ok := MethodCapability(m); !ok {
			t.Errorf("%s undefined", m)
		}
	}
	tests := []struct {
		m, cap  string
		defined bool
	}{
		{"retrieve", "retrieve", true}, {"index/delete", "index", true}, {"x-acme/foo", "x-acme", true},
		{"x-acme", "", false}, {"x-/foo", "", false}, {"x-acme/", "", false}, {"notifications/cancel", "", false}, {"", "", false},
	}
	for _, tc := range tests {
		c, ok := MethodCapability(tc.m)
		if c != tc.cap || ok != tc.defined {
			t.Errorf("%q: %q %v", tc.m, c, ok)
		}
	}
}

// Finding 8 of issue 16: an option error says what the server advertises
// and does not repeat its detail.
func TestOptionErrorSaysWhatIsAdvertised(t *testing.T) {
	c := &Client{}
	c.cur.Store(&clientConn{})
	c.Capabilities().Retrieve = &RetrieveCap{Modes: []string{ModeSparse}, Units: []string{UnitChunk, UnitDocument}}
	for _, tc := range []struct {
		p    RetrieveParams
		want string
	}{
		{RetrieveParams{Mode: "semantic"}, `rcp: OptionUnsupported (-32005): option unsupported: server did not advertise mode "semantic" (advertised: sparse) [option mode]`},
		{RetrieveParams{Unit: "page"}, `rcp: OptionUnsupported (-32005): option unsupported: server did not advertise unit "page" (advertised: chunk, document) [option unit]`},
		{RetrieveParams{Filter: []byte(`{"field":"a","op":"eq","value":1}`)}, `rcp: OptionUnsupported (-32005): option unsupported: server did not advertise filter (it declares no filterable metadata fields) [option filter]`},
	} {
		_, err := c.prepareRetrieve(&tc.p)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
	}
}
