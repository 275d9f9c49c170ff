//go:build !unix

package mmapfile

import "os"

// Private reads the file at path into aligned memory (no mmap on this
// platform).
func Private(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return Aligned(data), func() {}, nil
}

// ReadOnly reads the file at path into memory (no mmap on this platform).
func ReadOnly(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() {}, nil
}
