package rcp

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/rcpgo/rcpgo/rcp/internal/jsonrpc"
)

// TestEncodeResultFrame: the one-pass result framing produces exactly the
// bytes of marshalResult + jsonrpc.Response, including §4.6 sanitising,
// null results, raw results and HTML escaping.
func TestEncodeResultFrame(t *testing.T) {
	var nilResult *RetrieveResult
	values := []any{
		nil,
		nilResult,
		json.RawMessage(` { "a" : [1, 2] } `),
		json.RawMessage(`null`),
		map[string]any{"b": 1, "a": "<&>", "c": []float64{1.5, 2}},
		&RetrieveResult{Hits: []Hit{{ID: StringID("x"), Score: math.Inf(1), Confidence: ptr(math.NaN()),
			Scores: map[string]float64{"a": math.Inf(-1), "b": 1}, Meta: map[string]any{"m": math.NaN()}}}},
		&RetrieveResult{Hits: []Hit{{ID: StringID("d1"), Score: 0.5, Text: ptr("a <b> & \u2028"), Unit: UnitChunk,
			Scores: map[string]float64{"dense": 0.25, "sparse": 1}, Citation: &Citation{Source: "d1"}}}, IndexVersion: "v"},
		struct{}{},
		"str",
		42,
	}
	for _, id := range []json.RawMessage{json.RawMessage(`7`), json.RawMessage(`"a\u0062"`), nil} {
		for _, v := range values {
			b, err := marshalResult(v)
			if err != nil {
				t.Fatal(err)
			}
			want := jsonrpc.Response(id, b)
			got, err := encodeResultFrame(id, v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%T:\n got %s\nwant %s", v, got, want)
			}
		}
	}
	if _, err := encodeResultFrame(json.RawMessage(`1`), json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid raw result accepted")
	}
	if _, err := encodeResultFrame(json.RawMessage(`1`), make(chan int)); err == nil {
		t.Fatal("unencodable result accepted")
	}
}

// BenchmarkEncodeResult compares one-pass result framing with the previous
// marshalResult + jsonrpc.Response.
func BenchmarkEncodeResult(b *testing.B) {
	res := &RetrieveResult{IndexVersion: "v1", Hits: []Hit{
		{ID: StringID("d1"), Score: 0.0327, Text: ptr("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France."),
			Modality: ModalityText, Unit: UnitChunk, Meta: map[string]any{"title": "Eiffel Tower"}, Scores: map[string]float64{"dense": 0.73, "sparse": 1},
			Citation: &Citation{Source: "d1", URI: "https://en.wikipedia.org/wiki/Eiffel_Tower", Title: "Eiffel Tower"}, Trust: &Trust{Level: TrustCommunity}},
	}, Usage: &Usage{Candidates: ptr(8)}}
	id := json.RawMessage(`12345`)
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := encodeResultFrame(id, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal+envelope", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			r, err := marshalResult(res)
			if err != nil {
				b.Fatal(err)
			}
			_ = jsonrpc.Response(id, r)
		}
	})
}

func TestUnquote(t *testing.T) {
	for _, lit := range []string{`"abc"`, `""`, `"a\"b"`, `"\u00e9\n"`, "\"caf\u00e9\"", "\"\xff\"", `"a`, `"`, `5`, "\"a\tb\"", `"a"b"`} {
		var want, got string
		werr := json.Unmarshal([]byte(lit), &want)
		gerr := unquote([]byte(lit), &got)
		if (werr == nil) != (gerr == nil) || got != want {
			t.Errorf("%q: unquote %q %v, encoding/json %q %v", lit, got, gerr, want, werr)
		}
	}
}
