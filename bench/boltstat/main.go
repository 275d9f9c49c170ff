// Command boltstat prints the size of every top-level bucket of a bbolt
// file (rcpd's engine.db or index/store.db) — keys, bytes in use and bytes
// of pages allocated — and the pages in use in all (the file itself grows
// in steps, so its length overstates what the data takes). It opens the
// file read-only: stop rcpd first.
//
//	boltstat DATA/engine.db
package main

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: boltstat FILE")
		os.Exit(2)
	}
	db, err := bolt.Open(os.Args[1], 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltstat:", err)
		os.Exit(1)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		fmt.Printf("%-14s %10s %12s %12s\n", "bucket", "keys", "inuse", "allocated")
		err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			fmt.Printf("%-14s %10d %12d %12d\n", name, s.KeyN, s.LeafInuse+s.BranchInuse, s.LeafAlloc+s.BranchAlloc)
			return nil
		})
		fmt.Printf("pages in use: %d bytes (file %d bytes)\n", tx.Size(), fileSize(os.Args[1]))
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "boltstat:", err)
		os.Exit(1)
	}
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}
