package prefetch

import (
	"testing"
	"unsafe"
)

// Lines is a hint: it reads nothing back and changes nothing, whatever
// the count of lines and the alignment; a count of 0 or less asks for
// nothing (the loop counted down from 0 before: 2^64 prefetches, a hang).
func TestLinesChangesNothing(t *testing.T) {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i)
	}
	for _, tc := range []struct{ off, n int }{{0, 1}, {1, 1}, {63, 2}, {0, 64}, {4095, 1}, {0, 0}, {0, -1}} {
		Lines(unsafe.Pointer(&b[tc.off]), tc.n)
	}
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
