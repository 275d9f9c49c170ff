//go:build unix

package mmapfile

import (
	"fmt"
	"os"
	"syscall"
)

// Private maps the file at path privately, readable and writable: writes
// (inserts relinking stored nodes) copy the pages they touch and never
// reach the file. The mapping outlives the file's removal; release unmaps.
func Private(path string) (data []byte, release func(), err error) {
	return mapFile(path, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
}

// ReadOnly maps the file at path read-only and shared with the page cache
// (index segments). The mapping outlives the file's removal; release unmaps.
func ReadOnly(path string) (data []byte, release func(), err error) {
	return mapFile(path, syscall.PROT_READ, syscall.MAP_SHARED)
}

func mapFile(path string, prot, flags int) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size == 0 || size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: cannot map %d bytes", path, size)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), prot, flags)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
