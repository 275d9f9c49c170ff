//go:build unix

package integrity

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir/LOCK without waiting and
// writes h (with this process's PID) into it. A held lock is a
// *LockedError naming the holder.
func lockDir(dir string, h Holder) (release func(), err error) {
	f, err := openLock(dir, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(io.LimitReader(f, 4096))
			return nil, &LockedError{Dir: dir, Holder: readHolder(b)}
		}
		return nil, fmt.Errorf("engine: locking %s: %w", dir, err)
	}
	// The record is advisory (the flock is the lock): a failed write
	// leaves a holder nobody can name, not an unlocked directory.
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt(holderRecord(h), 0)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// probeLock returns a *LockedError when another process holds dir's lock,
// without taking it (a shared lock, released at once, fails while an
// exclusive one is held).
func probeLock(dir string) error {
	f, err := openLock(dir, os.O_RDONLY)
	if err != nil {
		return nil // no LOCK file (nobody ever held dir), or not one we wrote
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(io.LimitReader(f, 4096))
			return &LockedError{Dir: dir, Holder: readHolder(b)}
		}
		return nil
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return nil
}

// ErrLockFile reports a DIR/LOCK that is not a regular file: a symbolic
// link (rcpd truncated and overwrote whatever file it pointed to, and
// emptied it again on exit), a FIFO or a device.
var ErrLockFile = errors.New("is not a regular file; remove it")

// openLock opens DIR/LOCK without following a symbolic link, and only
// when it is a regular file.
func openLock(dir string, flag int) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("engine: %s %w", path, ErrLockFile)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("engine: %s %w", path, ErrLockFile)
	}
	return f, nil
}
