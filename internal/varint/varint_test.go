package varint

import (
	"encoding/binary"
	"testing"
)

// TestReader reads what encoding/binary writes, and fails stickily on a
// truncated record.
func TestReader(t *testing.T) {
	b := binary.AppendUvarint(nil, 300)
	b = binary.AppendVarint(b, -7)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "abc"...)
	b = append(b, 0xC3)
	for _, r := range []interface {
		Uvarint() uint64
		Varint() int64
		Str() string
		Byte() byte
		Done() bool
	}{New(b), New(string(b))} {
		if u, v, s, c := r.Uvarint(), r.Varint(), r.Str(), r.Byte(); u != 300 || v != -7 || s != "abc" || c != 0xC3 || !r.Done() {
			t.Fatalf("%T: %d %d %q %x done=%v", r, u, v, s, c, r.Done())
		}
	}
	r := New(b[:4]) // the string's length says 3, one byte is left
	r.Uvarint()
	r.Varint()
	if s := r.Str(); s != "" || !r.Failed() || r.Err() == nil || r.Uvarint() != 0 || r.Done() {
		t.Fatalf("truncated: %q failed=%v err=%v", s, r.Failed(), r.Err())
	}
	over := New([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	if over.Uvarint(); !over.Failed() {
		t.Fatal("a varint beyond 64 bits was read")
	}
}

// FuzzReader: any input either reads like encoding/binary's Uvarint or
// fails; nothing panics or reads past the end.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0x80, 0x01, 0x02, 'h', 'i'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		want, n := binary.Uvarint(b)
		r := New(b)
		got := r.Uvarint()
		if (n > 0) != !r.Failed() || n > 0 && (got != want || r.Off != n) {
			t.Fatalf("%x: got %d (failed %v, off %d), binary says %d, %d", b, got, r.Failed(), r.Off, want, n)
		}
		r.Str()
		r.Bytes(uint64(len(b)))
		r.Byte()
		if r.Off > len(b) {
			t.Fatalf("read past the end: %d > %d", r.Off, len(b))
		}
	})
}
