package vector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rcpgo/rcpgo/rcp"
)

// Encoded is the wire form of a batch of vectors: the raw "vectors" field and
// the "encoding" / "dimension" result fields that accompany it (§7.3.1).
// Encoding and Dimension are zero for the "json" encoding, whose result
// carries neither field.
type Encoded struct {
	Vectors   json.RawMessage
	Encoding  string
	Dimension int
}

// Apply copies e into an embed result.
func (e Encoded) Apply(r *rcp.EmbedResult) {
	r.Vectors, r.Encoding, r.Dimension = e.Vectors, e.Encoding, e.Dimension
}

// Encode builds the vectors field for encoding ("" means "json").
// For "f32-base64" every vector must have the same length (ErrRagged) and the
// raw field is built in a single allocation. For "json", non-finite values
// return ErrNonFinite. Any other name returns ErrUnknownEncoding.
func Encode(vecs [][]float32, encoding string) (Encoded, error) {
	switch encoding {
	case rcp.EncodingF32Base64:
		dim := 0
		if len(vecs) > 0 {
			dim = len(vecs[0])
		}
		for _, v := range vecs {
			if len(v) != dim {
				return Encoded{}, ErrRagged
			}
		}
		n := 2
		if len(vecs) > 0 {
			n += len(vecs)*(EncodedLen(dim)+3) - 1
		}
		buf := make([]byte, 0, n)
		buf = append(buf, '[')
		for i, v := range vecs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '"')
			buf = AppendEncode(buf, v)
			buf = append(buf, '"')
		}
		buf = append(buf, ']')
		return Encoded{Vectors: buf, Encoding: rcp.EncodingF32Base64, Dimension: dim}, nil
	case "", rcp.EncodingJSON:
		n := 2
		for _, v := range vecs {
			n += 3 + 12*len(v) // typical float32 text is ≤ 11 bytes plus a comma
		}
		buf := make([]byte, 0, n)
		buf = append(buf, '[')
		for i, v := range vecs {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = AppendJSON(buf, v); err != nil {
				return Encoded{}, fmt.Errorf("vector %d: %w", i, err)
			}
		}
		buf = append(buf, ']')
		return Encoded{Vectors: buf}, nil
	default:
		return Encoded{}, fmt.Errorf("%w %q", ErrUnknownEncoding, encoding)
	}
}

// EncodeResult is Encode followed by Apply: it fills r.Vectors, r.Encoding
// and r.Dimension.
func EncodeResult(r *rcp.EmbedResult, vecs [][]float32, encoding string) error {
	e, err := Encode(vecs, encoding)
	if err != nil {
		return err
	}
	e.Apply(r)
	return nil
}

// Decode reads a raw vectors field. encoding "" means "json" (§7.3.1: an
// absent encoding is json). For "f32-base64" each element must be a string
// holding exactly dim values; dim < 0 skips the dimension check (every blob
// must still be a whole number of binary32 values). For "json" each element
// must be an array of finite numbers representable as binary32; dim is not
// checked, matching both references. Malformed data is -32602 with
// error.data.field "vectors[i]"; an unknown encoding is ErrUnknownEncoding.
//
// For f32-base64 all vectors share one backing array (one allocation for the
// values), so retaining one row retains the batch.
func Decode(raw json.RawMessage, encoding string, dim int) ([][]float32, error) {
	switch encoding {
	case rcp.EncodingF32Base64:
		blobs, err := stringElems(raw)
		if err != nil {
			return nil, err
		}
		total := 0
		for i, b := range blobs {
			n, err := blobFloats(b)
			if err != nil {
				return nil, withField(err, i)
			}
			if dim >= 0 && n != dim {
				return nil, rcp.InvalidParams(fmt.Sprintf("vectors[%d]", i), "f32-base64 blob has %d floats, expected dimension %d", n, dim)
			}
			total += n
		}
		out := make([][]float32, len(blobs))
		backing := make([]float32, total)
		for i, b := range blobs {
			n, _ := blobFloats(b) // validated above
			out[i] = backing[:n:n]
			backing = backing[n:]
			if err := decodeChunks(out[i], b); err != nil {
				return nil, withField(err, i)
			}
		}
		return out, nil
	case "", rcp.EncodingJSON:
		return decodeJSON(raw)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownEncoding, encoding)
	}
}

// DecodeResult decodes r.Vectors according to r.Encoding. Because
// rcp.EmbedResult cannot tell an absent dimension from 0, a zero Dimension
// with f32-base64 only requires all blobs to have the same length.
func DecodeResult(r *rcp.EmbedResult) ([][]float32, error) {
	dim := r.Dimension
	if r.Encoding == rcp.EncodingF32Base64 && dim == 0 {
		dim = -1
	}
	vecs, err := Decode(r.Vectors, r.Encoding, dim)
	if err != nil {
		return nil, err
	}
	if dim < 0 {
		for i, v := range vecs {
			if len(v) != len(vecs[0]) {
				return nil, rcp.InvalidParams(fmt.Sprintf("vectors[%d]", i), "f32-base64 vectors have different dimensions")
			}
		}
	}
	return vecs, nil
}

func withField(err error, i int) error {
	if e, ok := err.(*rcp.Error); ok && e.Data != nil {
		e.Data.Field = fmt.Sprintf("vectors[%d]", i)
	}
	return err
}

// stringElems splits a JSON array of strings into the strings' bytes. Plain
// strings (no escapes, the only form base64 needs) alias raw; escaped ones
// are unescaped by encoding/json.
func stringElems(raw []byte) ([][]byte, error) {
	notArray := rcp.InvalidParams("vectors", "vectors must be an array of f32-base64 strings")
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, notArray
	}
	i = skipSpace(raw, i+1)
	out := make([][]byte, 0, bytes.Count(raw, []byte{','})+1)
	if i < len(raw) && raw[i] == ']' {
		if skipSpace(raw, i+1) != len(raw) {
			return nil, notArray
		}
		return [][]byte{}, nil
	}
	notString := func() error {
		return rcp.InvalidParams(fmt.Sprintf("vectors[%d]", len(out)), "f32-base64 vector must be a string")
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, notString()
		}
		j := i + 1
		escaped := false
		if q := bytes.IndexByte(raw[j:], '"'); q >= 0 && bytes.IndexByte(raw[j:j+q], '\\') < 0 {
			j += q // fast path: no escapes
		} else {
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' {
					escaped = true
					j++
				}
				j++
			}
		}
		if j >= len(raw) {
			return nil, notArray
		}
		elem := raw[i+1 : j]
		if escaped {
			var s string
			if err := json.Unmarshal(raw[i:j+1], &s); err != nil {
				return nil, notString()
			}
			elem = []byte(s)
		}
		out = append(out, elem)
		i = skipSpace(raw, j+1)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == ']' && skipSpace(raw, i+1) == len(raw) {
			return out, nil
		}
		return nil, notArray
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// decodeJSON parses [[number,...],...] into binary32 vectors.
func decodeJSON(raw json.RawMessage) ([][]float32, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	bad := func(field, msg string) error { return rcp.InvalidParams(field, "%s", msg) }
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return nil, bad("vectors", "vectors must be an array of number arrays")
	}
	out := [][]float32{}
	for i := 0; dec.More(); i++ {
		field := fmt.Sprintf("vectors[%d]", i)
		tok, err := dec.Token()
		if err != nil || tok != json.Delim('[') {
			return nil, bad(field, "json vector must be an array of numbers")
		}
		v := []float32{}
		for dec.More() {
			tok, err := dec.Token()
			num, ok := tok.(json.Number)
			if err != nil || !ok {
				return nil, bad(field, "json vector must be an array of numbers")
			}
			f, err := strconv.ParseFloat(string(num), 64)
			g := float32(f)
			if err != nil || math.IsInf(float64(g), 0) {
				return nil, bad(field, "vector component "+string(num)+" is outside the binary32 range")
			}
			v = append(v, g)
		}
		if _, err := dec.Token(); err != nil {
			return nil, bad(field, "json vector must be an array of numbers")
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad("vectors", "vectors must be an array of number arrays")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("vectors", "trailing data after vectors")
	}
	return out, nil
}
