package ann

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sync/atomic"

	"github.com/rcpgo/rcpgo/internal/mmapfile"
)

// mapped holds the layer-0 link rows and the vectors of slots [0, n) as
// they lie in a version-2 file (mapped, or read into aligned memory): the
// bulk of an index, used in place instead of decoded. They are checked in
// blocks of blockSlots slots, each with its own CRC-32C, the first time a
// search or an insert touches the block (the check also bounds every link
// and rejects non-finite vectors), or by Verify, which checks the rest.
// A block that fails marks the whole index damaged: every later read of
// it returns an error wrapping ErrCorrupt, so a damaged file is never
// served.
type mapped struct {
	n, dim, stride int
	rowBytes       []byte    // n × stride little-endian int32
	vecBytes       []byte    // n × dim little-endian float32
	rows           []int32   // rowBytes as int32s
	vecs           []float32 // vecBytes as float32s
	sums           []uint32  // per block: CRC-32C of its rows' bytes, then its vectors'
	blockSlots     int
	checked        []atomic.Uint64 // one bit per block
	unchecked      atomic.Int64
	bad            atomic.Pointer[error]
	zeroRow        []int32
	zeroVec        []float32
}

func (m *mapped) row(s int) []int32 {
	if !m.touch(s) {
		return m.zeroRow
	}
	return m.rows[s*m.stride : (s+1)*m.stride]
}

func (m *mapped) vec(s int) []float32 {
	if !m.touch(s) {
		return m.zeroVec
	}
	return m.vecs[s*m.dim : (s+1)*m.dim]
}

// touch checks s's block unless it has been; it reports whether the index
// is intact.
func (m *mapped) touch(s int) bool {
	b := s / m.blockSlots
	if m.checked[b/64].Load()&(1<<(b%64)) == 0 {
		m.check(b)
	}
	return m.bad.Load() == nil
}

// check verifies block b: its checksum, its links (a count within the
// row, targets among the stored slots, no self-link) and its vectors.
func (m *mapped) check(b int) {
	lo, hi := b*m.blockSlots, min((b+1)*m.blockSlots, m.n)
	sum := crc32.Update(0, castagnoli, m.rowBytes[lo*m.stride*4:hi*m.stride*4])
	sum = crc32.Update(sum, castagnoli, m.vecBytes[lo*m.dim*4:hi*m.dim*4])
	if sum != m.sums[b] {
		m.fail(fmt.Errorf("block %d (slots %d–%d): checksum mismatch", b, lo, hi-1))
		return
	}
	for s := lo; s < hi; s++ {
		r := m.rows[s*m.stride : (s+1)*m.stride]
		if r[0] < 0 || int(r[0]) >= m.stride {
			m.fail(fmt.Errorf("slot %d has %d layer-0 links", s, r[0]))
			return
		}
		for _, x := range r[1 : 1+r[0]] {
			if x < 0 || int(x) >= m.n || int(x) == s {
				m.fail(fmt.Errorf("slot %d links to %d", s, x))
				return
			}
		}
		for _, x := range m.vecs[s*m.dim : (s+1)*m.dim] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				m.fail(fmt.Errorf("slot %d: non-finite vector component", s))
				return
			}
		}
	}
	if old := m.checked[b/64].Or(1 << (b % 64)); old&(1<<(b%64)) == 0 {
		m.unchecked.Add(-1)
	}
}

func (m *mapped) fail(err error) { m.bad.CompareAndSwap(nil, &err) }

func (m *mapped) err() error {
	if p := m.bad.Load(); p != nil {
		return *p
	}
	return nil
}

// verify checks every block not checked yet.
func (m *mapped) verify() error {
	for b := range len(m.sums) {
		if m.unchecked.Load() == 0 || m.bad.Load() != nil {
			break
		}
		if m.checked[b/64].Load()&(1<<(b%64)) == 0 {
			m.check(b)
		}
	}
	if err := m.err(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// damaged reports whether a mapped block failed its check.
func (ix *Index) damaged() bool { return ix.base != nil && ix.base.bad.Load() != nil }

// verifyBase checks every mapped block (the caller holds ix.mu).
func (ix *Index) verifyBase() error {
	if ix.base == nil {
		return nil
	}
	ix.slots()
	return ix.base.verify()
}

// Verify checks every part of the index read from a file that no search
// has checked yet: after it returns nil, nothing stored can fail a check.
// Searches run meanwhile. An index built in memory verifies at once.
func (ix *Index) Verify() error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ix.slots()
	return ix.verifyBase()
}

// Outdated reports whether the index was read from an older file version;
// Save writes the current one.
func (ix *Index) Outdated() bool { return ix.outdated }

// defaultBlockSlots is the slots per checked block: at 256 dimensions a
// block's vectors fill one 4 KiB page, so a search checks little beyond
// the pages it faults in anyway (the first search over a freshly opened
// million-vector index: ≈ 15 MB).
const defaultBlockSlots = 4

const (
	pageSize      = 4096
	maxBlockSlots = 1 << 16
)

// newMapped lays mapped sections over data, which must be 4-byte aligned
// at off. It checks only the sizes and the block table's checksum.
func newMapped(data []byte, off, n, dim, stride, blockSlots int) (*mapped, error) {
	rowLen, vecLen := n*stride*4, n*dim*4
	blocks := (n + blockSlots - 1) / blockSlots
	if len(data)-off != rowLen+vecLen+4*blocks+4 {
		return nil, fmt.Errorf("%w: %d bytes after the header, want %d", ErrCorrupt, len(data)-off, rowLen+vecLen+4*blocks+4)
	}
	tab := data[off+rowLen+vecLen:]
	if binary.LittleEndian.Uint32(tab[4*blocks:]) != crc32.Checksum(tab[:4*blocks], castagnoli) {
		return nil, fmt.Errorf("%w: block table checksum mismatch", ErrCorrupt)
	}
	m := &mapped{n: n, dim: dim, stride: stride, blockSlots: blockSlots,
		rowBytes: data[off : off+rowLen], vecBytes: data[off+rowLen : off+rowLen+vecLen],
		sums:    make([]uint32, blocks),
		checked: make([]atomic.Uint64, (blocks+63)/64),
		zeroRow: make([]int32, stride), zeroVec: make([]float32, dim)}
	m.rows, m.vecs = mmapfile.Int32s(m.rowBytes), mmapfile.Float32s(m.vecBytes)
	for b := range m.sums {
		m.sums[b] = binary.LittleEndian.Uint32(tab[4*b:])
	}
	m.unchecked.Store(int64(blocks))
	return m, nil
}
