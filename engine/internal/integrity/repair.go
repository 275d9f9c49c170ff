package integrity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/internal/store"
)

// RepairReport is what Repair did to a data directory.
type RepairReport struct {
	// Moved lists the files moved into the quarantine directory, relative
	// to the data directory.
	Moved []string
	// Salvaged is set when index/store.db had damaged pages: its readable
	// records were copied into a new store.db (the damaged file is among
	// Moved) and the index rebuilds its segments from them at the next Open.
	Salvaged *Salvage
	// ManifestRebuilt: index/store.db held documents but had lost its
	// manifest (to damaged pages, salvaged or not). One was rebuilt from
	// the records, numbering new documents above every stored one; the
	// segment files went aside and the index rebuilds them from the
	// records at the next Open, under a new index epoch (versions and
	// cursors issued before no longer resolve).
	ManifestRebuilt bool
	// LostDocuments are the ids of the retrieval units (documents or
	// chunks) whose records were lost or no longer decode, sorted: they
	// are deleted.
	LostDocuments []string
}

// Salvage describes a bbolt file rebuilt from its readable records.
type Salvage struct {
	File   string   // relative to the data directory
	Copied int      // records (bbolt values) copied
	Lost   []string // the stretches of keys that could not be read
}

// Repair makes a data directory that Open refuses, or whose checks after
// Open fail, openable again, deleting nothing: each damaged file is moved
// into dir/quarantine-<UTC time>/ and reported.
//
//   - engine.db failing store.CheckFile or holding a damaged page: Open
//     recreates it and rebuilds the document catalog from the index
//     (idempotency keys and the dense log are lost; the dense index is
//     rebuilt from the index's documents as for a new corpus);
//   - index/store.db failing store.CheckFile, or missing while segment
//     files exist: the store and every segment file go (segments number
//     documents of the store they were written with); the index starts
//     empty, and the moved store.db is kept for a restore;
//   - index/store.db holding damaged pages (store.CheckFile passes, the page
//     walk fails): every record that can still be read is copied into a new
//     store.db (store.Salvage); the damaged file and the segment files are
//     moved aside; the documents whose records were lost are deleted and
//     reported; the next Open rebuilds the segments from the records
//     (replaying every document, minutes at 1 M) and the document catalog
//     from the index;
//   - index/store.db holding documents but no manifest (its page lost,
//     salvaged or not), which Open refuses: the manifest is rebuilt from
//     the records, the segment files are moved aside, and the next Open
//     rebuilds the segments and the catalog as above.
//
// forgetCatalog drops the document catalog's state from engine.db, so
// that the next Open rebuilds the catalog from the repaired index. The
// caller must not run rcpd on dir meanwhile.
func Repair(dir string, forgetCatalog func(engineDB string) error) (*RepairReport, error) {
	rep := &RepairReport{}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	q := filepath.Join(dir, "quarantine-"+stamp)
	move := func(rel string) error {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(q, rel)), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(dir, rel), filepath.Join(q, rel)); err != nil {
			return err
		}
		rep.Moved = append(rep.Moved, rel)
		return nil
	}
	engineDB := filepath.Join(dir, "engine.db")
	if _, err := os.Stat(engineDB); err == nil && damaged(engineDB) != nil {
		if err := move("engine.db"); err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
	}
	storeDB := filepath.Join("index", "store.db")
	_, statErr := os.Stat(filepath.Join(dir, storeDB))
	storeBad := statErr == nil && store.CheckFile(filepath.Join(dir, storeDB)) != nil
	pagesBad := statErr == nil && !storeBad && damaged(filepath.Join(dir, storeDB)) != nil
	noManifest := false
	if statErr == nil && !storeBad && !pagesBad {
		var err error
		if noManifest, err = index.LostManifest(filepath.Join(dir, "index")); err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
	}
	rebuild := pagesBad || noManifest // the index rebuilds its segments from the records
	switch {
	case storeBad:
		if err := move(storeDB); err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
	case pagesBad:
		salvage := filepath.Join(dir, storeDB+".salvage")
		os.Remove(salvage) // debris of an interrupted repair
		sr, err := store.Salvage(filepath.Join(dir, storeDB), salvage)
		if err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
		if err := move(storeDB); err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
		if err := os.Rename(salvage, filepath.Join(dir, storeDB)); err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
		rep.Salvaged = &Salvage{File: storeDB, Copied: sr.Copied, Lost: sr.Lost}
	}
	if storeBad || rebuild || errors.Is(statErr, os.ErrNotExist) {
		segs := filepath.Join("index", "segments")
		ents, _ := os.ReadDir(filepath.Join(dir, segs))
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".rseg") {
				if err := move(filepath.Join(segs, e.Name())); err != nil {
					return rep, fmt.Errorf("engine: repair: %w", err)
				}
			}
		}
	}
	if rebuild {
		lost, rebuilt, err := index.ResetForRebuild(context.Background(), filepath.Join(dir, "index"))
		if err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
		rep.ManifestRebuilt, rep.LostDocuments = rebuilt, lost
		if err := forgetCatalog(engineDB); err != nil {
			return rep, fmt.Errorf("engine: repair: %w", err)
		}
	}
	return rep, nil
}

// damaged reports a bbolt file that store.CheckFile refuses or whose page
// walk (the check rcpd runs after Open) fails.
func damaged(path string) error {
	if err := store.CheckFile(path); err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return store.VerifyPages(context.Background(), db)
}

// RepairHint tells the operator the way out of a refused Open or of
// damage found after it.
func RepairHint(err error) string {
	if errors.Is(err, store.ErrCorruptFile) || errors.Is(err, index.ErrOrphanSegments) || errors.Is(err, index.ErrNoManifest) {
		return "; the data directory was left untouched: restore the file from a backup, or stop rcpd and run `rcpd repair --data DIR`, which moves the damaged files aside (nothing is deleted) and, for damaged pages of index/store.db, salvages every readable record and reports the documents lost"
	}
	return ""
}
