//go:build !unix

package engine

import "time"

var started = time.Now()

// processCPU falls back to the wall clock where getrusage is unavailable.
func processCPU() time.Duration { return time.Since(started) }
