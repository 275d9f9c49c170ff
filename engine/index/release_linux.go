//go:build linux

package index

import "syscall"

// releaseMapped drops the pages of a read-only shared file mapping from
// this process's resident set (MADV_DONTNEED: the page cache keeps them,
// nothing is lost; the next access maps a page back). Opening a segment
// reads all of it (CRC, tables); without this every segment stays
// resident in the process, so RSS grows with the corpus rather than with
// what searches touch.
func releaseMapped(data []byte) {
	_ = syscall.Madvise(data, syscall.MADV_DONTNEED) // advice only: an error changes nothing
}
