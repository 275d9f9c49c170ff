//go:build !amd64

package prefetch

import "unsafe"

// Lines does nothing where there is no prefetch kernel.
func Lines(unsafe.Pointer, int) {}
