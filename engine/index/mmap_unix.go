//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the file at path read-only. The mapping stays valid after
// the file is closed or removed; unmap releases it.
func mapFile(path string) (data []byte, unmap func() error, err error) {
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
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
