package integrity

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrLocked means another process has the data directory open.
var ErrLocked = errors.New("engine: data directory is in use by another process")

// CopyTree copies the regular files of src into dst (except LOCK).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if rel == "LOCK" || !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a temporary file renamed away meanwhile
			}
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// snapshotDir copies dir to a fresh temporary directory.
func snapshotDir(dir string) (string, error) {
	tmp, err := os.MkdirTemp("", "rcpd-snapshot-")
	if err != nil {
		return "", fmt.Errorf("engine: %w", err)
	}
	if err := CopyTree(dir, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("engine: copying %s: %w", dir, err)
	}
	return tmp, nil
}
