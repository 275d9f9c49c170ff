package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// dirWatch notices the data directory being deleted or replaced under a
// running engine: its files stay open (and writes "succeed") after an
// rm -rf, yet nothing written would survive a restart.
type dirWatch struct {
	dir, lock     string
	dirFI, lockFI os.FileInfo
	stop          chan struct{}
	once          sync.Once
}

func newDirWatch(dir string) (*dirWatch, error) {
	w := &dirWatch{dir: dir, lock: filepath.Join(dir, "LOCK"), stop: make(chan struct{})}
	var err error
	if w.dirFI, err = os.Stat(w.dir); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if w.lockFI, err = os.Stat(w.lock); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return w, nil
}

// check reports a data directory (or its LOCK file) that is gone or is no
// longer the one opened.
func (w *dirWatch) check() error {
	for _, f := range []struct {
		path string
		fi   os.FileInfo
	}{{w.dir, w.dirFI}, {w.lock, w.lockFI}} {
		fi, err := os.Stat(f.path)
		if err != nil || !os.SameFile(fi, f.fi) {
			return fmt.Errorf("the data directory %s was deleted or replaced while rcpd was running (%s is gone); nothing more can be stored: restart rcpd", w.dir, f.path)
		}
	}
	return nil
}

// run logs, once, when the directory disappears; it checks every interval
// until close.
func (w *dirWatch) run(log interface{ Error(string, ...any) }, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			if err := w.check(); err != nil {
				log.Error("engine: " + err.Error())
				return
			}
		}
	}
}

func (w *dirWatch) close() { w.once.Do(func() { close(w.stop) }) }

// Health reports whether the engine can serve and store: nil, or why not
// (the data directory is gone, or the checks after Open found damage).
func (e *Engine) Health() error {
	if err := e.damage(); err != nil {
		return err
	}
	if e.watch == nil {
		return nil
	}
	return e.watch.check()
}

// writable is checked before and after every write: a write into a
// deleted data directory is not durable and must not be acknowledged.
func (e *Engine) writable() error {
	if err := e.Health(); err != nil {
		return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "storage unavailable",
			Data: &rcp.ErrorData{Retryable: ptrBool(false), Detail: err.Error()}}
	}
	return nil
}

func ptrBool(b bool) *bool { return &b }

// storageError says what a full disk is instead of a bare -32603.
func storageError(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "no space left on device",
			Data: &rcp.ErrorData{Retryable: ptrBool(true), Detail: "the file system of the data directory is full: nothing was stored; free space and retry"}}
	}
	return err
}
