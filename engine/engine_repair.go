package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/store"
)

// Repair makes a data directory that Open refuses openable again, deleting
// nothing: each file that stops Open is moved into
// dir/quarantine-<UTC time>/ and reported.
//
//   - engine.db failing store.CheckFile: Open recreates it and rebuilds the
//     document catalog from the index (idempotency keys are lost);
//   - index/store.db failing store.CheckFile, or missing while segment
//     files exist: the store and every segment file go (segments number
//     documents of the store they were written with); the index starts
//     empty, and the moved store.db is kept for a restore.
//
// The caller must not run rcpd on dir meanwhile.
func Repair(dir string) (moved []string, err error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	q := filepath.Join(dir, "quarantine-"+stamp)
	move := func(rel string) error {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(q, rel)), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(dir, rel), filepath.Join(q, rel)); err != nil {
			return err
		}
		moved = append(moved, rel)
		return nil
	}
	if err := store.CheckFile(filepath.Join(dir, "engine.db")); err != nil {
		if err := move("engine.db"); err != nil {
			return moved, fmt.Errorf("engine: repair: %w", err)
		}
	}
	storeDB := filepath.Join("index", "store.db")
	_, statErr := os.Stat(filepath.Join(dir, storeDB))
	storeBad := store.CheckFile(filepath.Join(dir, storeDB)) != nil
	if storeBad {
		if err := move(storeDB); err != nil {
			return moved, fmt.Errorf("engine: repair: %w", err)
		}
	}
	if storeBad || errors.Is(statErr, os.ErrNotExist) {
		segs := filepath.Join("index", "segments")
		ents, _ := os.ReadDir(filepath.Join(dir, segs))
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".rseg") {
				if err := move(filepath.Join(segs, e.Name())); err != nil {
					return moved, fmt.Errorf("engine: repair: %w", err)
				}
			}
		}
	}
	return moved, nil
}

// repairHint tells the operator the way out of a refused Open.
func repairHint(err error) string {
	if errors.Is(err, store.ErrCorruptFile) || errors.Is(err, index.ErrOrphanSegments) {
		return "; the data directory was left untouched: restore the file from a backup, or run `rcpd repair --data DIR` to move the damaged files aside (nothing is deleted)"
	}
	return ""
}
