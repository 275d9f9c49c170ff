//go:build !unix

package integrity

// lockDir is a no-op where flock is unavailable; the index store's own file
// lock still prevents two writers.
func lockDir(string, Holder) (func(), error) { return func() {}, nil }

// probeLock knows of no holder where flock is unavailable.
func probeLock(string) error { return nil }
