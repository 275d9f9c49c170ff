package vector

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/internal/jsonltest"
)

type vecExpect struct {
	OK          bool            `json:"ok"`
	Code        *int            `json:"code"`
	Vectors     json.RawMessage `json:"vectors"`
	Encoding    *string         `json:"encoding"`
	Dimension   *int            `json:"dimension"`
	BytesHex    []string        `json:"bytes_hex"`
	Decoded     [][]*float64    `json:"decoded"`
	DecodedBits [][]string      `json:"decoded_bits"`
}

type vecCase struct {
	Name         string          `json:"name"`
	Op           string          `json:"op"`
	Encoding     *string         `json:"encoding"`
	Input        [][]any         `json:"input"`
	Payload      json.RawMessage `json:"payload"`
	Dimension    *int            `json:"dimension"`
	Expect       *vecExpect      `json:"expect"`
	ExpectPython *vecExpect      `json:"expect_python"`
	ExpectNode   *vecExpect      `json:"expect_node"`
	Recommended  string          `json:"recommended"`
}

// expectation picks the line's expectation: the agreed one, else the
// recommended reference (every vectors.jsonl disagreement recommends Python,
// which is also what §7.3.1 / RFC 4648 §4 require).
func (c *vecCase) expectation(t *testing.T) *vecExpect {
	switch {
	case c.Expect != nil:
		return c.Expect
	case c.Recommended == "python":
		return c.ExpectPython
	case c.Recommended == "node":
		return c.ExpectNode
	}
	t.Fatalf("%s: no expectation", c.Name)
	return nil
}

// vectorChoices lists the Python/Node disagreements of vectors.jsonl; every
// one follows Python (strict RFC 4648 §4 decoding, overflow is an error).
var vectorChoices = map[string]string{
	"encode/overflow-beyond-f32":             "§4.6: no silent +Inf",
	"encode/overflow-1e39":                   "§4.6: no silent +Inf",
	"decode/bad-base64-char-skipped-by-node": "§7.3.1 / RFC 4648 §4: invalid character",
	"decode/missing-padding":                 "§7.3.1: with padding",
	"decode/short-padding":                   "§7.3.1: with padding",
	"decode/url-safe-alphabet":               "§7.3.1: RFC 4648 §4 standard alphabet",
	"decode/embedded-space":                  "§7.3.1: no whitespace",
	"decode/trailing-newline":                "§7.3.1: no line breaks",
	"decode/data-after-padding":              "§7.3.1: padding ends the blob",
	"decode/data-after-padding-no-dimension": "§7.3.1: padding ends the blob",
	"decode/only-padding":                    "§7.3.1: invalid base64",
	"decode/single-char":                     "§7.3.1: invalid base64",
	"decode/non-ascii":                       "§7.3.1: invalid base64",
}

func TestVectorChoicesCoverDisagreements(t *testing.T) {
	n := 0
	for _, c := range loadVectorCases(t) {
		if c.Expect != nil {
			continue
		}
		n++
		why, ok := vectorChoices[c.Name]
		if !ok || c.Recommended != "python" {
			t.Errorf("%s: recorded %v, recommended %q", c.Name, ok, c.Recommended)
		}
		t.Logf("%-40s python  %s", c.Name, why)
	}
	if n != len(vectorChoices) {
		t.Errorf("%d disagreements, %d recorded", n, len(vectorChoices))
	}
}

func loadVectorCases(t *testing.T) []vecCase {
	// testdata/README.md: where it comes from
	return jsonltest.Load[vecCase](t, filepath.Join("testdata", "vectors.jsonl"), json.Unmarshal)
}

func inputFloats(t *testing.T, row []any) []float64 {
	out := make([]float64, len(row))
	for i, x := range row {
		switch x := x.(type) {
		case float64:
			out[i] = x
		case string:
			switch x {
			case "NaN":
				out[i] = math.NaN()
			case "Infinity":
				out[i] = math.Inf(1)
			case "-Infinity":
				out[i] = math.Inf(-1)
			default:
				t.Fatalf("bad special %q", x)
			}
		default:
			t.Fatalf("bad input %T", x)
		}
	}
	return out
}

func bitsHex(f float32) string { return fmt.Sprintf("%08x", math.Float32bits(f)) }

func checkDecoded(t *testing.T, got [][]float32, want *vecExpect) {
	t.Helper()
	if len(got) != len(want.Decoded) {
		t.Fatalf("decoded %d vectors, want %d", len(got), len(want.Decoded))
	}
	for i := range got {
		if len(got[i]) != len(want.Decoded[i]) {
			t.Fatalf("vector %d: %d values, want %d", i, len(got[i]), len(want.Decoded[i]))
		}
		for j, g := range got[i] {
			if want.DecodedBits != nil {
				if b := bitsHex(g); b != want.DecodedBits[i][j] {
					t.Fatalf("vector %d[%d]: bits %s, want %s", i, j, b, want.DecodedBits[i][j])
				}
			}
			w := want.Decoded[i][j]
			if w == nil {
				if !math.IsNaN(float64(g)) && !math.IsInf(float64(g), 0) {
					t.Fatalf("vector %d[%d] = %v, want non-finite", i, j, g)
				}
				continue
			}
			if float64(g) != *w || math.Signbit(float64(g)) != math.Signbit(*w) {
				t.Fatalf("vector %d[%d] = %v, want %v", i, j, g, *w)
			}
		}
	}
}

func TestVectorsJSONL(t *testing.T) {
	cases := loadVectorCases(t)
	if len(cases) != 59 {
		t.Fatalf("vectors.jsonl has %d cases, want 59", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want := c.expectation(t)
			enc := ""
			if c.Encoding != nil {
				enc = *c.Encoding
			}
			switch c.Op {
			case "encode":
				runEncode(t, c, enc, want)
			case "decode":
				runDecode(t, c, enc, want)
			default:
				t.Fatalf("unknown op %q", c.Op)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want *vecExpect) {
	t.Helper()
	if err == nil {
		t.Fatalf("succeeded, want error code %v", want.Code)
	}
	var re *rcp.Error
	isRCP := errors.As(err, &re)
	if want.Code == nil {
		if isRCP {
			t.Fatalf("got wire error %v, want a local error", err)
		}
		return
	}
	if !isRCP || int(re.Code) != *want.Code {
		t.Fatalf("error %v, want code %d", err, *want.Code)
	}
}

func runEncode(t *testing.T, c vecCase, enc string, want *vecExpect) {
	vecs := make([][]float32, len(c.Input))
	var err error
	for i, row := range c.Input {
		if vecs[i], err = FromFloat64(inputFloats(t, row)); err != nil {
			break
		}
	}
	var e Encoded
	if err == nil {
		e, err = Encode(vecs, enc)
	}
	if !want.OK {
		checkErr(t, err, want)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// encoding / dimension fields (null = absent)
	if want.Encoding == nil {
		if e.Encoding != "" || e.Dimension != 0 {
			t.Fatalf("encoding %q dimension %d, want both absent", e.Encoding, e.Dimension)
		}
	} else if e.Encoding != *want.Encoding || e.Dimension != *want.Dimension {
		t.Fatalf("encoding %q dimension %d, want %q %d", e.Encoding, e.Dimension, *want.Encoding, *want.Dimension)
	}
	if enc == rcp.EncodingJSON {
		var got, exp [][]float64
		if err := json.Unmarshal(e.Vectors, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want.Vectors, &exp); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("json vectors %v, want %v", got, exp)
		}
		return
	}
	var got, exp []string
	if err := json.Unmarshal(e.Vectors, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want.Vectors, &exp); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(exp) {
		t.Fatalf("%d blobs, want %d", len(got), len(exp))
	}
	for i := range got {
		if got[i] != exp[i] {
			t.Fatalf("blob %d = %q, want %q", i, got[i], exp[i])
		}
		b, _ := base64.StdEncoding.DecodeString(got[i])
		if h := hex.EncodeToString(b); h != want.BytesHex[i] {
			t.Fatalf("bytes %s, want %s", h, want.BytesHex[i])
		}
		if s := EncodeToString(vecs[i]); s != got[i] {
			t.Fatalf("EncodeToString differs from Encode")
		}
	}
	// round trip through the decoder and the result helpers
	dec, err := Decode(e.Vectors, e.Encoding, e.Dimension)
	if err != nil {
		t.Fatal(err)
	}
	checkDecoded(t, dec, want)
	var r rcp.EmbedResult
	e.Apply(&r)
	dec2, err := DecodeResult(&r)
	if err != nil {
		t.Fatal(err)
	}
	checkDecoded(t, dec2, want)
}

func runDecode(t *testing.T, c vecCase, enc string, want *vecExpect) {
	dim := -1
	if c.Dimension != nil {
		dim = *c.Dimension
	}
	got, err := Decode(c.Payload, enc, dim)
	if !want.OK {
		checkErr(t, err, want)
		// the single-blob APIs agree with the batch decoder
		if enc == rcp.EncodingF32Base64 {
			var blobs []any
			_ = json.Unmarshal(c.Payload, &blobs)
			failed := false
			for _, b := range blobs {
				s, ok := b.(string)
				if !ok {
					failed = true
					break
				}
				if _, err := DecodeString(s, dim); err != nil {
					if rcp.CodeOf(err) != rcp.CodeInvalidParams {
						t.Fatalf("DecodeString error %v, want -32602", err)
					}
					failed = true
				}
			}
			if !failed {
				t.Fatalf("DecodeString accepted every blob of a rejected payload")
			}
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	checkDecoded(t, got, want)
	if enc == rcp.EncodingF32Base64 {
		var blobs []string
		if err := json.Unmarshal(c.Payload, &blobs); err != nil {
			t.Fatal(err)
		}
		for i, s := range blobs {
			buf := make([]float32, len(got[i]))
			if err := DecodeInto(buf, s); err != nil {
				t.Fatal(err)
			}
			for j := range buf {
				if math.Float32bits(buf[j]) != math.Float32bits(got[i][j]) {
					t.Fatalf("DecodeInto differs at %d", j)
				}
			}
		}
	}
}

func TestEncodeJSONRejectsNonFinite(t *testing.T) {
	for _, f := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		if _, err := Encode([][]float32{{1, f}}, rcp.EncodingJSON); !errors.Is(err, ErrNonFinite) {
			t.Errorf("Encode json %v: err %v, want ErrNonFinite", f, err)
		}
		if _, err := AppendJSON(nil, []float32{f}); !errors.Is(err, ErrNonFinite) {
			t.Errorf("AppendJSON %v: err %v", f, err)
		}
	}
}

func TestAppendJSONFormatting(t *testing.T) {
	for _, tc := range []struct {
		in   []float32
		want string
	}{
		{nil, "[]"},
		{[]float32{0.1, 2, -3.5}, "[0.1,2,-3.5]"},
		{[]float32{1e-7, 1e21, float32(math.Copysign(0, -1))}, "[1e-7,1e+21,-0]"},
	} {
		got, err := AppendJSON(nil, tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("AppendJSON(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
		want, _ := json.Marshal(tc.in)
		if tc.in != nil && string(got) != string(want) {
			t.Errorf("AppendJSON(%v) = %s; encoding/json gives %s", tc.in, got, want)
		}
	}
}

func TestStrictDecodeExtra(t *testing.T) {
	one := EncodeToString([]float32{1, 2, 3, 4, 5})
	bad := []string{
		one[:len(one)-1],         // short
		one + "\r\n",             // CRLF (base64 would skip it)
		one[:4] + "\n" + one[4:], // embedded LF
		"AAAA\rAAA",              // CR inside
		"AA=A",                   // data after padding in quantum
		"AACAPw==\x00",           // NUL
		"AACAPw-_",               // url-safe
	}
	for _, s := range bad {
		if _, err := DecodeString(s, -1); rcp.CodeOf(err) != rcp.CodeInvalidParams {
			t.Errorf("DecodeString(%q) err %v, want -32602", s, err)
		}
	}
	// long blobs cross the chunk boundary in both directions
	for _, n := range []int{chunkFloats - 1, chunkFloats, chunkFloats + 1, 3*chunkFloats + 7} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i)*0.5 - 7
		}
		s := EncodeToString(v)
		if s != base64Std(v) {
			t.Fatalf("n=%d: chunked encoder differs from encoding/base64", n)
		}
		got, err := DecodeString(s, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if got[i] != v[i] {
				t.Fatalf("n=%d: value %d", n, i)
			}
		}
		// padding inside a non-final chunk is rejected
		if n > chunkFloats {
			tampered := []byte(s)
			tampered[chunkChars-1] = '='
			if _, err := DecodeString(string(tampered), -1); err == nil {
				t.Fatalf("n=%d: padding inside the blob accepted", n)
			}
		}
	}
}

func base64Std(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		u := math.Float32bits(f)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestDecodeResultRagged(t *testing.T) {
	r := rcp.EmbedResult{Vectors: json.RawMessage(`["AACAPw==","AACAPwAAgD8="]`), Encoding: rcp.EncodingF32Base64}
	if _, err := DecodeResult(&r); rcp.CodeOf(err) != rcp.CodeInvalidParams {
		t.Fatalf("ragged f32 batch: %v", err)
	}
	r.Dimension = 1
	_, err := DecodeResult(&r)
	var re *rcp.Error
	if !errors.As(err, &re) || re.Data.Field != "vectors[1]" {
		t.Fatalf("dimension mismatch: %v", err)
	}
}

func TestAppendEncodeNoAlloc(t *testing.T) {
	v := make([]float32, 1024)
	dst := make([]byte, 0, EncodedLen(len(v)))
	buf := make([]float32, len(v))
	s := EncodeToString(v)
	if n := testing.AllocsPerRun(10, func() { dst = AppendEncode(dst[:0], v) }); n != 0 {
		t.Errorf("AppendEncode allocates %v times", n)
	}
	if n := testing.AllocsPerRun(10, func() { _ = DecodeInto(buf, s) }); n != 0 {
		t.Errorf("DecodeInto allocates %v times", n)
	}
}
