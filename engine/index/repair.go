package index

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rcpgo/rcpgo/engine/internal/store"
)

// ErrNoManifest: the record store holds documents but no manifest (lost to
// damage): Open refuses it, ResetForRebuild rebuilds one.
var ErrNoManifest = errors.New("index: the record store holds documents but no manifest")

// ResetForRebuild prepares the record store of the index in dir — one
// salvaged from a damaged file (store.Salvage) — so that the next Open
// rebuilds every segment from the records: records that do not decode are
// dropped, documents whose record is missing are deleted (their ids are
// returned, sorted), the killed journal is emptied, and the manifest lists no segment and nothing flushed, so that Open replays every
// live record. The caller moves the segment files away first: they number
// documents as the damaged store did. A new version is published (the
// results change).
//
// A manifest lost with the damage is rebuilt (rebuilt is true): document
// numbers and versions continue above every one the store still mentions,
// under a new epoch (versions and cursors issued before do not resolve);
// the analyzer is the one configured at the next Open and every record is
// screened again there, since neither is known any more.
func ResetForRebuild(ctx context.Context, dir string) (lost []string, rebuilt bool, err error) {
	st, err := store.OpenUnverified(filepath.Join(dir, storeFile))
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	err = st.Update(ctx, func(tx *store.Tx) error {
		lost, rebuilt = lost[:0], false
		man, found, err := tx.Manifest()
		if err != nil {
			return err
		}
		if !found {
			if man, err = rebuiltManifest(&tx.ReadTx); err != nil {
				return err
			}
			rebuilt = true
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
		if err := tx.DropSavedDeletions(); err != nil {
			return err
		}
		// No segment file holds a document any more: a killed entry left
		// would never be pruned.
		if err := tx.ResetKilled(nil); err != nil {
			return err
		}
		man.Killed = true
		return tx.PutManifest(man)
	})
	if err != nil {
		return nil, false, fmt.Errorf("index: preparing the rebuild of %s: %w", dir, err)
	}
	return lost, rebuilt, nil
}

// rebuiltManifest is the manifest of a store that lost its own: numbers
// and versions above every one the store mentions, a new epoch, and the
// analyzer and screen rules left unknown (Open adopts its configured
// analyzer for a manifest with nothing flushed, and re-screens).
func rebuiltManifest(tx *store.ReadTx) (store.Manifest, error) {
	seq, version, err := tx.Highest()
	if err != nil {
		return store.Manifest{}, err
	}
	var e [4]byte
	rand.Read(e[:])
	return store.Manifest{Format: formatLevel, Epoch: hex.EncodeToString(e[:]), Version: version,
		NextSeq: seq + 1, NextSegID: 1, Killed: true}, nil
}

// LostManifest reports whether the record store of the index in dir holds
// documents but no manifest: a store damaged where its manifest was, which
// Open refuses (ErrNoManifest) and ResetForRebuild repairs.
func LostManifest(dir string) (bool, error) {
	st, err := store.OpenUnverified(filepath.Join(dir, storeFile))
	if err != nil {
		return false, err
	}
	defer st.Close()
	var lost bool
	err = st.View(func(tx *store.ReadTx) error {
		_, _, records, err := manifestOf(tx)
		lost = records > 0
		return err
	})
	return lost, err
}

// manifestOf reads the manifest of the store tx reads; without one, it
// counts the document records (live and superseded) the store holds all
// the same: records > 0 is a manifest lost to damage, which Open refuses
// (ErrNoManifest) and ResetForRebuild rebuilds.
func manifestOf(tx *store.ReadTx) (man store.Manifest, found bool, records int, err error) {
	if man, found, err = tx.Manifest(); err != nil || found {
		return man, found, 0, err
	}
	live, stored := tx.Counts()
	return man, false, live + stored, nil
}
