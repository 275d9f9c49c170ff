package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SalvageReport says what Salvage copied and what it could not read.
type SalvageReport struct {
	Copied int      // values copied (nested buckets' included)
	Lost   []string // each stretch of keys that could not be read, precisely
}

// salvageBatch bounds the values Salvage holds and writes at once.
const salvageBatch = 10000

// Salvage copies every record of the bbolt file src that can still be
// read into a new bbolt file dst, for a file whose pages are damaged
// (bbolt keeps no page checksums: a damaged page panics or faults when
// read, which Protect turns into an error). Each bucket is read forward
// until the first unreadable page and then backward from its end down to
// the last key read, so that one damaged leaf loses only the keys it held
// (a damaged branch page, the keys below it); the stretches not copied are
// reported by their bounding keys. Buckets keep their sequences. src is
// only read.
func Salvage(src, dst string) (rep SalvageReport, err error) {
	in, err := bolt.Open(src, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return rep, fmt.Errorf("store: salvage %s: %w", src, err)
	}
	defer in.Close()
	if _, err := os.Stat(dst); err == nil {
		return rep, fmt.Errorf("store: salvage: %s exists", dst)
	}
	out, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoSync: true})
	if err != nil {
		return rep, fmt.Errorf("store: salvage: %w", err)
	}
	defer func() {
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	s := salvager{in: in, out: out, src: src, rep: &rep}
	if err := s.bucket(nil); err != nil {
		return rep, err
	}
	return rep, nil
}

type salvager struct {
	in, out *bolt.DB
	src     string
	rep     *SalvageReport
}

type kv struct{ k, v []byte }

// bucket copies the bucket at path (nil: the top level, whose values are
// all buckets) and, recursively, its nested buckets.
func (s *salvager) bucket(path [][]byte) error {
	var nested [][]byte
	var batch []kv
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.out.Update(func(tx *bolt.Tx) error {
			b, err := createPath(tx, path)
			if err != nil {
				return err
			}
			for _, e := range batch {
				if err := b.Put(e.k, e.v); err != nil {
					return err
				}
			}
			return nil
		})
		s.rep.Copied += len(batch)
		batch = batch[:0]
		return err
	}
	visit := func(k, v []byte) error {
		if v == nil {
			nested = append(nested, bytes.Clone(k))
			return nil
		}
		batch = append(batch, kv{bytes.Clone(k), bytes.Clone(v)})
		if len(batch) >= salvageBatch {
			return flush()
		}
		return nil
	}
	// Forward, up to the first unreadable page; then backward from the
	// end, down to the last key read forward (or to the damage).
	last, seq, fwd, err := s.pass(path, true, nil, visit)
	if err != nil {
		return err
	}
	if fwd != nil {
		first, _, _, err := s.pass(path, false, last, visit)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("bucket %s: the keys after %s", pathName(path), keyName(last))
		if first != nil {
			what += " and before " + keyName(first)
		} else {
			what += " to its end"
		}
		s.rep.Lost = append(s.rep.Lost, what+": "+fwd.Error())
	}
	if err := flush(); err != nil {
		return err
	}
	if path != nil {
		if err := s.out.Update(func(tx *bolt.Tx) error {
			b, err := createPath(tx, path)
			if err != nil {
				return err
			}
			return b.SetSequence(seq)
		}); err != nil {
			return err
		}
	}
	for _, name := range nested {
		if err := s.bucket(append(path[:len(path):len(path)], name)); err != nil {
			return err
		}
	}
	return nil
}

// pass reads the bucket at path under Protect, forward from its first key,
// or backward from its last down to the key after stop, handing each value
// to visit; it returns the last key read, the bucket's sequence, the
// damage that ended the pass early (nil: it reached its end) and visit's
// error (writing dst, not damage of src).
func (s *salvager) pass(path [][]byte, forward bool, stop []byte, visit func(k, v []byte) error) (reached []byte, seq uint64, damage, err error) {
	damage = Protect(s.src, func() error {
		return s.in.View(func(tx *bolt.Tx) error {
			c, sq := cursorAt(tx, path)
			seq = sq
			first, next := c.First, c.Next
			if !forward {
				first, next = c.Last, c.Prev
			}
			for k, v := first(); k != nil && (forward || stop == nil || bytes.Compare(k, stop) > 0); k, v = next() {
				if err = visit(k, v); err != nil {
					return err
				}
				reached = bytes.Clone(k)
			}
			return nil
		})
	})
	if err != nil {
		damage = nil
	}
	return reached, seq, damage, err
}

// cursorAt returns a cursor over the bucket at path (nil: the top level)
// and its sequence.
func cursorAt(tx *bolt.Tx, path [][]byte) (*bolt.Cursor, uint64) {
	if len(path) == 0 {
		return tx.Cursor(), 0
	}
	b := tx.Bucket(path[0])
	for _, name := range path[1:] {
		b = b.Bucket(name)
	}
	return b.Cursor(), b.Sequence()
}

func createPath(tx *bolt.Tx, path [][]byte) (*bolt.Bucket, error) {
	b, err := tx.CreateBucketIfNotExists(path[0])
	for _, name := range path[1:] {
		if err != nil {
			return nil, err
		}
		b, err = b.CreateBucketIfNotExists(name)
	}
	return b, err
}

func pathName(path [][]byte) string {
	if len(path) == 0 {
		return "(top level)"
	}
	var b bytes.Buffer
	for i, p := range path {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(keyName(p))
	}
	return b.String()
}

// keyName prints a key as text when it is printable, else in hex.
func keyName(k []byte) string {
	if k == nil {
		return "the start"
	}
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("0x%x", k)
		}
	}
	return fmt.Sprintf("%q", k)
}

// DropUndecodable deletes the document records that do not decode — a
// store salvaged from a damaged file can hold a record whose bytes were
// damaged in place — and returns their numbers.
func (t *Tx) DropUndecodable() ([]uint64, error) {
	docs := t.tx.Bucket(bktDocs)
	var bad [][]byte
	err := docs.ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) < 8 {
			bad = append(bad, bytes.Clone(k))
		} else if _, _, err := t.s.DecodeRecord(v[8:], true); err != nil {
			bad = append(bad, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, k := range bad {
		if err := docs.Delete(k); err != nil {
			return seqs, err
		}
		if len(k) == 8 {
			seqs = append(seqs, binary.BigEndian.Uint64(k))
		}
	}
	return seqs, nil
}

// Highest returns the highest document number the store mentions — in a
// record, the live-id map, the killed journal or a tombstone — and the
// highest version a tombstone carries: what a manifest lost to damage must
// exceed (Manifest.NextSeq, Manifest.Version) so that no number or
// version is handed out twice.
func (r *ReadTx) Highest() (seq, version uint64, err error) {
	last := func(bkt []byte) []byte {
		k, _ := r.tx.Bucket(bkt).Cursor().Last()
		return k
	}
	if k := last(bktDocs); len(k) == 8 {
		seq = binary.BigEndian.Uint64(k)
	}
	if k := last(bktKilled); len(k) == 8 {
		seq = max(seq, binary.BigEndian.Uint64(k))
	}
	if k := last(bktDead); len(k) == 16 {
		version = binary.BigEndian.Uint64(k)
	}
	err = r.tx.Bucket(bktDead).ForEach(func(k, _ []byte) error {
		if len(k) != 16 {
			return fmt.Errorf("%w: tombstone %x", ErrCorrupt, k)
		}
		seq = max(seq, binary.BigEndian.Uint64(k[8:]))
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	err = r.ForEachLiveSeq(func(s uint64) error {
		seq = max(seq, s)
		return nil
	})
	return seq, version, err
}
