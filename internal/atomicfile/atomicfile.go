// Package atomicfile writes files so that a crash leaves the old contents
// or the new, never a torn file, and checks the checksummed envelope the
// engine's derived snapshots (graph, tree) share.
package atomicfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// ErrCorrupt reports a file whose header or checksum does not match.
var ErrCorrupt = errors.New("atomicfile: bad header or checksum")

// WriteFile writes data to path atomically: a temp file in the same
// directory, fsync, rename, fsync of the directory.
func WriteFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Seal frames body as magic, body, CRC-32 (IEEE) of body.
func Seal(magic string, body []byte) []byte {
	out := make([]byte, 0, len(magic)+len(body)+4)
	out = append(out, magic...)
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
}

// Open checks a sealed file's magic and checksum and returns its body.
func Open(magic string, data []byte) ([]byte, error) {
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: header", ErrCorrupt)
	}
	body := data[len(magic) : len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, fmt.Errorf("%w: checksum", ErrCorrupt)
	}
	return body, nil
}
