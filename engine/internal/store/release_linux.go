//go:build linux

package store

import (
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// ReleaseMapped drops the pages of db's memory map from this process's
// resident set (MADV_DONTNEED on a shared, read-only file mapping: the
// page cache keeps them, nothing is lost). OpenBolt's integrity walk reads
// every page; without this the whole file stays resident in the process,
// so its RSS grows with the corpus rather than with what requests touch,
// which fault their pages back in on first use. It runs inside a read
// transaction: bbolt replaces its mapping when a commit grows the file,
// but never while a reader is open, so the range advised is db's mapping
// and not memory reused since.
func ReleaseMapped(db *bolt.DB) {
	tx, err := db.Begin(false)
	if err != nil {
		return
	}
	defer func() { _ = tx.Rollback() }()
	n := uintptr(tx.Size()) &^ uintptr(os.Getpagesize()-1) // the pages in use, all within the mapping
	if base := db.Info().Data; base != 0 && n > 0 {
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, base, n, syscall.MADV_DONTNEED) // advice only: an error changes nothing
	}
}
