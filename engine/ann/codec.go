package ann

import (
	"bufio"
	"bytes"
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
)

// File format (little-endian), version 1:
//
//	magic "RCPANN", uint16 version
//	header: dim u32, metric u8, M u32, efConstruction u32, efSearch u32,
//	        exactThreshold u32, filterExactBelow f64, seed u64,
//	        identity (u16 length + bytes),
//	        slots u32, entry i32, topLevel u8
//	per slot: id u64, deleted u8, level u8,
//	          per layer 0..level: count u16, count × neighbour slot u32
//	vectors: slots × dim × f32
//	crc: u32 CRC-32C of everything before it
const (
	fileMagic   = "RCPANN"
	fileVersion = 1
	maxSlots    = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every decoding error about the file contents.
var ErrCorrupt = errors.New("ann: corrupt index file")

type crcWriter struct {
	w   *bufio.Writer
	h   hash.Hash32
	err error
	buf [8]byte
}

func (c *crcWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	c.h.Write(p)
	_, c.err = c.w.Write(p)
}
func (c *crcWriter) u8(v uint8)   { c.buf[0] = v; c.write(c.buf[:1]) }
func (c *crcWriter) u16(v uint16) { binary.LittleEndian.PutUint16(c.buf[:], v); c.write(c.buf[:2]) }
func (c *crcWriter) u32(v uint32) { binary.LittleEndian.PutUint32(c.buf[:], v); c.write(c.buf[:4]) }
func (c *crcWriter) u64(v uint64) { binary.LittleEndian.PutUint64(c.buf[:], v); c.write(c.buf[:8]) }

// WriteTo encodes the index to w.
func (ix *Index) WriteTo(w io.Writer) (int64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	cw := &countWriter{w: w}
	c := &crcWriter{w: bufio.NewWriterSize(cw, 1<<16), h: crc32.New(castagnoli)}
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
	for s, id := range ix.ids {
		c.u64(id)
		if ix.deleted[s] {
			c.u8(1)
		} else {
			c.u8(0)
		}
		c.u8(ix.levels[s])
		for l := 0; l <= int(ix.levels[s]); l++ {
			nb := ix.getLinks(int32(s), l)
			c.u16(uint16(len(nb)))
			for _, n := range nb {
				c.u32(uint32(n))
			}
		}
	}
	chunk := make([]byte, 0, 1<<16)
	for i, x := range ix.vecs {
		chunk = binary.LittleEndian.AppendUint32(chunk, math.Float32bits(x))
		if len(chunk) == cap(chunk) || i == len(ix.vecs)-1 {
			c.write(chunk)
			chunk = chunk[:0]
		}
	}
	sum := c.h.Sum32()
	if c.err == nil {
		binary.LittleEndian.PutUint32(c.buf[:], sum)
		_, c.err = c.w.Write(c.buf[:4])
	}
	if c.err == nil {
		c.err = c.w.Flush()
	}
	if c.err != nil {
		return cw.n, fmt.Errorf("ann: write: %w", c.err)
	}
	return cw.n, nil
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

// Load reads an index written by Save.
func Load(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ann: load: %w", err)
	}
	defer f.Close()
	ix, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("ann: load %s: %w", path, err)
	}
	return ix, nil
}

// Decode decodes an index from b.
func Decode(b []byte) (*Index, error) { return Read(bytes.NewReader(b)) }

type crcReader struct {
	r   *bufio.Reader
	h   hash.Hash32
	err error
	buf [8]byte
}

func (c *crcReader) read(p []byte) {
	if c.err != nil {
		return
	}
	if _, err := io.ReadFull(c.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			c.err = fmt.Errorf("%w: truncated", ErrCorrupt)
		} else {
			c.err = err
		}
		clear(p)
		return
	}
	c.h.Write(p)
}
func (c *crcReader) u8() uint8   { c.read(c.buf[:1]); return c.buf[0] }
func (c *crcReader) u16() uint16 { c.read(c.buf[:2]); return binary.LittleEndian.Uint16(c.buf[:]) }
func (c *crcReader) u32() uint32 { c.read(c.buf[:4]); return binary.LittleEndian.Uint32(c.buf[:]) }
func (c *crcReader) u64() uint64 { c.read(c.buf[:8]); return binary.LittleEndian.Uint64(c.buf[:]) }

// Read decodes an index from r, verifying its structure and checksum.
func Read(r io.Reader) (*Index, error) {
	c := &crcReader{r: bufio.NewReaderSize(r, 1<<16), h: crc32.New(castagnoli)}
	var mg [6]byte
	c.read(mg[:])
	if c.err != nil || string(mg[:]) != fileMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if v := c.u16(); v != fileVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrCorrupt, v)
	}
	var cfg Config
	cfg.Dim = int(c.u32())
	cfg.Metric = Metric(c.u8())
	cfg.M = int(c.u32())
	cfg.EfConstruction = int(c.u32())
	cfg.EfSearch = int(c.u32())
	cfg.ExactThreshold = int(c.u32())
	cfg.FilterExactBelow = math.Float64frombits(c.u64())
	cfg.Seed = c.u64()
	if idLen := int(c.u16()); idLen <= maxIdentity {
		id := make([]byte, idLen)
		c.read(id)
		cfg.Identity = string(id)
	} else if c.err == nil {
		return nil, fmt.Errorf("%w: identity of %d bytes", ErrCorrupt, idLen)
	}
	n := c.u32()
	entry := int32(c.u32())
	top := int(c.u8())
	if c.err != nil {
		return nil, c.err
	}
	if cfg.Dim <= 0 || cfg.M <= 0 || cfg.EfConstruction <= 0 || cfg.EfSearch <= 0 ||
		cfg.ExactThreshold < 0 || math.IsNaN(cfg.FilterExactBelow) || cfg.FilterExactBelow <= 0 || cfg.FilterExactBelow > 1 {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if n > maxSlots || top >= maxLevel || (n == 0) != (entry == -1) || (n > 0 && (entry < 0 || uint32(entry) >= n)) {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	ix, _ := New(cfg)
	ix.rng = rand.New(rand.NewPCG(cfg.Seed, 0x2545f4914f6cdd1d^uint64(n)))
	ix.entry, ix.topLevel = entry, top
	maxConn0 := 2 * cfg.M
	for s := uint32(0); s < n; s++ {
		id := c.u64()
		del := c.u8()
		lvl := c.u8()
		if c.err != nil {
			return nil, c.err
		}
		if del > 1 || int(lvl) > top {
			return nil, fmt.Errorf("%w: slot %d", ErrCorrupt, s)
		}
		layers := make([][]int32, int(lvl)+1)
		for l := range layers {
			cnt := int(c.u16())
			limit := cfg.M
			if l == 0 {
				limit = maxConn0
			}
			if cnt > limit {
				return nil, fmt.Errorf("%w: slot %d layer %d has %d links", ErrCorrupt, s, l, cnt)
			}
			nb := make([]int32, cnt, limit+1)
			for i := range nb {
				x := c.u32()
				if x >= n || x == s {
					if c.err != nil {
						return nil, c.err
					}
					return nil, fmt.Errorf("%w: slot %d links to %d", ErrCorrupt, s, x)
				}
				nb[i] = int32(x)
			}
			layers[l] = nb
		}
		if c.err != nil {
			return nil, c.err
		}
		ix.ids = append(ix.ids, id)
		ix.deleted = append(ix.deleted, del == 1)
		ix.levels = append(ix.levels, lvl)
		ix.addSlotLinks(int(lvl))
		for l, nb := range layers {
			ix.setLinks(int32(s), l, nb)
		}
		if del == 0 {
			if _, dup := ix.slotOf[id]; dup {
				return nil, fmt.Errorf("%w: id %d live twice", ErrCorrupt, id)
			}
			ix.slotOf[id] = int32(s)
			ix.live++
		}
	}
	if n > 0 && int(ix.levels[entry]) != top {
		return nil, fmt.Errorf("%w: entry level", ErrCorrupt)
	}
	// Links at layer l must point to nodes that exist at layer l.
	for s := range ix.ids {
		for l := 0; l <= int(ix.levels[s]); l++ {
			for _, x := range ix.getLinks(int32(s), l) {
				if int(ix.levels[x]) < l {
					return nil, fmt.Errorf("%w: slot %d layer %d links to slot %d of level %d", ErrCorrupt, s, l, x, ix.levels[x])
				}
			}
		}
	}
	// Vectors, read in bounded chunks so a lying header cannot force a
	// huge allocation before the data runs out.
	total := int(n) * cfg.Dim
	chunk := make([]byte, 1<<16)
	for len(ix.vecs) < total {
		m := min(len(chunk)/4, total-len(ix.vecs))
		c.read(chunk[:4*m])
		if c.err != nil {
			return nil, c.err
		}
		for i := 0; i < m; i++ {
			x := math.Float32frombits(binary.LittleEndian.Uint32(chunk[4*i:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: non-finite vector component", ErrCorrupt)
			}
			ix.vecs = append(ix.vecs, x)
		}
	}
	want := c.h.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(c.r, sum[:]); err != nil {
		return nil, fmt.Errorf("%w: missing checksum", ErrCorrupt)
	}
	if binary.LittleEndian.Uint32(sum[:]) != want {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	return ix, nil
}
