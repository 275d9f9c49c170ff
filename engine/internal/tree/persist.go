package tree

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"os"

	"github.com/rcpgo/rcpgo/internal/atomicfile"
)

// snapshotMagic heads a tree snapshot (changes with the encoding).
const snapshotMagic = "rcpgo-tree-v1\n"

// ErrSnapshot reports an unreadable, foreign or damaged snapshot: the
// caller rebuilds the tree.
var ErrSnapshot = errors.New("tree: unusable snapshot")

type saved struct {
	Version string
	Levels  [][]*Node
	IDs     []string // leaves by index
	NodeOf  [][]int32
}

// Save writes the tree to path atomically.
func (t *Tree) Save(path string) error {
	ids := make([]string, len(t.leafIdx))
	for id, i := range t.leafIdx {
		ids[i] = id
	}
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(saved{Version: t.Version, Levels: t.Levels, IDs: ids, NodeOf: t.nodeOf}); err != nil {
		return fmt.Errorf("tree: encode: %w", err)
	}
	if err := atomicfile.WriteFile(path, atomicfile.Seal(snapshotMagic, body.Bytes())); err != nil {
		return fmt.Errorf("tree: save: %w", err)
	}
	return nil
}

// Load reads a snapshot written by Save. A missing file is
// fs.ErrNotExist; a damaged or inconsistent one is ErrSnapshot.
func Load(path string) (*Tree, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	body, err := atomicfile.Open(snapshotMagic, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSnapshot, path, err)
	}
	var s saved
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSnapshot, path, err)
	}
	if len(s.NodeOf) != len(s.Levels) {
		return nil, fmt.Errorf("%w: %s: %d levels, %d leaf maps", ErrSnapshot, path, len(s.Levels), len(s.NodeOf))
	}
	t := &Tree{Version: s.Version, Levels: s.Levels, nodeOf: s.NodeOf, leafIdx: make(map[string]int32, len(s.IDs))}
	for i, id := range s.IDs {
		t.leafIdx[id] = int32(i)
	}
	for l, m := range s.NodeOf {
		if len(m) != len(s.IDs) {
			return nil, fmt.Errorf("%w: %s: level %d maps %d of %d leaves", ErrSnapshot, path, l+1, len(m), len(s.IDs))
		}
		for _, n := range m {
			if n < 0 || int(n) >= len(s.Levels[l]) || s.Levels[l][n] == nil {
				return nil, fmt.Errorf("%w: %s: level %d: node %d out of range", ErrSnapshot, path, l+1, n)
			}
		}
	}
	return t, nil
}
