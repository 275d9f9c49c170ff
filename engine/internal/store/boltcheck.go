package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// ErrCorruptFile reports a bbolt file that failed the checks run before
// bbolt maps it: bbolt trusts its file and panics, or faults on its memory
// map, when the file is damaged.
var ErrCorruptFile = errors.New("corrupt database file")

// bbolt's on-disk layout (go.etcd.io/bbolt internal/common): a 16-byte page
// header, then the meta record on pages 0 and 1.
const (
	boltPageHeader = 16
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltMetaSum    = 56 // bytes of meta covered by its FNV-64a checksum
	boltMetaLen    = 64
	boltNoFreelist = ^uint64(0)
	pageBranch     = 0x01
	pageLeaf       = 0x02
	pageFreelist   = 0x10
)

type boltMeta struct {
	pageSize        uint32
	root, freelist  uint64
	highWater, txid uint64
}

func readMeta(b []byte) (boltMeta, bool) {
	if len(b) < boltPageHeader+boltMetaLen {
		return boltMeta{}, false
	}
	m := b[boltPageHeader : boltPageHeader+boltMetaLen]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(m[:boltMetaSum])
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion || le.Uint64(m[56:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		highWater: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// CheckFile validates what bbolt trusts blindly in the file at path: a
// valid meta page (magic, version, checksum), a file long enough for the
// pages that meta claims (a short file faults the memory map), and root
// and freelist pages of the right kind. A missing or empty file passes
// (bbolt creates it).
func CheckFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return nil
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrCorruptFile, path, fmt.Sprintf(format, args...))
	}
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	var best boltMeta
	found := false
	if m, ok := readMeta(head); ok {
		best, found = m, true
	}
	// Page 1 holds the other meta; find it from page 0's page size, else
	// try the usual sizes.
	sizes := []uint32{4096, 8192, 16384, 32768, 65536, 1024, 2048}
	if found {
		sizes = []uint32{best.pageSize}
	}
	for _, ps := range sizes {
		buf := make([]byte, boltPageHeader+boltMetaLen)
		if _, err := f.ReadAt(buf, int64(ps)); err != nil {
			continue
		}
		if m, ok := readMeta(buf); ok && m.pageSize == ps && (!found || m.txid > best.txid) {
			best, found = m, true
		}
	}
	if !found {
		return corrupt("no valid meta page")
	}
	ps := int64(best.pageSize)
	if ps < 512 || ps&(ps-1) != 0 {
		return corrupt("page size %d", ps)
	}
	if need := int64(best.highWater) * ps; fi.Size() < need {
		return corrupt("%d bytes, its meta page needs %d (truncated)", fi.Size(), need)
	}
	checkPage := func(what string, id uint64, flags uint16) error {
		if id < 2 || id >= best.highWater {
			return corrupt("%s page %d out of range", what, id)
		}
		var hdr [boltPageHeader]byte
		if _, err := f.ReadAt(hdr[:], int64(id)*ps); err != nil {
			return corrupt("%s page %d unreadable: %v", what, id, err)
		}
		if binary.LittleEndian.Uint64(hdr[0:]) != id || binary.LittleEndian.Uint16(hdr[8:])&flags == 0 {
			return corrupt("%s page %d has a damaged header", what, id)
		}
		return nil
	}
	if err := checkPage("root", best.root, pageBranch|pageLeaf); err != nil {
		return err
	}
	if best.freelist != boltNoFreelist {
		if err := checkPage("freelist", best.freelist, pageFreelist); err != nil {
			return err
		}
	}
	return nil
}

// growStep is how far a bbolt file grows past the pages it needs when it
// grows (bbolt's AllocSize; its default of 16 MB left a 300 k-passage
// engine.db 9.6 MB longer than its pages in use). Each growth truncates
// and fsyncs the file once more: one per megabyte written, beside the
// fsync of every commit.
const growStep = 1 << 20

// Protect runs f, converting a panic or a memory fault (bbolt reading a
// damaged page of its memory map) into ErrCorruptFile naming path.
func Protect(path string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w %s: %v", ErrCorruptFile, path, r)
		}
	}()
	return f()
}

// OpenBolt opens a bbolt file after CheckFile, under Protect; init runs
// under the same protection (bucket creation, first reads), then
// VerifyPages visits every page, so that a damaged page is found now
// rather than by a request. The file grows in steps of growStep.
func OpenBolt(path string, mode os.FileMode, opts *bolt.Options, init func(*bolt.DB) error) (*bolt.DB, error) {
	db, err := OpenBoltUnverified(path, mode, opts, init)
	if err != nil {
		return nil, err
	}
	if err := VerifyPages(context.Background(), db); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// OpenBoltUnverified is OpenBolt without the page walk, which costs time
// in proportion to the file (≈ 0.5 s of CPU for the two files of 1 M
// passages): what bbolt needs to open the file safely (CheckFile: the meta
// pages, the file's length, the root and freelist pages) is checked, the
// branch and leaf pages are not. The caller runs VerifyPages later (rcpd
// does, in the background, while it serves) and until then reads the
// file under Protect: a damaged page then fails that read (bbolt panics on
// a page it does not recognise; a read past the mapping faults) instead of
// crashing the process.
func OpenBoltUnverified(path string, mode os.FileMode, opts *bolt.Options, init func(*bolt.DB) error) (*bolt.DB, error) {
	if err := CheckFile(path); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := Protect(path, func() error {
		var err error
		if db, err = bolt.Open(path, mode, opts); err != nil {
			return err
		}
		db.AllocSize = growStep
		if init != nil {
			return init(db)
		}
		return nil
	})
	if err != nil {
		if db != nil {
			_ = db.Close()
		}
		return nil, err
	}
	return db, nil
}

// VerifyPages visits every branch and leaf page of db once, under
// Protect: bbolt asserts each page it loads, so a damaged one is reported
// as ErrCorruptFile naming the file. The pages the walk mapped in are then
// released from the process (ReleaseMapped). bbolt's own Tx.Check cannot be
// used: it reads pages on a goroutine of its own, where a panic cannot be
// recovered. The walk is one read transaction: while it runs, a commit
// that must grow the file's mapping waits for it (bbolt remaps only without
// readers). It stops early when ctx ends.
func VerifyPages(ctx context.Context, db *bolt.DB) error {
	err := Protect(db.Path(), func() error {
		return db.View(func(tx *bolt.Tx) error {
			n := 0
			return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walkBucket(ctx, b, &n) })
		})
	})
	ReleaseMapped(db)
	return err
}

// walkBucket visits every key of b, nested buckets included, checking ctx
// every 4096 keys.
func walkBucket(ctx context.Context, b *bolt.Bucket, n *int) error {
	return b.ForEach(func(k, v []byte) error {
		if *n++; *n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return walkBucket(ctx, nb, n)
			}
		}
		return nil
	})
}
