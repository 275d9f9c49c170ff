//go:build !unix

package ann

import "os"

// mapFile reads the file at path into aligned memory (no mmap on this
// platform).
func mapFile(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return aligned(data), func() {}, nil
}
