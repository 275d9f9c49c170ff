package lsa

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"unsafe"

	"github.com/rcpgo/rcpgo/internal/mmapfile"
)

// File format (little-endian), version 2, written by Save:
//
//	magic   "RCPLSA"  6 bytes
//	version uint16    2
//	header: dim, numTerms, numDocs, batchLimit uint32, sigmaPower float64,
//	        blockRows uint32, metaLen uint64
//	meta (metaLen bytes): identity, snapshot, tokenizerID (uint32 length +
//	        bytes), numTerms × (uint32 length + bytes) strictly increasing,
//	        idf numTerms × float32, sigma dim × float32
//	metaCRC uint32: CRC-32C of everything before it
//	zero padding to a multiple of 4096 bytes
//	proj    numTerms × dim × float32 (row-major)
//	blocks  ⌈numTerms/blockRows⌉ × uint32: CRC-32C of each block of rows
//	blocksCRC uint32: CRC-32C of the block table
//
// Load maps the file and reads only the header and meta; proj is used in
// place, each block of rows checked the first time Embed reads it, the
// rest by Verify (which also re-derives the identity from the contents).
// The identity is the hash of the version-1 body below, so converting a
// model between versions keeps it.
//
// Version 1 (still read; Outdated reports it):
//
//	magic   "RCPLSA"  6 bytes
//	version uint16    1
//	body:
//	  dim, numTerms, numDocs, batchLimit uint32
//	  sigmaPower float64
//	  snapshot, tokenizerID: uint32 length + bytes
//	  numTerms × (uint32 length + bytes), strictly increasing
//	  idf   numTerms × float32
//	  sigma dim × float32
//	  proj  numTerms × dim × float32 (row-major)
//	crc     uint32    CRC-32C (Castagnoli) of everything before it
const (
	magic         = "RCPLSA"
	formatVersion = 2
	maxDim        = 1 << 16
	maxTerms      = 1 << 26
	maxStr        = 1 << 20
	// blockRows is the rows per checked block of proj: 64 KiB at 256
	// dimensions, so embedding a query checks a few hundred KB at most.
	blockRows    = 64
	maxBlockRows = 1 << 16
	pageSize     = 4096
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("lsa: corrupt model file")

func (m *Model) encodeBody() []byte {
	var b bytes.Buffer
	u32 := func(v uint32) { b.Write(binary.LittleEndian.AppendUint32(nil, v)) }
	str := func(s string) { u32(uint32(len(s))); b.WriteString(s) }
	u32(uint32(m.dim))
	u32(uint32(len(m.terms)))
	u32(uint32(m.numDocs))
	u32(uint32(m.batchLimit))
	b.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(m.sigmaPower)))
	str(m.snapshot)
	str(m.tokenizerID)
	for _, t := range m.terms {
		str(t)
	}
	f32s := func(xs []float32) {
		buf := make([]byte, 4*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		b.Write(buf)
	}
	f32s(m.idf)
	f32s(m.sigma)
	f32s(m.proj)
	return b.Bytes()
}

// MarshalBinary encodes the model (without its tokenizer) in the current
// version. It fails on a model read from a damaged file.
func (m *Model) MarshalBinary() ([]byte, error) {
	if err := m.Verify(); err != nil {
		return nil, err
	}
	var meta []byte
	str := func(s string) {
		meta = binary.LittleEndian.AppendUint32(meta, uint32(len(s)))
		meta = append(meta, s...)
	}
	f32s := func(out []byte, xs []float32) []byte {
		for _, x := range xs {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
		return out
	}
	str(m.identity)
	str(m.snapshot)
	str(m.tokenizerID)
	for _, t := range m.terms {
		str(t)
	}
	meta = f32s(meta, m.idf)
	meta = f32s(meta, m.sigma)
	out := []byte(magic)
	out = binary.LittleEndian.AppendUint16(out, formatVersion)
	for _, v := range []int{m.dim, len(m.terms), m.numDocs, m.batchLimit} {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(m.sigmaPower))
	out = binary.LittleEndian.AppendUint32(out, blockRows)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(meta)))
	out = append(out, meta...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	out = append(out, make([]byte, padTo(len(out), pageSize)-len(out))...)
	projStart := len(out)
	out = f32s(out, m.proj)
	var tab []byte
	rowBytes := 4 * m.dim
	for lo := 0; lo < len(m.terms); lo += blockRows {
		hi := min(lo+blockRows, len(m.terms))
		tab = binary.LittleEndian.AppendUint32(tab, crc32.Checksum(out[projStart+lo*rowBytes:projStart+hi*rowBytes], castagnoli))
	}
	out = append(out, tab...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(tab, castagnoli)), nil
}

func padTo(n, align int) int { return (n + align - 1) / align * align }

// WriteTo writes the encoded model to w.
func (m *Model) WriteTo(w io.Writer) (int64, error) {
	data, err := m.MarshalBinary()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(data)
	return int64(n), err
}

// Save writes the model to path atomically (temporary file, fsync, rename).
func (m *Model) Save(path string) error {
	data, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// Load opens a model saved with Save and attaches tokenize. A current file
// is mapped and its projection used in place (see the format above); a
// version-1 file is read and decoded whole.
func Load(path string, tokenize Tokenizer) (*Model, error) {
	data, release, err := mmapfile.Private(path)
	if err != nil {
		return nil, fmt.Errorf("lsa: load: %w", err)
	}
	if version(data) != formatVersion {
		m, err := decodeV1(data, tokenize)
		release()
		if err != nil {
			return nil, fmt.Errorf("lsa: load %s: %w", path, err)
		}
		return m, nil
	}
	m, err := decodeV2(data, tokenize)
	if err != nil {
		release()
		return nil, fmt.Errorf("lsa: load %s: %w", path, err)
	}
	// The mapping lives as long as the model: nothing else refers to it.
	runtime.AddCleanup(m, func(release func()) { release() }, release)
	return m, nil
}

// version is the format version data claims (0 if it is no model file).
func version(data []byte) uint16 {
	if len(data) < len(magic)+2 || string(data[:len(magic)]) != magic {
		return 0
	}
	return binary.LittleEndian.Uint16(data[len(magic):])
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) need(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: truncated", ErrCorrupt)
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) u32() uint32 {
	if s := r.need(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *reader) str() string {
	n := r.u32()
	if n > maxStr {
		if r.err == nil {
			r.err = fmt.Errorf("%w: string of %d bytes", ErrCorrupt, n)
		}
		return ""
	}
	return string(r.need(int(n)))
}

func (r *reader) f32s(n int) []float32 {
	s := r.need(4 * n)
	if s == nil {
		return nil
	}
	out := make([]float32, n)
	if n > 0 && littleEndianHost {
		// The file's layout is the host's: one copy, no per-value decoding
		// (the projection is most of a model of any size).
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*n), s)
		return out
	}
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(s[4*i:]))
	}
	return out
}

// littleEndianHost reports whether float32s are stored little-endian in
// memory, as in the file.
var littleEndianHost = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Decode decodes a model encoded with MarshalBinary (which it does not
// retain) and attaches tokenize (which may be nil and set later with
// SetTokenizer). The projection of a current file is checked block by
// block as it is read, as after Load.
func Decode(data []byte, tokenize Tokenizer) (*Model, error) {
	if version(data) == formatVersion {
		return decodeV2(mmapfile.Aligned(data), tokenize)
	}
	return decodeV1(data, tokenize)
}

// decodeV1 decodes a version-1 model whole, verifying its checksum and
// structure.
func decodeV1(data []byte, tokenize Tokenizer) (*Model, error) {
	if len(data) < len(magic)+2+4 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint16(data[len(magic):]); v != 1 {
		return nil, fmt.Errorf("%w: unsupported format version %d", ErrCorrupt, v)
	}
	payload, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	r := &reader{b: payload[len(magic)+2:]}
	m := &Model{tokenize: tokenize}
	dim, nTerms := r.u32(), r.u32()
	m.numDocs = int(r.u32())
	m.batchLimit = int(r.u32())
	if s := r.need(8); s != nil {
		m.sigmaPower = math.Float64frombits(binary.LittleEndian.Uint64(s))
	}
	if r.err != nil {
		return nil, r.err
	}
	if dim == 0 || dim > maxDim || nTerms < 1 || nTerms > maxTerms {
		return nil, fmt.Errorf("%w: dim %d, terms %d", ErrCorrupt, dim, nTerms)
	}
	if math.IsNaN(m.sigmaPower) || math.IsInf(m.sigmaPower, 0) {
		return nil, fmt.Errorf("%w: sigma power %v", ErrCorrupt, m.sigmaPower)
	}
	m.dim = int(dim)
	m.snapshot = r.str()
	m.tokenizerID = r.str()
	// Every term costs ≥ 4 bytes, and the float arrays follow: bound the
	// allocation by what the buffer can hold.
	if uint64(nTerms)*(8+4*uint64(dim)) > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: %d terms × %d dims exceed the file", ErrCorrupt, nTerms, dim)
	}
	m.terms = make([]string, nTerms)
	for i := range m.terms {
		m.terms[i] = r.str()
		if r.err == nil && i > 0 && m.terms[i] <= m.terms[i-1] {
			return nil, fmt.Errorf("%w: terms not strictly increasing at %d", ErrCorrupt, i)
		}
	}
	m.idf = r.f32s(int(nTerms))
	m.sigma = r.f32s(m.dim)
	m.proj = r.f32s(int(nTerms) * m.dim)
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(r.b))
	}
	for _, xs := range [][]float32{m.idf, m.sigma, m.proj} {
		for _, x := range xs {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: non-finite value", ErrCorrupt)
			}
		}
	}
	m.buildIndex()
	// The body was just verified to be exactly what encodeBody writes for
	// this model, so its identity hashes the file's bytes (no re-encoding).
	m.identity = identityOf(m.dim, payload[len(magic)+2:])
	m.outdated = true
	return m, nil
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and
// renames it over path, then syncs the directory.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("lsa: save: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("lsa: save: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("lsa: save: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("lsa: save: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("lsa: save: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Header is what a model file says about the model before its body is
// read: enough to describe the encoder (embed.dimension, batchLimit) while
// the model itself loads in the background. It is not checksummed; Decode
// verifies it with the rest.
type Header struct {
	Dimension, BatchLimit, NumDocs int
}

// headerLen is the length of the fixed part of the file DecodeHeader reads.
const headerLen = len(magic) + 2 + 4*4

// DecodeHeader decodes the header at the start of an encoded model.
func DecodeHeader(data []byte) (Header, error) {
	if len(data) < headerLen || string(data[:len(magic)]) != magic {
		return Header{}, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint16(data[len(magic):]); v != 1 && v != formatVersion {
		return Header{}, fmt.Errorf("%w: unsupported format version %d", ErrCorrupt, v)
	}
	r := &reader{b: data[len(magic)+2 : headerLen]}
	dim, _ := r.u32(), r.u32()
	h := Header{Dimension: int(dim), NumDocs: int(r.u32()), BatchLimit: int(r.u32())}
	if dim == 0 || dim > maxDim {
		return Header{}, fmt.Errorf("%w: dim %d", ErrCorrupt, dim)
	}
	return h, nil
}

// ReadHeader reads the header of the model file at path.
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fmt.Errorf("lsa: %w", err)
	}
	defer f.Close()
	buf := make([]byte, headerLen)
	if _, err := io.ReadFull(f, buf); err != nil {
		return Header{}, fmt.Errorf("lsa: %s: %w: %w", path, ErrCorrupt, err)
	}
	h, err := DecodeHeader(buf)
	if err != nil {
		return Header{}, fmt.Errorf("lsa: %s: %w", path, err)
	}
	return h, nil
}
