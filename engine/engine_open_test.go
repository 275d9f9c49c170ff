package engine

import (
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/engine/internal/derive"
	bolt "go.etcd.io/bbolt"
)

// TestInitEngineDBReadsACurrentFile (issue 15, acceptance 1): engine.db
// is written at its first open (buckets, dense log layout) and only read
// at later ones — a commit there fsyncs and rewrites bbolt's freelist, a
// cost that grew with the file at every start.
func TestInitEngineDBReadsACurrentFile(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "engine.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	txid := func() int {
		var id int
		_ = db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	if _, err := (&Engine{}).initEngineDB(db); err != nil {
		t.Fatal(err)
	}
	if txid() == 0 {
		t.Fatal("first init wrote nothing")
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.Bucket([]byte("denseops")).NextSequence()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := txid()
	e := &Engine{}
	if _, err := e.initEngineDB(db); err != nil {
		t.Fatal(err)
	}
	if txid() != before {
		t.Fatalf("init of a current engine.db committed (tx %d → %d)", before, txid())
	}
	d, err := derive.New(derive.Options{DB: db})
	if err != nil || d.Seq() != 1 {
		t.Fatalf("last dense op seq %d (%v), want 1", d.Seq(), err)
	}
}
