package index

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rcpgo/rcpgo/engine/store"
)

// ErrNoManifest: a record store holds no manifest (see ResetForRebuild).
var ErrNoManifest = errors.New("index: the record store holds no manifest")

// ResetForRebuild prepares the record store of the index in dir — one
// salvaged from a damaged file (store.Salvage) — so that the next Open
// rebuilds every segment from the records: records that do not decode are
// dropped, documents whose record is missing are deleted (their ids are
// returned, sorted),
// the deletions saved at the last clean close are dropped, and the
// manifest lists no segment and nothing flushed, so that Open replays every
// live record. The caller moves the segment files away first: they number
// documents as the damaged store did. A new version is published (the
// results change).
func ResetForRebuild(ctx context.Context, dir string) (lost []string, err error) {
	st, err := store.OpenUnverified(filepath.Join(dir, storeFile))
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	err = st.Update(ctx, func(tx *store.Tx) error {
		lost = lost[:0]
		man, found, err := tx.Manifest()
		if err != nil {
			return err
		}
		if !found {
			return ErrNoManifest
		}
		if _, err := tx.DropUndecodable(); err != nil {
			return err
		}
		type unit struct {
			id  string
			seq uint64
		}
		var bad []unit
		if err := tx.ForEachLive(func(id string, seq uint64) error {
			if d, err := tx.Doc(seq); err != nil || d == nil {
				bad = append(bad, unit{id, seq})
			}
			return nil
		}); err != nil {
			return err
		}
		man.Version++
		for _, u := range bad {
			if err := tx.Kill(u.id, u.seq, man.Version, false); err != nil {
				return err
			}
			lost = append(lost, u.id)
		}
		if _, err := tx.PurgeDead(man.Version); err != nil { // offline: no snapshot is retained
			return err
		}
		man.Segments, man.FlushedSeq = nil, 0
		if err := tx.PutDeletions(nil); err != nil {
			return err
		}
		return tx.PutManifest(man)
	})
	if err != nil {
		return nil, fmt.Errorf("index: preparing the rebuild of %s: %w", dir, err)
	}
	return lost, nil
}
