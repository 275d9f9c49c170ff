package ingest

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/gogs/chardet"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/unicode"
)

// Decoding says what decodeText took a file's bytes to be.
type Decoding struct {
	// Charset is the character set's name ("UTF-8", "UTF-16LE",
	// "ISO-8859-1", "Shift_JIS", …).
	Charset string
	// From says how it was decided: "bom" (a byte order mark), "meta"
	// (an HTML document's <meta charset>), "detected" (by the statistical
	// detector, or BOM-less UTF-16 by its zero bytes), "default" (bytes
	// that are not UTF-8 and that the detector could not place, read as
	// windows-1252, the superset of Latin-1), or "" for plain UTF-8.
	From string
}

// UTF8 reports whether the bytes were plain UTF-8 (nothing to report).
func (d Decoding) UTF8() bool { return d.From == "" }

// String is "ISO-8859-1 (detected)".
func (d Decoding) String() string {
	if d.From == "" {
		return d.Charset
	}
	return d.Charset + " (" + d.From + ")"
}

var plainUTF8 = Decoding{Charset: "UTF-8"}

// minConfidence is the detector confidence (0–100) below which its guess
// is not taken and windows-1252 is assumed: on short text (a few accented
// words) the ICU detector gives no or a weak answer, and Latin text is what
// such files mostly are.
const minConfidence = 20

// decodeText returns b as UTF-8 and what it assumed: a byte order mark
// decides (UTF-8, UTF-16); BOM-less UTF-16 is recognised by its zero bytes;
// valid UTF-8 is taken as it is; an HTML document's <meta charset> is
// honoured; other bytes go to a statistical detector (gogs/chardet, a port
// of ICU's) and are transcoded from what it finds. Content that is not
// text is refused with ErrBinary: a NUL byte, or control characters that
// no text holds (more than 10% of the sniffed bytes in UTF-8, more than 2%
// in a legacy charset, where random bytes would otherwise pass).
func decodeText(b []byte, html bool) ([]byte, Decoding, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
		if bytes.IndexByte(b, 0) >= 0 || binary(b, 10) {
			return nil, Decoding{}, ErrBinary
		}
		return bytes.ToValidUTF8(b, []byte("\uFFFD")), Decoding{Charset: "UTF-8", From: "bom"}, nil
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return decodeUTF16(b, unicode.LittleEndian, Decoding{Charset: "UTF-16LE", From: "bom"})
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return decodeUTF16(b, unicode.BigEndian, Decoding{Charset: "UTF-16BE", From: "bom"})
	}
	if e, ok := sniffUTF16(b); ok {
		d := Decoding{Charset: "UTF-16LE", From: "detected"}
		if e == unicode.BigEndian {
			d.Charset = "UTF-16BE"
		}
		return decodeUTF16(b, e, d)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, Decoding{}, ErrBinary
	}
	if html {
		if enc, d, ok := htmlMetaCharset(b); ok {
			return transcode(b, enc, d)
		}
	}
	if utf8.Valid(b) {
		if binary(b, 10) {
			return nil, Decoding{}, ErrBinary
		}
		return b, plainUTF8, nil
	}
	if binary(b, 50) {
		return nil, Decoding{}, ErrBinary
	}
	enc, d := detectCharset(b)
	return transcode(b, enc, d)
}

// htmlMetaCharset returns the encoding an HTML document declares in a
// <meta> element of its first 1024 bytes (the WHATWG prescan of
// golang.org/x/net/html/charset). A declared UTF-8 is honoured only when
// the bytes are valid UTF-8: a wrong declaration is common, and then the
// detector decides.
func htmlMetaCharset(b []byte) (encoding.Encoding, Decoding, bool) {
	enc, name, _ := charset.DetermineEncoding(b, "")
	head := strings.ToLower(string(b[:min(len(b), 1024)]))
	declared := strings.Contains(head, "charset")
	switch {
	case !declared || enc == nil:
		return nil, Decoding{}, false
	case name == "utf-8":
		return nil, Decoding{}, false // valid UTF-8 is taken as it is; invalid goes to the detector
	case name == "windows-1252" && !strings.Contains(head, "1252") && !strings.Contains(head, "8859-1") &&
		!strings.Contains(head, "latin1") && !strings.Contains(head, "ascii"):
		return nil, Decoding{}, false // the prescan's default, not a declaration
	}
	return enc, Decoding{Charset: name, From: "meta"}, true
}

// detectCharset asks the statistical detector what b (not UTF-8) is.
func detectCharset(b []byte) (encoding.Encoding, Decoding) {
	res, err := chardet.NewTextDetector().DetectBest(b[:min(len(b), 64<<10)])
	if err == nil && res.Confidence >= minConfidence {
		if enc := lookupCharset(res.Charset); enc != nil {
			return enc, Decoding{Charset: res.Charset, From: "detected"}
		}
	}
	return charmap.Windows1252, Decoding{Charset: "windows-1252", From: "default"}
}

// lookupCharset maps a detector's charset name to an encoding (nil when
// unknown, or when it is UTF-8: bytes that are not valid UTF-8 are not).
func lookupCharset(name string) encoding.Encoding {
	if strings.EqualFold(name, "UTF-8") {
		return nil
	}
	if e, err := htmlindex.Get(name); err == nil && e != nil {
		return e
	}
	if e, err := ianaindex.IANA.Encoding(name); err == nil && e != nil {
		return e
	}
	return nil
}

// transcode decodes b from enc to UTF-8 (undecodable bytes become U+FFFD).
func transcode(b []byte, enc encoding.Encoding, d Decoding) ([]byte, Decoding, error) {
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil || bytes.IndexByte(out, 0) >= 0 || binary(out, 10) {
		return nil, Decoding{}, ErrBinary
	}
	return out, d, nil
}

func decodeUTF16(b []byte, e unicode.Endianness, d Decoding) ([]byte, Decoding, error) {
	out, err := unicode.UTF16(e, unicode.UseBOM).NewDecoder().Bytes(b)
	if err != nil || bytes.IndexByte(out, 0) >= 0 || binary(out, 10) {
		return nil, Decoding{}, ErrBinary
	}
	return out, d, nil
}
