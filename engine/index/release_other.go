//go:build !linux

package index

// releaseMapped is a no-op where MADV_DONTNEED is not used (see
// release_linux.go); without mmap (mmap_other.go) the data is heap memory
// and must not be released.
func releaseMapped([]byte) {}
