//go:build linux

package store

import (
	"bufio"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestOpenBoltReleasesWalkedPages: OpenBolt's integrity walk reads every
// page of the file, and the process does not keep them resident
// afterwards (it kept the whole file: RSS grew with the corpus).
func TestOpenBoltReleasesWalkedPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 4000)
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 4096 { // ≈ 16 MB of leaf pages
			binary.LittleEndian.PutUint64(val, uint64(i))
			if err := b.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err = OpenBolt(path, 0o600, &bolt.Options{ReadOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if rss := mappedRSS(t, path); rss > fi.Size()/4 {
		t.Fatalf("%d of the file's %d bytes stay resident after OpenBolt", rss, fi.Size())
	}
}

// mappedRSS sums the resident bytes of this process's mappings of path
// (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rss int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = fields[len(fields)-1] == path
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			rss += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rss
}
