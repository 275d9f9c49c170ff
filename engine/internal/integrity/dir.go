// Package integrity keeps an engine's data directory whole: the lock that
// makes one process its writer (or the read-only snapshot copy served
// instead), the watch that notices the directory deleted or replaced, the
// checks that run after Open, and Repair, which makes a damaged directory
// openable again.
package integrity

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/fault"
)

// Errors the engine's error table translates.
var (
	// ErrDamaged: the checks after Open found damage; every request is
	// refused.
	ErrDamaged = errors.New("storage damaged")
	// ErrUnavailable: the data directory is gone (deleted or replaced under
	// the running engine); nothing more can be stored.
	ErrUnavailable = errors.New("storage unavailable")
)

// Dir is an engine's hold on its data directory. Path is the directory
// served: the one asked for, or a read-only snapshot copy of it
// (Snapshot) when another process held it and the caller allowed that.
type Dir struct {
	Path string
	// Snapshot, when set, says why the copy is read-only (writes go
	// through the holder of the original).
	Snapshot string
	release  func()
	tmp      string
	watch    *dirWatch
	// checks is set once by StartChecks, while background work may
	// already ask Health.
	checks atomic.Pointer[checks]
}

// Take takes dir's lock for holder. When another process holds it and
// snapshotIfLocked is set, it serves a read-only copy instead (removed at
// Close).
func Take(dir string, holder Holder, snapshotIfLocked bool, log *slog.Logger) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	d := &Dir{Path: dir}
	release, err := lockDir(dir, holder)
	var held *LockedError
	if errors.As(err, &held) && snapshotIfLocked {
		for attempt := 0; attempt < 3 && errors.Is(err, ErrLocked); attempt++ {
			if d.tmp, err = snapshotDir(dir); err != nil {
				return nil, err
			}
			log.Warn("engine: data directory in use by another process; serving a read-only snapshot copy",
				"dir", dir, "holder", held.Holder.String(), "copy", d.tmp)
			d.Path, d.Snapshot = d.tmp, fmt.Sprintf("this is a read-only snapshot of %s, which %s holds: write through that server", dir, held.Holder)
			release, err = lockDir(d.tmp, holder)
		}
	}
	if err != nil {
		if held == nil {
			err = fmt.Errorf("%w (%s)", err, dir)
		}
		return nil, err
	}
	d.release = release
	if d.watch, err = newDirWatch(d.Path); err != nil {
		d.Close()
		return nil, err
	}
	go d.watch.run(log, 5*time.Second)
	return d, nil
}

// Health reports whether the engine can serve and store: nil, or why not
// (the data directory is gone, or the checks after Open found damage).
func (d *Dir) Health() error {
	if err := d.Damage(); err != nil {
		return err
	}
	if d.watch == nil {
		return nil
	}
	return d.watch.check()
}

// Writable is checked before and after every write: a write into a
// deleted data directory is not durable and must not be acknowledged
// (ErrUnavailable).
func (d *Dir) Writable() error {
	if err := d.Health(); err != nil {
		return &fault.Error{Err: ErrUnavailable, Detail: err.Error()}
	}
	return nil
}

// Close stops the checks and the watch, releases the lock and removes a
// snapshot copy.
func (d *Dir) Close() error {
	d.StopChecks()
	if d.watch != nil {
		d.watch.close()
	}
	if d.release != nil {
		d.release()
	}
	if d.tmp != "" {
		return os.RemoveAll(d.tmp)
	}
	return nil
}
