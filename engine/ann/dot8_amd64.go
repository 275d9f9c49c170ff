package ann

import "golang.org/x/sys/cpu"

// fastDot8 reports whether dot8 runs a vector kernel: only then does the
// graph walk use the int8 copy (in portable Go an int8 inner product is
// slower than vek's float32 one).
var fastDot8 = cpu.X86.HasAVX2

// dot8 is the inner product of two int8 vectors of equal length (at most
// 2^16 components, so the int32 sum cannot overflow).
func dot8(a, b []int8) int32 {
	n := len(a) &^ 31
	if !fastDot8 || n == 0 {
		return dot8Generic(a, b)
	}
	b = b[:len(a)]
	s := dot8AVX2(&a[0], &b[0], n)
	if n < len(a) {
		s += dot8Generic(a[n:], b[n:])
	}
	return s
}

// dot8AVX2 sums a[i]·b[i] for i < n, n a positive multiple of 32
// (dot8_amd64.s).
//
//go:noescape
func dot8AVX2(a, b *int8, n int) int32
