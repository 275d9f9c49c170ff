//go:build !linux

package store

import bolt "go.etcd.io/bbolt"

// releaseMapped is a no-op where MADV_DONTNEED is not used (see
// release_linux.go).
func releaseMapped(*bolt.DB) {}
