package integrity

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
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
