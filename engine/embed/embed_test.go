package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestParseKind(t *testing.T) {
	tests := []struct {
		in   string
		want Kind
		ok   bool
	}{{"", KindDocument, true}, {"document", KindDocument, true}, {"query", KindQuery, true}, {"passage", "", false}}
	for _, tt := range tests {
		got, err := ParseKind(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseKind(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestVectorHelpers(t *testing.T) {
	v := Normalize([]float32{3, 4})
	if math.Abs(float64(v[0])-0.6) > 1e-7 || math.Abs(float64(v[1])-0.8) > 1e-7 {
		t.Errorf("Normalize = %v", v)
	}
	if z := Normalize([]float32{0, 0}); !slices.Equal(z, []float32{0, 0}) {
		t.Errorf("zero vector changed: %v", z)
	}
	a := []float32{1, 2, 3, 4, 5}
	b := []float32{5, 4, 3, 2, 1}
	if Dot(a, b) != 35 {
		t.Errorf("Dot = %v", Dot(a, b))
	}
	if c := Cosine([]float32{1, 0}, []float32{0, 0}); c != 0 {
		t.Errorf("Cosine with zero = %v", c)
	}
	if c := Cosine([]float32{2, 0}, []float32{1, 1}); math.Abs(float64(c)-math.Sqrt2/2) > 1e-6 {
		t.Errorf("Cosine = %v", c)
	}
}

type countingProvider struct{ calls [][]string }

func (p *countingProvider) Embed(_ context.Context, texts []string, _ Kind) ([][]float32, error) {
	p.calls = append(p.calls, texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t))}
	}
	return out, nil
}
func (p *countingProvider) Dimension() int   { return 1 }
func (p *countingProvider) Identity() string { return "count-1" }
func (p *countingProvider) Normalized() bool { return false }
func (p *countingProvider) BatchLimit() int  { return 2 }

func TestEmbedAllBatches(t *testing.T) {
	p := &countingProvider{}
	vs, err := EmbedAll(context.Background(), p, []string{"a", "bb", "ccc", "dddd", "eeeee"}, KindDocument)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.calls) != 3 || len(vs) != 5 || vs[4][0] != 5 {
		t.Errorf("calls %v vectors %v", p.calls, vs)
	}
	if err := CheckIdentity("count-1", p); err != nil {
		t.Error(err)
	}
	if err := CheckIdentity("lsa-256:fit=x", p); !errors.Is(err, ErrIdentityMismatch) {
		t.Errorf("mismatch: %v", err)
	}
}

func TestF32Base64(t *testing.T) {
	v := []float32{1, -2.5, float32(math.Pi), 0}
	s := EncodeF32Base64(v)
	got, err := DecodeF32Base64(s, 4)
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	// RCP §7.3.1 example shape: little-endian binary32.
	if EncodeF32Base64([]float32{1}) != "AACAPw==" {
		t.Errorf("1.0 encodes as %q", EncodeF32Base64([]float32{1}))
	}
	for _, dim := range []int{3, 5, 0} {
		if _, err := DecodeF32Base64(s, dim); !errors.Is(err, ErrVectorLength) {
			t.Errorf("dim %d: %v", dim, err)
		}
	}
	if _, err := DecodeF32Base64("!!!!", 1); err == nil {
		t.Error("bad base64 accepted")
	}
}

func FuzzDecodeF32Base64(f *testing.F) {
	f.Add("AACAPw==", 1)
	f.Add(EncodeF32Base64([]float32{1, 2, 3}), 3)
	f.Fuzz(func(t *testing.T, s string, dim int) {
		if dim > 1<<20 {
			return
		}
		v, err := DecodeF32Base64(s, dim)
		if err != nil {
			return
		}
		if len(v) != dim {
			t.Fatalf("%d values for dim %d", len(v), dim)
		}
		if again := EncodeF32Base64(v); again != s {
			// Non-canonical base64 padding bits may differ; the values must not.
			back, err := DecodeF32Base64(again, dim)
			if err != nil || fmt.Sprint(back) != fmt.Sprint(v) {
				t.Fatalf("re-encode mismatch")
			}
		}
	})
}
