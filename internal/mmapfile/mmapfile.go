// Package mmapfile maps files written in little-endian layouts (the dense
// checkpoint of engine/ann, the LSA model of engine/embed/lsa, the segments
// of engine/index) and views their sections as typed slices, so a large
// file is used in place instead of decoded.
package mmapfile

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// littleEndian is whether the host stores numbers as the files do; on a
// big-endian host the views are converted copies.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Aligned returns b's contents in memory aligned for the typed views.
func Aligned(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	words := make([]uint64, (len(b)+7)/8)
	out := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(b))
	copy(out, b)
	return out
}

// Int32s views b (little-endian, 4-byte aligned) as int32s.
func Int32s(b []byte) []int32 {
	if len(b) < 4 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/4)
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Float32s views b (little-endian, 4-byte aligned) as float32s.
func Float32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
