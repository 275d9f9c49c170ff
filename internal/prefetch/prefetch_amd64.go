package prefetch

import "unsafe"

// Lines hints the n cache lines from p into the cache (prefetch_amd64.s);
// n ≤ 0 asks for none.
//
//go:noescape
func Lines(p unsafe.Pointer, n int)
