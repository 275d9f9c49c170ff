//go:build !race

package rcp

// slowdown scales the time bounds of tests that measure how long work
// takes (10 under the race detector).
const slowdown = 1
