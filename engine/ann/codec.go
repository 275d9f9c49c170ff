package ann

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"

	"github.com/rcpgo/rcpgo/internal/mmapfile"
)

// File format (little-endian). Version 2, written by Save:
//
//	magic "RCPANN", uint16 version 2
//	header: dim u32, metric u8, M u32, efConstruction u32, efSearch u32,
//	        exactThreshold u32, filterExactBelow f64, seed u64,
//	        identity (u16 length + bytes),
//	        slots u32, entry i32, topLevel u8, blockSlots u32, metaLen u64
//	meta (metaLen bytes): per slot: id u64, deleted u8, level u8,
//	        per layer 1..level: count u16, count × neighbour slot u32
//	metaCRC: u32 CRC-32C of everything before it
//	zero padding to a multiple of 4096 bytes
//	rows: slots × (2M+1) × i32 — per slot its layer-0 link count, then
//	      2M link slots (those past the count are ignored)
//	vectors: slots × dim × f32
//	blocks: ⌈slots/blockSlots⌉ × u32 — per block of blockSlots slots the
//	        CRC-32C of its rows' bytes followed by its vectors' bytes
//	blocksCRC: u32 CRC-32C of the block table
//
// Load maps rows and vectors and uses them in place (mapped.go): opening
// reads the header and meta (ids, tombstones, levels and the upper
// layers, about 1/16 of the nodes) and checks blocks as they are touched.
//
// Version 1 (still read; Outdated reports it): the same header without
// blockSlots and metaLen, then per slot id u64, deleted u8, level u8 and
// per layer 0..level count u16 + count × u32, then the vectors, then one
// CRC-32C of everything before it.
const (
	fileMagic   = "RCPANN"
	fileVersion = 2
	maxSlots    = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every decoding error about the file contents.
var ErrCorrupt = errors.New("ann: corrupt index file")

type crcWriter struct {
	w   *bufio.Writer
	h   hash.Hash32
	n   int64 // bytes written
	err error
	buf [8]byte
}

func (c *crcWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	c.h.Write(p)
	c.n += int64(len(p))
	_, c.err = c.w.Write(p)
}
func (c *crcWriter) u8(v uint8)   { c.buf[0] = v; c.write(c.buf[:1]) }
func (c *crcWriter) u16(v uint16) { binary.LittleEndian.PutUint16(c.buf[:], v); c.write(c.buf[:2]) }
func (c *crcWriter) u32(v uint32) { binary.LittleEndian.PutUint32(c.buf[:], v); c.write(c.buf[:4]) }
func (c *crcWriter) u64(v uint64) { binary.LittleEndian.PutUint64(c.buf[:], v); c.write(c.buf[:8]) }

// WriteTo encodes the index to w in the current file version. It fails
// when a block of the file the index was read from is damaged, so a
// damaged vector or link is never written out under a fresh checksum.
func (ix *Index) WriteTo(w io.Writer) (int64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if err := ix.verifyBase(); err != nil {
		return 0, fmt.Errorf("ann: write: %w", err)
	}
	cw := &countWriter{w: w}
	c := &crcWriter{w: bufio.NewWriterSize(cw, 1<<16), h: crc32.New(castagnoli)}
	ix.writeHeader(c)
	ix.writeMeta(c)
	c.u32(c.h.Sum32())
	c.write(make([]byte, padTo(int(c.n), pageSize)-int(c.n)))
	blocks := (len(ix.ids) + defaultBlockSlots - 1) / defaultBlockSlots
	sums := make([]uint32, blocks)
	buf := make([]byte, 0, 1<<16)
	for s := range ix.ids {
		for _, x := range ix.row(int32(s)) {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(x))
		}
		buf = ix.flushBlock(c, buf, s, sums)
	}
	for s := range ix.ids {
		for _, x := range ix.vec(int32(s)) {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		buf = ix.flushBlock(c, buf, s, sums)
	}
	tab := make([]byte, 0, 4*blocks+4)
	for _, sum := range sums {
		tab = binary.LittleEndian.AppendUint32(tab, sum)
	}
	tab = binary.LittleEndian.AppendUint32(tab, crc32.Checksum(tab, castagnoli))
	c.write(tab)
	if c.err == nil {
		c.err = c.w.Flush()
	}
	if c.err != nil {
		return cw.n, fmt.Errorf("ann: write: %w", c.err)
	}
	return cw.n, nil
}

// flushBlock writes buf when slot s ends a block, folding it into the
// block's checksum (rows first, then vectors: crc32.Update continues).
func (ix *Index) flushBlock(c *crcWriter, buf []byte, s int, sums []uint32) []byte {
	if (s+1)%defaultBlockSlots != 0 && s != len(ix.ids)-1 {
		return buf
	}
	b := s / defaultBlockSlots
	sums[b] = crc32.Update(sums[b], castagnoli, buf)
	c.write(buf)
	return buf[:0]
}

func padTo(n, align int) int { return (n + align - 1) / align * align }

func (ix *Index) writeHeader(c *crcWriter) {
	c.write([]byte(fileMagic))
	c.u16(fileVersion)
	cfg := ix.cfg
	c.u32(uint32(cfg.Dim))
	c.u8(uint8(cfg.Metric))
	c.u32(uint32(cfg.M))
	c.u32(uint32(cfg.EfConstruction))
	c.u32(uint32(cfg.EfSearch))
	c.u32(uint32(cfg.ExactThreshold))
	c.u64(math.Float64bits(cfg.FilterExactBelow))
	c.u64(cfg.Seed)
	c.u16(uint16(len(cfg.Identity)))
	c.write([]byte(cfg.Identity))
	c.u32(uint32(len(ix.ids)))
	c.u32(uint32(ix.entry))
	c.u8(uint8(ix.topLevel))
	c.u32(defaultBlockSlots)
	c.u64(uint64(ix.metaLen()))
}

func (ix *Index) metaLen() int {
	n := 10 * len(ix.ids)
	for _, up := range ix.upper {
		for _, nb := range up {
			n += 2 + 4*len(nb)
		}
	}
	return n
}

func (ix *Index) writeMeta(c *crcWriter) {
	for s, id := range ix.ids {
		c.u64(id)
		if ix.deleted[s] {
			c.u8(1)
		} else {
			c.u8(0)
		}
		c.u8(ix.levels[s])
		for _, nb := range ix.upper[s] {
			c.u16(uint16(len(nb)))
			for _, n := range nb {
				c.u32(uint32(n))
			}
		}
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Save writes the index to path atomically: a temporary file in the same
// directory is written, synced and renamed over path.
func (ix *Index) Save(path string) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("ann: save: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = ix.WriteTo(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("ann: save: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("ann: save: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("ann: save: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Load opens an index written by Save. A current file is mapped (read
// into memory where the platform has no mmap) and used in place: Load
// reads its header and meta, and every block of links and vectors is
// checked when first touched (see Verify). A version-1 file is read and
// decoded whole.
func Load(path string) (*Index, error) {
	data, release, err := mmapfile.Private(path)
	if err != nil {
		return nil, fmt.Errorf("ann: load: %w", err)
	}
	if version(data) != fileVersion {
		ix, err := decodeV1(data)
		release()
		if err != nil {
			return nil, fmt.Errorf("ann: load %s: %w", path, err)
		}
		return ix, nil
	}
	ix, err := decodeV2(data)
	if err != nil {
		release()
		return nil, fmt.Errorf("ann: load %s: %w", path, err)
	}
	// The mapping lives as long as the index: nothing else refers to it.
	runtime.AddCleanup(ix, func(release func()) { release() }, release)
	return ix, nil
}

// Read decodes an index from r, verifying its structure and checksum.
func Read(r io.Reader) (*Index, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("ann: read: %w", err)
	}
	return Decode(b)
}

// Decode decodes an index from b (which it does not retain). Blocks of a
// current file are checked as they are touched, as after Load.
func Decode(b []byte) (*Index, error) {
	if version(b) == fileVersion {
		return decodeV2(mmapfile.Aligned(b))
	}
	return decodeV1(b)
}

// version is the file version b claims (0 if it is no index file).
func version(b []byte) uint16 {
	if len(b) < len(fileMagic)+2 || string(b[:len(fileMagic)]) != fileMagic {
		return 0
	}
	return binary.LittleEndian.Uint16(b[len(fileMagic):])
}

// decoder walks an encoded index. The checksum is verified over the whole
// image before decoding starts (one bulk pass at memory speed, which is
// what makes Load of a large index fast); every read is still bounds
// checked, so a lying header fails cleanly instead of allocating.
type decoder struct {
	b   []byte
	off int
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || n < 0 || len(d.b)-d.off < n {
		d.bad = true
		return make([]byte, max(n, 0))
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}
func (d *decoder) u8() uint8   { return d.take(1)[0] }
func (d *decoder) u16() uint16 { return binary.LittleEndian.Uint16(d.take(2)) }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }

var errTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)

// decodeV1 decodes a version-1 index, verifying its checksum first and
// then its whole structure.
func decodeV1(b []byte) (*Index, error) {
	if len(b) < len(fileMagic)+2 || string(b[:len(fileMagic)]) != fileMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint16(b[len(fileMagic):]); v != 1 {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrCorrupt, v)
	}
	if len(b) < len(fileMagic)+2+4 {
		return nil, errTruncated
	}
	body := b[:len(b)-4]
	if binary.LittleEndian.Uint32(b[len(b)-4:]) != crc32.Checksum(body, castagnoli) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := &decoder{b: body, off: len(fileMagic) + 2}
	ix, n, err := decodeHeader(d)
	if err != nil {
		return nil, err
	}
	// Every slot takes at least 12 bytes and its vector 4·dim: a header
	// claiming more slots than the image holds fails before allocating.
	if uint64(n)*(12+4*uint64(ix.cfg.Dim)) > uint64(len(body)-d.off) {
		return nil, errTruncated
	}
	if err := ix.decodeSlots(d, n, true); err != nil {
		return nil, err
	}
	if err := ix.decodeVectors(d, n); err != nil {
		return nil, err
	}
	if d.off != len(body) {
		return nil, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	ix.outdated = true
	return ix, nil
}

// decodeHeader reads the header fields both versions share and returns
// an empty index of that configuration, entry point and top level, and
// the number of slots.
func decodeHeader(d *decoder) (*Index, uint32, error) {
	var cfg Config
	cfg.Dim = int(d.u32())
	cfg.Metric = Metric(d.u8())
	cfg.M = int(d.u32())
	cfg.EfConstruction = int(d.u32())
	cfg.EfSearch = int(d.u32())
	cfg.ExactThreshold = int(d.u32())
	cfg.FilterExactBelow = math.Float64frombits(d.u64())
	cfg.Seed = d.u64()
	idLen := int(d.u16())
	if idLen > maxIdentity {
		return nil, 0, fmt.Errorf("%w: identity of %d bytes", ErrCorrupt, idLen)
	}
	cfg.Identity = string(d.take(idLen))
	n := d.u32()
	entry := int32(d.u32())
	top := int(d.u8())
	if d.bad {
		return nil, 0, errTruncated
	}
	if cfg.Dim <= 0 || cfg.M <= 0 || cfg.EfConstruction <= 0 || cfg.EfSearch <= 0 ||
		cfg.ExactThreshold < 0 || math.IsNaN(cfg.FilterExactBelow) || cfg.FilterExactBelow <= 0 || cfg.FilterExactBelow > 1 {
		return nil, 0, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	if err := cfg.defaults(); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if n > maxSlots || top >= maxLevel || (n == 0) != (entry == -1) || (n > 0 && (entry < 0 || uint32(entry) >= n)) {
		return nil, 0, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	ix, _ := New(cfg)
	ix.rng = rand.New(rand.NewPCG(cfg.Seed, 0x2545f4914f6cdd1d^uint64(n)))
	ix.entry, ix.topLevel = entry, top
	return ix, n, nil
}

// decodeV2 opens a version-2 image (4-byte aligned, e.g. mapped): the
// header and meta are checked and decoded, rows and vectors are used in
// place and checked block by block as they are touched.
func decodeV2(b []byte) (*Index, error) {
	d := &decoder{b: b, off: len(fileMagic) + 2}
	ix, n, err := decodeHeader(d)
	if err != nil {
		return nil, err
	}
	blockSlots, metaLen := int(d.u32()), d.u64()
	if d.bad {
		return nil, errTruncated
	}
	if blockSlots <= 0 || blockSlots > maxBlockSlots || metaLen < 10*uint64(n) {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	metaStart := d.off
	if metaLen > uint64(len(b)-metaStart-4) {
		return nil, errTruncated
	}
	metaEnd := metaStart + int(metaLen)
	if binary.LittleEndian.Uint32(b[metaEnd:]) != crc32.Checksum(b[:metaEnd], castagnoli) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	off := padTo(metaEnd+4, pageSize)
	if off > len(b) {
		return nil, errTruncated
	}
	for _, x := range b[metaEnd+4 : off] {
		if x != 0 {
			return nil, fmt.Errorf("%w: bad padding", ErrCorrupt)
		}
	}
	if uint64(n)*uint64(ix.stride0+ix.cfg.Dim)*4 > uint64(len(b)-off) {
		return nil, errTruncated
	}
	if ix.base, err = newMapped(b, off, int(n), ix.cfg.Dim, ix.stride0, blockSlots); err != nil {
		return nil, err
	}
	meta := &decoder{b: b[:metaEnd], off: metaStart}
	if err := ix.decodeSlots(meta, n, false); err != nil {
		return nil, err
	}
	if meta.off != metaEnd {
		return nil, fmt.Errorf("%w: trailing meta data", ErrCorrupt)
	}
	return ix, nil
}

// decodeSlots reads the ids, tombstones and links of n slots and checks
// the graph's structure; withRows says whether d holds the layer-0 links
// too (version 1) or only the upper layers (version 2: layer 0 is mapped).
func (ix *Index) decodeSlots(d *decoder, n uint32, withRows bool) error {
	cfg := ix.cfg
	first := 1
	if withRows {
		first = 0
		ix.layer0 = make([]int32, 0, int(n)*ix.stride0)
	}
	ix.ids = make([]uint64, 0, n)
	ix.deleted = make([]bool, 0, n)
	ix.levels = make([]uint8, 0, n)
	ix.upper = make([][][]int32, 0, n)
	ix.slotOf = nil // version 2: built on first use (slots)
	if withRows {
		ix.slotOf = make(map[uint64]int32, n)
	}
	maxConn0 := 2 * cfg.M
	for s := uint32(0); s < n; s++ {
		id := d.u64()
		del := d.u8()
		lvl := d.u8()
		if d.bad {
			return errTruncated
		}
		if del > 1 || int(lvl) > ix.topLevel {
			return fmt.Errorf("%w: slot %d", ErrCorrupt, s)
		}
		ix.ids = append(ix.ids, id)
		ix.deleted = append(ix.deleted, del == 1)
		ix.levels = append(ix.levels, lvl)
		if withRows {
			ix.addSlotLinks(int(lvl))
		} else {
			ix.addUpperLinks(int(lvl))
		}
		for l := first; l <= int(lvl); l++ {
			cnt := int(d.u16())
			limit := cfg.M
			if l == 0 {
				limit = maxConn0
			}
			if cnt > limit {
				return fmt.Errorf("%w: slot %d layer %d has %d links", ErrCorrupt, s, l, cnt)
			}
			raw := d.take(4 * cnt)
			if d.bad {
				return errTruncated
			}
			nb := make([]int32, cnt, limit+1)
			for i := range nb {
				x := binary.LittleEndian.Uint32(raw[4*i:])
				if x >= n || x == s {
					return fmt.Errorf("%w: slot %d links to %d", ErrCorrupt, s, x)
				}
				nb[i] = int32(x)
			}
			ix.setLinks(int32(s), l, nb)
		}
		if del == 0 {
			ix.live++
		}
		if del == 0 && withRows {
			if _, dup := ix.slotOf[id]; dup {
				return fmt.Errorf("%w: id %d live twice", ErrCorrupt, id)
			}
			ix.slotOf[id] = int32(s)
		}
	}
	if n > 0 && int(ix.levels[ix.entry]) != ix.topLevel {
		return fmt.Errorf("%w: entry level", ErrCorrupt)
	}
	// Links at layer l must point to nodes that exist at layer l.
	for s := range ix.ids {
		for l := first; l <= int(ix.levels[s]); l++ {
			for _, x := range ix.getLinks(int32(s), l) {
				if int(ix.levels[x]) < l {
					return fmt.Errorf("%w: slot %d layer %d links to slot %d of level %d", ErrCorrupt, s, l, x, ix.levels[x])
				}
			}
		}
	}
	return nil
}

// decodeVectors reads n vectors.
func (ix *Index) decodeVectors(d *decoder, n uint32) error {
	raw := d.take(4 * int(n) * ix.cfg.Dim)
	if d.bad {
		return errTruncated
	}
	ix.vecs = make([]float32, len(raw)/4)
	for i := range ix.vecs {
		x := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: non-finite vector component", ErrCorrupt)
		}
		ix.vecs[i] = x
	}
	return nil
}
