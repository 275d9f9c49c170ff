//go:build !unix

package index

import "os"

// mapFile reads the file at path into memory (no mmap on this platform).
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
