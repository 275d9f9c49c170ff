// Package vector implements the embedding encodings of RCP/1 §7.3.1: plain
// JSON arrays ("json", always supported) and "f32-base64", the vector as
// little-endian IEEE-754 binary32 values, concatenated and base64-encoded with
// the standard RFC 4648 §4 alphabet and padding.
//
// # Decoding is strict
//
// A blob must be canonical standard base64 text: its length is a multiple of
// 4, it uses only A–Z a–z 0–9 + / and at most two trailing '=' pad
// characters. Missing or short padding, the URL-safe alphabet (- _),
// whitespace of any kind (including CR and LF, which encoding/base64 would
// otherwise skip silently), data after padding, and non-ASCII bytes are all
// rejected with -32602 (rcp.CodeInvalidParams), as is a decoded byte count
// that is not a multiple of 4 or that differs from dimension×4 (§7.3.1).
// Non-zero trailing bits in the last quantum ("AACAPx==") are accepted, as
// both reference SDKs accept them.
//
// # Non-finite values
//
// §4.6 forbids NaN and ±Inf as JSON numbers, so encoding a non-finite value
// with the "json" encoding (AppendJSON, EncodeResult) is an error. The
// "f32-base64" encoding is a binary carrier: it transports any binary32 bit
// pattern, including NaN payloads, infinities and -0, exactly as the
// reference SDKs do (vector encode/non-finite-inputs and decode/nan-inf).
// Servers that must honour the §4.6 sentinel rule for binary payloads too can
// call CheckFinite before encoding.
//
// Converting float64 input to binary32 (FromFloat64) rounds to nearest, ties
// to even; a finite value whose magnitude rounds beyond the binary32 range is
// an error rather than +Inf (the Python reference raises OverflowError; the
// Node reference silently writes +Inf).
//
// # Errors
//
// Malformed wire data yields *rcp.Error with code -32602. Local programmer
// errors (ragged batches on encode, overflow, non-finite JSON, an unknown
// encoding name) are plain errors: they never originate from a peer. Use
// errors.Is with ErrUnknownEncoding, ErrRagged, ErrNonFinite or ErrOverflow.
package vector

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rcpgo/rcpgo/rcp"
)

// Sentinel errors for local (non-wire) failures.
var (
	ErrUnknownEncoding = errors.New("vector: unknown vector encoding")
	ErrRagged          = errors.New("vector: all vectors must share one dimension for f32-base64")
	ErrNonFinite       = errors.New("vector: non-finite value cannot be encoded as a JSON number (§4.6)")
	ErrOverflow        = errors.New("vector: value is outside the binary32 range")
)

// chunkFloats is the number of floats converted per stack buffer: 96 floats
// are 384 bytes, a multiple of 3, so every chunk but the last encodes to 512
// base64 characters without padding.
const (
	chunkFloats = 96
	chunkBytes  = chunkFloats * 4
	chunkChars  = chunkBytes / 3 * 4
)

// EncodedLen returns the length of the f32-base64 text of a dim-dimensional
// vector.
func EncodedLen(dim int) int { return base64.StdEncoding.EncodedLen(dim * 4) }

// AppendEncode appends the f32-base64 text of v to dst and returns the
// extended slice. It allocates only when dst lacks capacity.
func AppendEncode(dst []byte, v []float32) []byte {
	n := EncodedLen(len(v))
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	out := dst[len(dst) : len(dst)+n]
	var buf [chunkBytes]byte
	for len(v) > 0 {
		m := min(len(v), chunkFloats)
		for i, f := range v[:m] {
			binary.LittleEndian.PutUint32(buf[i*4:], math.Float32bits(f))
		}
		base64.StdEncoding.Encode(out, buf[:m*4])
		out = out[base64.StdEncoding.EncodedLen(m*4):]
		v = v[m:]
	}
	return dst[:len(dst)+n]
}

// EncodeToString returns the f32-base64 text of v.
func EncodeToString(v []float32) string { return string(AppendEncode(nil, v)) }

// validBlob checks the canonical-text rules that encoding/base64 does not
// enforce by itself (it skips CR and LF) and that chunked decoding relies on
// (padding only in the final quantum). It returns the number of decoded bytes.
func validBlob[T ~string | ~[]byte](s T) (int, error) {
	if len(s)%4 != 0 {
		return 0, rcp.InvalidParams("", "f32-base64 blob is not padded base64 (length %d is not a multiple of 4)", len(s))
	}
	if indexByte(s, '\n') >= 0 || indexByte(s, '\r') >= 0 {
		return 0, rcp.InvalidParams("", "f32-base64 blob contains a line break")
	}
	pad := 0
	if p := indexByte(s, '='); p >= 0 {
		if p < len(s)-2 {
			return 0, rcp.InvalidParams("", "f32-base64 blob has data after padding")
		}
		for i := p; i < len(s); i++ {
			if s[i] != '=' {
				return 0, rcp.InvalidParams("", "f32-base64 blob has data after padding")
			}
		}
		pad = len(s) - p
	}
	return len(s)/4*3 - pad, nil
}

// indexByte is strings.IndexByte / bytes.IndexByte for either type.
func indexByte[T ~string | ~[]byte](s T, c byte) int {
	switch v := any(s).(type) {
	case string:
		return strings.IndexByte(v, c)
	case []byte:
		return bytes.IndexByte(v, c)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// decodeChunks decodes the validated blob s into dst (len(dst) == n/4).
func decodeChunks[T ~string | ~[]byte](dst []float32, s T) error {
	var raw [chunkChars]byte
	var buf [chunkBytes]byte
	for len(s) > 0 {
		m := min(len(s), chunkChars)
		copy(raw[:], s[:m])
		k, err := base64.StdEncoding.Decode(buf[:], raw[:m])
		if err != nil {
			return rcp.InvalidParams("", "f32-base64 blob is not valid base64: %v", err)
		}
		if k%4 != 0 || k/4 > len(dst) {
			return rcp.InvalidParams("", "f32-base64 blob length is not a multiple of 4 bytes")
		}
		for i := 0; i < k/4; i++ {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[i*4:]))
		}
		dst = dst[k/4:]
		s = s[m:]
	}
	return nil
}

// blobFloats validates s and returns its float count.
func blobFloats[T ~string | ~[]byte](s T) (int, error) {
	n, err := validBlob(s)
	if err != nil {
		return 0, err
	}
	if n%4 != 0 {
		return 0, rcp.InvalidParams("", "f32-base64 blob length %d bytes is not a multiple of 4", n)
	}
	return n / 4, nil
}

// AppendDecode decodes the f32-base64 blob s, appends its values to dst and
// returns the extended slice. dim < 0 skips the dimension check; otherwise
// the blob must hold exactly dim values (§7.3.1). Errors are -32602.
func AppendDecode(dst []float32, s string, dim int) ([]float32, error) {
	n, err := blobFloats(s)
	if err != nil {
		return dst, err
	}
	if dim >= 0 && n != dim {
		return dst, rcp.InvalidParams("", "f32-base64 blob has %d floats, expected dimension %d", n, dim)
	}
	start := len(dst)
	dst = grow(dst, n)
	if err := decodeChunks(dst[start:], s); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// DecodeInto decodes the f32-base64 blob s into dst, whose length is the
// expected dimension. It does not allocate.
func DecodeInto(dst []float32, s string) error {
	n, err := blobFloats(s)
	if err != nil {
		return err
	}
	if n != len(dst) {
		return rcp.InvalidParams("", "f32-base64 blob has %d floats, expected dimension %d", n, len(dst))
	}
	return decodeChunks(dst, s)
}

// DecodeString decodes one f32-base64 blob; dim < 0 skips the dimension check.
func DecodeString(s string, dim int) ([]float32, error) {
	return AppendDecode(nil, s, dim)
}

func grow(s []float32, n int) []float32 {
	if cap(s)-len(s) >= n {
		return s[:len(s)+n]
	}
	g := make([]float32, len(s)+n)
	copy(g, s)
	return g
}

// FromFloat64 converts v to binary32, rounding to nearest (ties to even).
// Values that underflow become (signed) zero; a finite value that overflows
// the binary32 range returns ErrOverflow. Non-finite inputs are kept.
func FromFloat64(v []float64) ([]float32, error) {
	out := make([]float32, len(v))
	for i, f := range v {
		g := float32(f)
		if math.IsInf(float64(g), 0) && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: component %d is %v", ErrOverflow, i, f)
		}
		out[i] = g
	}
	return out, nil
}

// CheckFinite returns ErrNonFinite naming the first NaN or ±Inf component.
func CheckFinite(v []float32) error {
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%w: component %d is %v", ErrNonFinite, i, f)
		}
	}
	return nil
}

// AppendJSON appends v as a JSON array of numbers (the shortest decimal that
// round-trips to the same binary32 value, formatted as encoding/json formats
// float32). A non-finite component returns ErrNonFinite (§4.6).
func AppendJSON(dst []byte, v []float32) ([]byte, error) {
	if err := CheckFinite(v); err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	for i, f := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendFloat32(dst, f)
	}
	return append(dst, ']'), nil
}

// appendFloat32 mirrors encoding/json's float32 formatting.
func appendFloat32(dst []byte, f float32) []byte {
	abs := math.Abs(float64(f))
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, float64(f), format, -1, 32)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
