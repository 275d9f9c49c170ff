package index

import (
	"encoding/binary"
	"math/bits"
)

// Frame-of-reference bit packing (format 3): n values stored in
// ceil(n·w/8) bytes, value i at bit i·w (least significant bit first),
// w being the width of the largest value. Values are random-access, so a
// postings iterator decodes a packed block lazily, one posting at a time.

// maxPackWidth bounds a packed width: values are uint32.
const maxPackWidth = 32

// packWidth returns the bits needed for the largest of vals.
func packWidth(vals []uint32) uint {
	var or uint32
	for _, v := range vals {
		or |= v
	}
	return uint(bits.Len32(or))
}

// packedLen is the byte length of n values packed at width w.
func packedLen(n int, w uint) int { return (n*int(w) + 7) / 8 }

// appendPacked appends vals packed at width w (≥ packWidth(vals)).
func appendPacked(dst []byte, vals []uint32, w uint) []byte {
	if w == 0 {
		return dst
	}
	var acc uint64
	var nb uint
	for _, v := range vals {
		acc |= uint64(v) << nb
		nb += w
		for nb >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			nb -= 8
		}
	}
	if nb > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// unpackAt returns value i of the values packed at width w from b (which
// must hold at least packedLen(i+1, w) bytes).
func unpackAt(b []byte, w uint, i int) uint32 {
	if w == 0 {
		return 0
	}
	bit := uint(i) * w
	p := int(bit >> 3)
	var v uint64
	if p+8 <= len(b) {
		v = binary.LittleEndian.Uint64(b[p:])
	} else {
		for k := len(b) - 1; k >= p; k-- {
			v = v<<8 | uint64(b[k])
		}
	}
	return uint32(v >> (bit & 7) & (1<<w - 1))
}

// unpackAll decodes n values packed at width w from b into dst[:n].
func unpackAll(dst []uint32, b []byte, w uint, n int) []uint32 {
	dst = dst[:0]
	if w == 0 {
		for range n {
			dst = append(dst, 0)
		}
		return dst
	}
	var acc uint64
	var nb uint
	p := 0
	mask := uint64(1)<<w - 1
	for range n {
		for nb < w {
			acc |= uint64(b[p]) << nb
			p++
			nb += 8
		}
		dst = append(dst, uint32(acc&mask))
		acc >>= w
		nb -= w
	}
	return dst
}
