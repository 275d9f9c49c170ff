//go:build !linux

package store

import bolt "go.etcd.io/bbolt"

// ReleaseMapped is a no-op where MADV_DONTNEED is not used (see
// release_linux.go).
func ReleaseMapped(*bolt.DB) {}
