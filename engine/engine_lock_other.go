//go:build !unix

package engine

// lockDir is a no-op where flock is unavailable; the index store's own file
// lock still prevents two writers.
func lockDir(string) (func(), error) { return func() {}, nil }
