package graph

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rcpgo/rcpgo/internal/atomicfile"
)

// snapshotMagic heads a graph snapshot; the version changes with the
// encoding or with the extraction rules (a snapshot made by other rules is
// rebuilt, not reused).
const snapshotMagic = "rcpgo-graph-v2\n"

// ErrSnapshot reports a snapshot that is unreadable, of another format, or
// fails its checksum: the caller rebuilds the graph from the index.
var ErrSnapshot = errors.New("graph: unusable snapshot")

type savedUnit struct {
	ID, Parent string
	Ex         Extraction
}

// extraction rebuilds a unit's Extraction from the live graph (the caller
// holds the read lock).
func (g *Graph) extraction(u *unit) Extraction {
	ex := Extraction{Lead: u.lead, Nodes: make([]Mention, len(u.nodes)), Terms: u.terms}
	pos := make(map[int32]int, len(u.nodes))
	for i, n := range u.nodes {
		ex.Nodes[i] = Mention{Name: g.nodes[n].name, Kind: g.nodes[n].kind}
		pos[n] = i
	}
	for _, grp := range u.groups {
		idx := make([]int, len(grp))
		for i, n := range grp {
			idx[i] = pos[n]
		}
		ex.Groups = append(ex.Groups, idx)
	}
	for _, t := range u.triples {
		ex.Triples = append(ex.Triples, Triple{S: pos[t.s], O: pos[t.o], Pred: t.pred, Start: t.start, End: t.end})
	}
	return ex
}

// Save writes a snapshot of the graph to path atomically (temp file,
// fsync, rename, fsync of the directory): a crash leaves the old snapshot
// or the new one, never a torn file.
func (g *Graph) Save(path string) error {
	var body bytes.Buffer
	enc := gob.NewEncoder(&body)
	g.mu.RLock()
	err := enc.Encode(g.live)
	for _, u := range g.units {
		if err != nil {
			break
		}
		if u != nil {
			err = enc.Encode(savedUnit{ID: u.id, Parent: u.parent, Ex: g.extraction(u)})
		}
	}
	g.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("graph: encode snapshot: %w", err)
	}
	if err := atomicfile.WriteFile(path, atomicfile.Seal(snapshotMagic, body.Bytes())); err != nil {
		return fmt.Errorf("graph: save: %w", err)
	}
	return nil
}

// Load replaces the graph's contents with the snapshot at path. A missing
// file is fs.ErrNotExist; a damaged or foreign one is ErrSnapshot.
func (g *Graph) Load(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	body, err := atomicfile.Open(snapshotMagic, data)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSnapshot, path, err)
	}
	dec := gob.NewDecoder(bufio.NewReader(bytes.NewReader(body)))
	var n int
	if err := dec.Decode(&n); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSnapshot, path, err)
	}
	fresh := New(g.an)
	for i := 0; i < n; i++ {
		var su savedUnit
		if err := dec.Decode(&su); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%w: %s: unit %d: %v", ErrSnapshot, path, i, err)
		}
		fresh.Put(su.ID, su.Parent, su.Ex)
	}
	g.mu.Lock()
	g.nodes, g.byKey, g.byWord, g.freeNodes, g.adj = fresh.nodes, fresh.byKey, fresh.byWord, fresh.freeNodes, fresh.adj
	g.units, g.unitByID, g.byParent, g.freeUnits, g.live = fresh.units, fresh.unitByID, fresh.byParent, fresh.freeUnits, fresh.live
	g.mu.Unlock()
	g.version.Add(1)
	return nil
}
