// Package store is the engine's durable record store, on bbolt: documents
// (id, title, text, metadata, source, chunk lineage) keyed by their document
// number, the external-id → document-number map, chunk parent → children
// links, tombstones kept for retained snapshots, and the index manifest.
//
// Every Update is one bbolt transaction, fsynced before it returns: a change
// is either wholly durable or absent after a crash.
package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
	bolt "go.etcd.io/bbolt"
)

// Segment describes one published segment file.
type Segment struct {
	Name   string `json:"name"`
	MinSeq uint64 `json:"minSeq"`
	MaxSeq uint64 `json:"maxSeq"`
	Docs   int    `json:"docs"`
	Size   int64  `json:"size"`
	CRC    uint32 `json:"crc"`
}

// Manifest is the committed state of an index: which segment files hold
// which documents, and the counters that name the next version and document.
type Manifest struct {
	Format     int    `json:"format"`
	Epoch      string `json:"epoch"`      // random per index, part of version strings
	Version    uint64 `json:"version"`    // last committed version
	NextSeq    uint64 `json:"nextSeq"`    // next document number to assign
	FlushedSeq uint64 `json:"flushedSeq"` // every live doc with seq ≤ this is in Segments
	NextSegID  uint64 `json:"nextSegId"`
	Analyzer   string `json:"analyzer"` // analyzer fingerprint
	// ScreenRules is the injection-screen rules version of every stored
	// record's verdict (Facts.ScreenRules).
	ScreenRules string    `json:"screenRules,omitempty"`
	Segments    []Segment `json:"segments"`
	// Killed: the killed journal (ForEachKilled) holds every killed
	// document a segment file may hold. An older version drops the field
	// when it rewrites the manifest (its kills are not journaled), and the
	// index then rebuilds the journal from the live-id map.
	Killed bool `json:"killed,omitempty"`
}

// idsFill is the fill of pages split by id-keyed inserts: nearly full, with
// room left for an occasional insert out of order.
const idsFill = 0.9

var (
	bktDocs     = []byte("docs")
	bktIDs      = []byte("ids")
	bktChildren = []byte("children")
	bktDead     = []byte("dead")
	bktMeta     = []byte("meta")
	keyManifest = []byte("manifest")
)

// ErrCorrupt reports a record that cannot be decoded.
var ErrCorrupt = errors.New("store: corrupt record")

// Store is an open record store. Safe for concurrent use.
type Store struct {
	db    *bolt.DB
	codec codecRef
}

// ReleaseMapped releases the store's mapped pages from the process's
// resident set (see the function ReleaseMapped): for callers that have
// just read all of it.
func (s *Store) ReleaseMapped() { ReleaseMapped(s.db) }

// Open opens (creating if needed) the store file at path, after checking
// every page of it (VerifyPages). It fails rather than waits if another
// process holds the file.
func Open(path string) (*Store, error) {
	s, err := OpenUnverified(path)
	if err != nil {
		return nil, err
	}
	if err := s.VerifyPages(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// VerifyPages checks every page of the store's file (the function
// VerifyPages): for a store opened with OpenUnverified.
func (s *Store) VerifyPages(ctx context.Context) error { return VerifyPages(ctx, s.db) }

// OpenUnverified is Open without the page walk (OpenBoltUnverified): the
// caller runs VerifyPages later and reads the store under Protect until
// then.
func OpenUnverified(path string) (*Store, error) {
	db, err := OpenBoltUnverified(path, 0o644, &bolt.Options{
		Timeout:      2 * time.Second,
		FreelistType: bolt.FreelistMapType,
		// The freelist is written with every commit (bbolt's default): without
		// it, every open walks all pages of the file to rebuild it (9.9 s and
		// the whole file resident on a 1.6 GB store of 1 M passages, against
		// under 1 ms with it).
		NoFreelistSync: false,
	}, func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bktDocs, bktIDs, bktChildren, bktDead, bktMeta, bktKilled} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: db}
	var dicts []storedDict
	err = Protect(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			var err error
			dicts, err = loadDicts(tx)
			return err
		})
	})
	var c *codec
	if err == nil {
		c, err = newCodec(dicts)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s.codec.c.Store(c)
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Update runs fn in one write transaction and commits it durably (fsync)
// unless fn returns an error, in which case nothing changes. A canceled ctx
// aborts before commit.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(btx *bolt.Tx) error {
		if err := fn(&Tx{ReadTx{btx, s}}); err != nil {
			return err
		}
		return ctx.Err()
	})
}

// View runs fn in a read transaction (a consistent snapshot of the store).
func (s *Store) View(fn func(*ReadTx) error) error {
	return s.db.View(func(btx *bolt.Tx) error { return fn(&ReadTx{btx, s}) })
}

// BeginRead starts a read transaction; the caller must Close it.
func (s *Store) BeginRead() (*ReadTx, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("store: begin: %w", err)
	}
	return &ReadTx{tx, s}, nil
}

// Close ends a transaction from BeginRead.
func (r *ReadTx) Close() error { return r.tx.Rollback() }

// ReadTx reads a consistent snapshot of the store.
type ReadTx struct {
	tx *bolt.Tx
	s  *Store
}

// Tx is a write transaction.
type Tx struct{ ReadTx }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Manifest returns the committed manifest, and false if none was written yet.
func (r *ReadTx) Manifest() (Manifest, bool, error) {
	var m Manifest
	v := r.tx.Bucket(bktMeta).Get(keyManifest)
	if v == nil {
		return m, false, nil
	}
	if err := json.Unmarshal(v, &m); err != nil {
		return m, false, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	return m, true, nil
}

// LookupID returns the live document number of external id.
func (r *ReadTx) LookupID(id string) (uint64, bool) {
	v := r.tx.Bucket(bktIDs).Get([]byte(id))
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

// DocBytes returns the encoded document stored under seq and the version
// that added it; nil when absent. The bytes are valid only inside the
// transaction.
func (r *ReadTx) DocBytes(seq uint64) (enc []byte, addedAt uint64) {
	v := r.tx.Bucket(bktDocs).Get(seqKey(seq))
	if len(v) < 8 {
		return nil, 0
	}
	return v[8:], binary.BigEndian.Uint64(v[:8])
}

// Doc returns the document stored under seq, or nil when it is absent.
func (r *ReadTx) Doc(seq uint64) (*search.Document, error) {
	d, _, err := r.Record(seq, true)
	return d, err
}

// Record returns the document stored under seq and its facts (nil when
// absent); withText false leaves the text unread.
func (r *ReadTx) Record(seq uint64, withText bool) (*search.Document, search.Facts, error) {
	enc, _ := r.DocBytes(seq)
	if enc == nil {
		return nil, search.Facts{}, nil
	}
	return r.s.DecodeRecord(enc, withText)
}

// RewriteRecords passes every stored record to fn, in document-number
// order, and stores what fn returns in its place (nil: unchanged). It
// commits every batch of records in a transaction of its own, so a crash
// leaves some records rewritten and the rest as they were: fn must accept
// both forms (a migration is restartable).
//
// fn runs outside any transaction: each batch is copied out in a short
// read transaction, rewritten, and then stored in a write transaction that
// holds only the puts. bbolt has one writer at a time, and a recompression
// spends milliseconds of CPU per hundred records, so computing inside the
// write transaction held every concurrent commit (index/add) for the whole
// batch. A record that changed or went away meanwhile (a purge) is left as
// it now is: the rewrite never resurrects or overwrites newer bytes.
func (s *Store) RewriteRecords(ctx context.Context, fn func(seq uint64, enc []byte) ([]byte, error)) (rewritten int, err error) {
	for from, done := uint64(0), false; !done; {
		if err := ctx.Err(); err != nil {
			return rewritten, err
		}
		var recs []rewriteRec
		if recs, from, done, err = s.readBatch(from); err != nil {
			return rewritten, err
		}
		var puts []rewriteRec
		for _, r := range recs {
			enc, err := fn(r.seq, r.old[8:])
			if err != nil {
				return rewritten, fmt.Errorf("store: rewrite document %d: %w", r.seq, err)
			}
			if enc != nil {
				r.new = make([]byte, 8+len(enc))
				copy(r.new, r.old[:8])
				copy(r.new[8:], enc)
				puts = append(puts, r)
			}
		}
		n, err := s.putUnchanged(ctx, puts)
		rewritten += n
		if err != nil {
			return rewritten, err
		}
	}
	return rewritten, nil
}

// rewriteBatch bounds the records RewriteRecords holds and writes at once.
const rewriteBatch = 1000

// rewriteRec is a stored record as read (old, key prefix included) and
// what replaces it.
type rewriteRec struct {
	seq      uint64
	old, new []byte
}

// readBatch copies out up to rewriteBatch records from document number
// from on; it returns where the next batch starts and whether this one
// reached the end.
func (s *Store) readBatch(from uint64) (recs []rewriteRec, next uint64, done bool, err error) {
	next = from
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bktDocs).Cursor()
		k, v := c.Seek(seqKey(from))
		for ; k != nil && len(recs) < rewriteBatch; k, v = c.Next() {
			if len(k) != 8 || len(v) < 8 {
				return fmt.Errorf("%w: doc key %x", ErrCorrupt, k)
			}
			seq := binary.BigEndian.Uint64(k)
			recs = append(recs, rewriteRec{seq: seq, old: bytes.Clone(v)})
			next = seq + 1
		}
		done = k == nil
		return nil
	})
	return recs, next, done, err
}

// putUnchanged stores each record's new bytes where the stored bytes are
// still its old ones, in one transaction (none: no commit, no fsync), and
// returns how many it replaced.
func (s *Store) putUnchanged(ctx context.Context, puts []rewriteRec) (int, error) {
	if len(puts) == 0 {
		return 0, nil
	}
	n := 0
	err := s.Update(ctx, func(tx *Tx) error {
		n = 0
		docs := tx.tx.Bucket(bktDocs)
		docs.FillPercent = 1
		for _, p := range puts {
			if !bytes.Equal(docs.Get(seqKey(p.seq)), p.old) {
				continue
			}
			if err := docs.Put(seqKey(p.seq), p.new); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return errNothingToWrite // roll back: no commit, no fsync
		}
		return nil
	})
	if errors.Is(err, errNothingToWrite) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

var errNothingToWrite = errors.New("store: nothing to write")

// ForEachLive calls fn for every live external id and its document number.
func (r *ReadTx) ForEachLive(fn func(id string, seq uint64) error) error {
	return r.tx.Bucket(bktIDs).ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: id %q", ErrCorrupt, k)
		}
		return fn(string(k), binary.BigEndian.Uint64(v))
	})
}

// keyDeletions held the index's deletion sets saved at a clean close by
// versions before the killed journal served every Open.
var keyDeletions = []byte("deletions")

// DropSavedDeletions removes the deletion sets an earlier version saved.
func (t *Tx) DropSavedDeletions() error { return t.tx.Bucket(bktMeta).Delete(keyDeletions) }

// keyWriteNames holds the names a caller gave the last add that carried
// some (PutWriteNames).
var keyWriteNames = []byte("writenames")

// PutWriteNames records names in this transaction, replacing the last
// ones: for a caller that keeps state derived from the documents it adds in
// another file, committed at the same time as this store, and after a crash
// must know which documents that state may lag on (the engine's catalog,
// engine/internal/catalog/recover.go). Names must not contain NUL.
func (t *Tx) PutWriteNames(names []string) error {
	return t.tx.Bucket(bktMeta).Put(keyWriteNames, []byte(strings.Join(names, "\x00")))
}

// WriteNames returns the names of the last PutWriteNames (nil if none).
func (r *ReadTx) WriteNames() []string {
	v := r.tx.Bucket(bktMeta).Get(keyWriteNames)
	if len(v) == 0 {
		return nil
	}
	return strings.Split(string(v), "\x00")
}

// ForEachLiveSeq calls fn with the document number of every live id, in
// id order (ForEachLive without making a string of each id).
func (r *ReadTx) ForEachLiveSeq(fn func(seq uint64) error) error {
	return r.tx.Bucket(bktIDs).ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: id %q", ErrCorrupt, k)
		}
		return fn(binary.BigEndian.Uint64(v))
	})
}

// ForEachDocFrom calls fn for every stored document with seq ≥ from, in
// seq order.
func (r *ReadTx) ForEachDocFrom(from uint64, fn func(seq uint64, d *search.Document) error) error {
	c := r.tx.Bucket(bktDocs).Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		if len(k) != 8 || len(v) < 8 {
			return fmt.Errorf("%w: doc key %x", ErrCorrupt, k)
		}
		d, _, err := r.s.DecodeRecord(v[8:], true)
		if err != nil {
			return err
		}
		if err := fn(binary.BigEndian.Uint64(k), d); err != nil {
			return err
		}
	}
	return nil
}

// Children returns the ids of the live chunks of parent.
func (r *ReadTx) Children(parent string) []string {
	var out []string
	prefix := append([]byte(parent), 0)
	c := r.tx.Bucket(bktChildren).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, string(k[len(prefix):]))
	}
	return out
}

// Counts returns the number of live ids and stored document records.
func (r *ReadTx) Counts() (live, stored int) {
	return r.tx.Bucket(bktIDs).Stats().KeyN, r.tx.Bucket(bktDocs).Stats().KeyN
}

// PutManifest writes the manifest.
func (t *Tx) PutManifest(m Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("store: encode manifest: %w", err)
	}
	return t.tx.Bucket(bktMeta).Put(keyManifest, b)
}

// PutDoc stores enc (an EncodeDoc or Store.EncodeDoc encoding) under seq, added at version,
// and points its id (and its parent's child link, for chunks) at seq.
func (t *Tx) PutDoc(seq, version uint64, d *search.Document, enc []byte) error {
	v := make([]byte, 8+len(enc))
	binary.BigEndian.PutUint64(v, version)
	copy(v[8:], enc)
	docs := t.tx.Bucket(bktDocs)
	// Document numbers only grow: pages split full instead of half full
	// (bbolt's default suits random inserts and doubles this bucket).
	docs.FillPercent = 1
	if err := docs.Put(seqKey(seq), v); err != nil {
		return fmt.Errorf("store: put doc: %w", err)
	}
	ids := t.tx.Bucket(bktIDs)
	// Ids arrive mostly ascending from some point of the key space (d1,
	// d2, … d10, d11, …): at bbolt's default of half full, those pages
	// were left half empty (18 MB allocated for 9.4 MB of 300 k ids).
	ids.FillPercent = idsFill
	if err := ids.Put([]byte(d.ID), seqKey(seq)); err != nil {
		return fmt.Errorf("store: put id: %w", err)
	}
	if d.Chunk != nil && d.Chunk.DocID != "" {
		if err := t.tx.Bucket(bktChildren).Put(childKey(d.Chunk.DocID, d.ID), nil); err != nil {
			return fmt.Errorf("store: put child: %w", err)
		}
	}
	return nil
}

func childKey(parent, child string) []byte {
	k := make([]byte, 0, len(parent)+1+len(child))
	k = append(k, parent...)
	k = append(k, 0)
	return append(k, child...)
}

// Kill removes the live mapping of id (document number seq) at version: the
// record stays readable for snapshots older than version until PurgeDead.
// When replaced is true the id is about to be re-pointed, so only the
// tombstone is written.
func (t *Tx) Kill(id string, seq, version uint64, replaced bool) error {
	if enc, _ := t.DocBytes(seq); enc != nil {
		if d, _, err := t.s.DecodeRecord(enc, false); err == nil && d.Chunk != nil && d.Chunk.DocID != "" {
			if err := t.tx.Bucket(bktChildren).Delete(childKey(d.Chunk.DocID, id)); err != nil {
				return fmt.Errorf("store: delete child link: %w", err)
			}
		}
	}
	if !replaced {
		if err := t.tx.Bucket(bktIDs).Delete([]byte(id)); err != nil {
			return fmt.Errorf("store: delete id: %w", err)
		}
	}
	if err := t.tx.Bucket(bktKilled).Put(seqKey(seq), nil); err != nil {
		return fmt.Errorf("store: journal kill: %w", err)
	}
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, version)
	binary.BigEndian.PutUint64(k[8:], seq)
	return t.tx.Bucket(bktDead).Put(k, nil)
}

// PurgeDead deletes the records of documents killed at or before version
// (no retained snapshot can see them any more) and returns their numbers.
func (t *Tx) PurgeDead(upTo uint64) ([]uint64, error) {
	c := t.tx.Bucket(bktDead).Cursor()
	docs := t.tx.Bucket(bktDocs)
	var seqs []uint64
	for k, _ := c.First(); k != nil; k, _ = c.First() {
		if len(k) != 16 {
			return seqs, fmt.Errorf("%w: tombstone %x", ErrCorrupt, k)
		}
		if binary.BigEndian.Uint64(k) > upTo {
			break
		}
		if err := docs.Delete(k[8:]); err != nil {
			return seqs, err
		}
		if err := c.Delete(); err != nil {
			return seqs, err
		}
		seqs = append(seqs, binary.BigEndian.Uint64(k[8:]))
	}
	return seqs, nil
}
