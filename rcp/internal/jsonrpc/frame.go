// Package jsonrpc is the JSON-RPC 2.0 machinery under package rcp: NDJSON
// framing with a frame-size cap (RCP §5.1), a serialised writer, and message
// decoding with the validation rules of JSON-RPC 2.0 and RCP §4 and §11.
// Only the SDK module can import it: package rcp, and rcp/stdio, which
// exposes the reader and a check of one message as a small public API.
package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// DefaultMaxFrame is the default frame cap: 16 MiB.
const DefaultMaxFrame = 16 << 20

// ErrFrameTooLarge is returned by Reader.Next for a frame longer than the cap.
// The oversize frame has been consumed; the reader is positioned at the next
// frame and may be used again.
var ErrFrameTooLarge = errors.New("jsonrpc: frame exceeds the size limit")

var bom = []byte{0xEF, 0xBB, 0xBF}

// Reader reads newline-delimited frames. It tolerates blank lines, CRLF line
// ends, a leading UTF-8 byte-order mark, messages split across reads and a
// final frame without a trailing newline.
type Reader struct {
	br    *bufio.Reader
	max   int
	buf   []byte
	first bool
}

// NewReader returns a Reader that rejects frames longer than maxFrame bytes
// (DefaultMaxFrame when maxFrame <= 0).
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: maxFrame, first: true}
}

// Next returns the next non-blank frame without its line terminator. The
// returned slice is valid until the next call. It returns io.EOF at the end
// of input and ErrFrameTooLarge (recoverable) for an oversize frame.
func (r *Reader) Next() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, ErrFrameTooLarge) {
				return nil, err
			}
			if len(line) == 0 || !errors.Is(err, io.EOF) {
				return nil, err
			}
			// final frame without a newline: deliver it, EOF comes next call
		}
		if r.first {
			r.first = false
			line = bytes.TrimPrefix(line, bom)
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		return line, nil
	}
}

// FrameBuffered reports whether a complete frame is already buffered, so
// the next call to Next will not block. Blank lines do not count: Next skips
// them and would block waiting for the frame after them.
func (r *Reader) FrameBuffered() bool {
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.br.Peek(n)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		if len(bytes.TrimSpace(b[:i])) > 0 {
			return true
		}
		b = b[i+1:]
	}
}

// readLine reads up to '\n', enforcing the cap. On overflow it discards the
// rest of the line and returns ErrFrameTooLarge.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		content := len(r.buf) + len(chunk)
		if err == nil {
			content-- // the newline itself
		}
		if content > r.max {
			if err == nil || errors.Is(err, bufio.ErrBufferFull) {
				if derr := r.discardLine(err); derr != nil && !errors.Is(derr, io.EOF) {
					return nil, derr
				}
			}
			r.buf = r.buf[:0]
			if cap(r.buf) > 1<<20 {
				r.buf = nil // do not pin a huge buffer after an oversize frame
			}
			return nil, ErrFrameTooLarge
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
			return r.buf[:len(r.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return r.buf, err
		}
	}
}

func (r *Reader) discardLine(last error) error {
	if last == nil {
		return nil // the line (with its newline) was already consumed
	}
	for {
		_, err := r.br.ReadSlice('\n')
		if err == nil {
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// Writer writes frames, one per line. Concurrent writers are serialised and
// flushes are group-committed: a frame is flushed by the last writer of a
// burst, so pipelined traffic costs one write syscall per burst rather than
// one per frame, and no frame is ever left unflushed.
type Writer struct {
	queued atomic.Int64
	held   atomic.Int64
	mu     sync.Mutex
	bw     *bufio.Writer
	err    error
}

// Hold defers flushing until the matching Release: a reader that still has
// frames buffered holds the writer so the answers to a burst of pipelined
// requests leave in one write.
func (w *Writer) Hold() { w.held.Add(1) }

// Release ends a Hold and flushes what was deferred.
func (w *Writer) Release() error {
	if w.held.Add(-1) != 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.bw.Buffered() == 0 {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{bw: bufio.NewWriterSize(w, 64<<10)} }

// WriteFrame writes b followed by '\n'. b must not contain a newline (compact
// JSON never does). After the first write error every call fails with it.
func (w *Writer) WriteFrame(b []byte) error {
	if bytes.IndexByte(b, '\n') >= 0 {
		return fmt.Errorf("jsonrpc: frame contains a newline")
	}
	w.queued.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	last := w.queued.Add(-1) == 0 && w.held.Load() == 0
	if w.err != nil {
		return w.err
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		w.err = err
		return err
	}
	if !last {
		return nil // a writer queued behind us flushes both frames
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
		return err
	}
	return nil
}
