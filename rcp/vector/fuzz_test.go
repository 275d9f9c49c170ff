package vector

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// FuzzDecodeString: any text either decodes to exactly the bytes the strict
// standard decoder yields (and re-encodes canonically), or fails with -32602.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{"AACAPw==", "AACAPwAAAEAAAGBA", "", "AACAPx==", "AACAPw", "____vw==",
		"AACAPw==\n", "AACA Pw==", "====", "A===", "AACAPw==AACAPw==", "AAAAAAA="} {
		f.Add(s, int16(-1))
		f.Add(s, int16(1))
	}
	f.Fuzz(func(t *testing.T, s string, dim int16) {
		got, err := DecodeString(s, int(dim))
		if err != nil {
			var re *rcp.Error
			if !errors.As(err, &re) || re.Code != rcp.CodeInvalidParams {
				t.Fatalf("error %v is not -32602", err)
			}
			return
		}
		if strings.ContainsAny(s, "\r\n") {
			t.Fatalf("accepted a line break: %q", s)
		}
		if dim >= 0 && len(got) != int(dim) {
			t.Fatalf("dimension %d accepted %d floats", dim, len(got))
		}
		ref, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(ref) != 4*len(got) {
			t.Fatalf("accepted %q that encoding/base64 rejects (%v)", s, err)
		}
		for i, v := range got {
			u := math.Float32bits(v)
			if byte(u) != ref[4*i] || byte(u>>8) != ref[4*i+1] || byte(u>>16) != ref[4*i+2] || byte(u>>24) != ref[4*i+3] {
				t.Fatalf("value %d differs from the reference decoder", i)
			}
		}
		if re := EncodeToString(got); re != base64.StdEncoding.EncodeToString(ref) {
			t.Fatalf("re-encoding differs")
		}
		buf := make([]float32, len(got))
		if err := DecodeInto(buf, s); err != nil {
			t.Fatalf("DecodeInto: %v", err)
		}
	})
}

// FuzzDecode: arbitrary vectors fields never panic and fail only with -32602.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`["AACAPw==","AACAPw=="]`), true, int16(1))
	f.Add([]byte(`[[1.0,2.5],[3]]`), false, int16(-1))
	f.Add([]byte(`[123]`), true, int16(1))
	f.Add([]byte(`[[1e39]]`), false, int16(-1))
	f.Fuzz(func(t *testing.T, raw []byte, f32 bool, dim int16) {
		enc := rcp.EncodingJSON
		if f32 {
			enc = rcp.EncodingF32Base64
		}
		vecs, err := Decode(raw, enc, int(dim))
		if err != nil {
			if rcp.CodeOf(err) != rcp.CodeInvalidParams {
				t.Fatalf("error %v is not -32602", err)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		if f32 {
			for _, v := range vecs {
				if dim >= 0 && len(v) != int(dim) {
					t.Fatal("dimension not enforced")
				}
			}
			return
		}
		for _, v := range vecs {
			if CheckFinite(v) != nil {
				t.Fatal("json decode produced a non-finite value")
			}
		}
	})
}

func BenchmarkEncode1000x1024(b *testing.B) {
	vecs := make([][]float32, 1000)
	x := uint32(2463534242)
	for i := range vecs {
		vecs[i] = make([]float32, 1024)
		for j := range vecs[i] {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			vecs[i][j] = float32(x)/float32(math.MaxUint32)*2 - 1
		}
	}
	b.Run("f32-base64", func(b *testing.B) {
		b.SetBytes(1000 * 1024 * 4)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(vecs, rcp.EncodingF32Base64); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendEncode-reuse", func(b *testing.B) {
		dst := make([]byte, 0, 1000*EncodedLen(1024))
		b.SetBytes(1000 * 1024 * 4)
		b.ReportAllocs()
		for b.Loop() {
			dst = dst[:0]
			for _, v := range vecs {
				dst = AppendEncode(dst, v)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(1000 * 1024 * 4)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(vecs, rcp.EncodingJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	enc, _ := Encode(vecs, rcp.EncodingF32Base64)
	b.Run("decode-f32-base64", func(b *testing.B) {
		b.SetBytes(1000 * 1024 * 4)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(enc.Vectors, enc.Encoding, 1024); err != nil {
				b.Fatal(err)
			}
		}
	})
}
