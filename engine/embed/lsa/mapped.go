package lsa

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"sync/atomic"

	"github.com/rcpgo/rcpgo/internal/mmapfile"
)

// rowCheck guards a projection used in place from a version-2 file: each
// block of blockRows rows carries a CRC-32C, checked (with the rows'
// finiteness) the first time Embed reads one of its rows, or by Verify. A
// block that fails marks the model damaged: Embed fails from then on, so a
// damaged model never embeds.
type rowCheck struct {
	bytes     []byte // proj's bytes in the file
	dim, rows int
	blockRows int
	sums      []uint32
	checked   []atomic.Uint64 // one bit per block
	unchecked atomic.Int64
	bad       atomic.Pointer[error]
}

// touch checks the block of row r unless it has been; it reports whether
// the model is intact.
func (c *rowCheck) touch(m *Model, r int) bool {
	b := r / c.blockRows
	if c.checked[b/64].Load()&(1<<(b%64)) == 0 {
		c.check(m, b)
	}
	return c.bad.Load() == nil
}

func (c *rowCheck) check(m *Model, b int) {
	lo, hi := b*c.blockRows, min((b+1)*c.blockRows, c.rows)
	if crc32.Checksum(c.bytes[lo*c.dim*4:hi*c.dim*4], castagnoli) != c.sums[b] {
		c.fail(fmt.Errorf("%w: rows %d–%d: checksum mismatch", ErrCorrupt, lo, hi-1))
		return
	}
	for _, x := range m.proj[lo*c.dim : hi*c.dim] {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			c.fail(fmt.Errorf("%w: non-finite value in rows %d–%d", ErrCorrupt, lo, hi-1))
			return
		}
	}
	if old := c.checked[b/64].Or(1 << (b % 64)); old&(1<<(b%64)) == 0 {
		c.unchecked.Add(-1)
	}
}

func (c *rowCheck) fail(err error) { c.bad.CompareAndSwap(nil, &err) }

func (c *rowCheck) err() error {
	if p := c.bad.Load(); p != nil {
		return *p
	}
	return nil
}

// Verify checks every part of a model read from a file that Embed has not
// checked yet, and that its identity is the hash of its contents: after it
// returns nil nothing stored can fail a check. A fitted model verifies at
// once.
func (m *Model) Verify() error {
	c := m.rows
	if c == nil {
		return nil
	}
	for b := range len(c.sums) {
		if c.unchecked.Load() == 0 || c.bad.Load() != nil {
			break
		}
		if c.checked[b/64].Load()&(1<<(b%64)) == 0 {
			c.check(m, b)
		}
	}
	if err := c.err(); err != nil {
		return err
	}
	if id := m.computeIdentity(); id != m.identity {
		c.fail(fmt.Errorf("%w: the file names identity %q, its contents hash to %q", ErrCorrupt, m.identity, id))
		return c.err()
	}
	return nil
}

// Outdated reports whether the model was read from an older file version;
// Save writes the current one.
func (m *Model) Outdated() bool { return m.outdated }

// decodeV2 opens a version-2 image (4-byte aligned, e.g. mapped): header
// and meta are checked and decoded, proj is used in place.
func decodeV2(data []byte, tokenize Tokenizer) (*Model, error) {
	r := &reader{b: data[len(magic)+2:]}
	dim, nTerms := r.u32(), r.u32()
	m := &Model{tokenize: tokenize, numDocs: int(r.u32()), batchLimit: int(r.u32())}
	if s := r.need(8); s != nil {
		m.sigmaPower = math.Float64frombits(binary.LittleEndian.Uint64(s))
	}
	rowsPerBlock := int(r.u32())
	var metaLen uint64
	if s := r.need(8); s != nil {
		metaLen = binary.LittleEndian.Uint64(s)
	}
	if r.err != nil {
		return nil, r.err
	}
	if dim == 0 || dim > maxDim || nTerms < 1 || nTerms > maxTerms || rowsPerBlock <= 0 || rowsPerBlock > maxBlockRows {
		return nil, fmt.Errorf("%w: dim %d, terms %d, block %d", ErrCorrupt, dim, nTerms, rowsPerBlock)
	}
	if math.IsNaN(m.sigmaPower) || math.IsInf(m.sigmaPower, 0) {
		return nil, fmt.Errorf("%w: sigma power %v", ErrCorrupt, m.sigmaPower)
	}
	m.dim = int(dim)
	metaStart := len(data) - len(r.b)
	if metaLen > uint64(len(r.b)) || len(r.b)-int(metaLen) < 4 {
		return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	metaEnd := metaStart + int(metaLen)
	if binary.LittleEndian.Uint32(data[metaEnd:]) != crc32.Checksum(data[:metaEnd], castagnoli) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if err := m.decodeMeta(&reader{b: data[metaStart:metaEnd]}, int(nTerms)); err != nil {
		return nil, err
	}
	projStart := padTo(metaEnd+4, pageSize)
	if projStart > len(data) || strings.Trim(string(data[metaEnd+4:projStart]), "\x00") != "" {
		return nil, fmt.Errorf("%w: bad padding", ErrCorrupt)
	}
	blocks := (int(nTerms) + rowsPerBlock - 1) / rowsPerBlock
	projLen := uint64(nTerms) * uint64(dim) * 4
	if uint64(len(data)-projStart) != projLen+4*uint64(blocks)+4 {
		return nil, fmt.Errorf("%w: %d bytes after the meta, want %d", ErrCorrupt, len(data)-projStart, projLen+4*uint64(blocks)+4)
	}
	tab := data[projStart+int(projLen):]
	if binary.LittleEndian.Uint32(tab[4*blocks:]) != crc32.Checksum(tab[:4*blocks], castagnoli) {
		return nil, fmt.Errorf("%w: block table checksum mismatch", ErrCorrupt)
	}
	c := &rowCheck{bytes: data[projStart : projStart+int(projLen)], dim: m.dim, rows: int(nTerms), blockRows: rowsPerBlock,
		sums: make([]uint32, blocks), checked: make([]atomic.Uint64, (blocks+63)/64)}
	for b := range c.sums {
		c.sums[b] = binary.LittleEndian.Uint32(tab[4*b:])
	}
	c.unchecked.Store(int64(blocks))
	m.proj, m.rows = mmapfile.Float32s(c.bytes), c
	m.buildIndex()
	return m, nil
}

// decodeMeta reads identity, snapshot, tokenizer, terms, idf and sigma.
func (m *Model) decodeMeta(r *reader, nTerms int) error {
	m.identity, m.snapshot, m.tokenizerID = r.str(), r.str(), r.str()
	if r.err == nil && !strings.HasPrefix(m.identity, fmt.Sprintf("lsa-%d:fit=", m.dim)) {
		return fmt.Errorf("%w: identity %q", ErrCorrupt, m.identity)
	}
	// Every term costs ≥ 4 bytes and its idf 4: bound the allocation by
	// what the meta holds.
	if uint64(nTerms)*8 > uint64(len(r.b)) {
		return fmt.Errorf("%w: %d terms exceed the file", ErrCorrupt, nTerms)
	}
	m.terms = make([]string, nTerms)
	for i := range m.terms {
		m.terms[i] = r.str()
		if r.err == nil && i > 0 && m.terms[i] <= m.terms[i-1] {
			return fmt.Errorf("%w: terms not strictly increasing at %d", ErrCorrupt, i)
		}
	}
	m.idf = r.f32s(nTerms)
	m.sigma = r.f32s(m.dim)
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing meta bytes", ErrCorrupt, len(r.b))
	}
	for _, xs := range [][]float32{m.idf, m.sigma} {
		for _, x := range xs {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("%w: non-finite value", ErrCorrupt)
			}
		}
	}
	return nil
}
