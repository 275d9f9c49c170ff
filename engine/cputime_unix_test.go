//go:build unix

package engine

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used: timing work by it rather
// than by the wall clock keeps ratios meaningful on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
