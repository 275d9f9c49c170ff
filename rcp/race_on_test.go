//go:build race

package rcp

// slowdown scales the time bounds of tests that measure how long work
// takes: the race detector makes it 5–10 times slower.
const slowdown = 10
