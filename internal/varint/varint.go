// Package varint reads the uvarint-framed binary records of the engine's
// files (the document store's records, the index's segments, the
// document catalog), over a byte slice or a string.
package varint

import "fmt"

// Reader reads a record's fields front to back. Its failure is sticky:
// the first truncated or malformed field fails the reader, every later
// read returns a zero value, and a decoder checks once, at the end
// (Failed, Err). Over a string, Str and Bytes return substrings of it
// without copying.
type Reader[B ~[]byte | ~string] struct {
	Buf B
	Off int
	err error
}

// New reads b from its first byte.
func New[B ~[]byte | ~string](b B) *Reader[B] { return &Reader[B]{Buf: b} }

// Fail fails the reader (unless it has failed already) at its offset,
// naming what could not be read.
func (r *Reader[B]) Fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("truncated or malformed %s at byte %d", what, r.Off)
	}
}

// Failed reports whether a read has failed.
func (r *Reader[B]) Failed() bool { return r.err != nil }

// Err is the first failure, nil if none.
func (r *Reader[B]) Err() error { return r.err }

// Done reports whether every byte was read and none failed.
func (r *Reader[B]) Done() bool { return r.err == nil && r.Off == len(r.Buf) }

// Uvarint reads an unsigned varint.
func (r *Reader[B]) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for shift, off := 0, r.Off; shift < 64 && off < len(r.Buf); shift += 7 {
		c := r.Buf[off]
		off++
		if shift == 63 && c > 1 {
			break // overflows 64 bits
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			r.Off = off
			return v
		}
	}
	r.Fail("varint")
	return 0
}

// Varint reads a zigzag-encoded signed varint.
func (r *Reader[B]) Varint() int64 {
	u := r.Uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// Count reads a length or element count, which cannot exceed the bytes
// left (every element takes at least one).
func (r *Reader[B]) Count() int {
	n := r.Uvarint()
	if n > uint64(len(r.Buf)-r.Off) {
		r.Fail("count")
		return 0
	}
	return int(n)
}

// Bytes reads the next n bytes.
func (r *Reader[B]) Bytes(n uint64) B {
	if r.err != nil || n > uint64(len(r.Buf)-r.Off) {
		r.Fail("bytes")
		var zero B
		return zero
	}
	b := r.Buf[r.Off : r.Off+int(n)]
	r.Off += int(n)
	return b
}

// Str reads a length-prefixed string.
func (r *Reader[B]) Str() string {
	n := r.Count()
	return string(r.Bytes(uint64(n)))
}

// Byte reads one byte.
func (r *Reader[B]) Byte() byte {
	if r.err != nil || r.Off >= len(r.Buf) {
		r.Fail("byte")
		return 0
	}
	c := r.Buf[r.Off]
	r.Off++
	return c
}
