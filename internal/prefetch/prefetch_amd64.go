package prefetch

import "unsafe"

// Lines hints the n (at least one) cache lines from p into the cache
// (prefetch_amd64.s).
//
//go:noescape
func Lines(p unsafe.Pointer, n int)
