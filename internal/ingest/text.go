package ingest

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
)

// sniffLen is how much of a file the text/binary decision looks at (as git does).
const sniffLen = 8000

// decodeBytes returns b as UTF-8 text: a UTF-8 byte order mark is dropped,
// UTF-16 (marked by a BOM, or recognised by the zero bytes of its ASCII
// characters) is decoded, and content that is not text is refused with
// ErrBinary.
func decodeBytes(b []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}), bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return decodeUTF16(b, unicode.LittleEndian) // the BOM decides the byte order
	default:
		if e, ok := sniffUTF16(b); ok {
			return decodeUTF16(b, e)
		}
	}
	if binary(b) {
		return nil, ErrBinary
	}
	return b, nil
}

func decodeUTF16(b []byte, e unicode.Endianness) ([]byte, error) {
	out, err := unicode.UTF16(e, unicode.UseBOM).NewDecoder().Bytes(b)
	if err != nil || binary(out) {
		return nil, ErrBinary
	}
	return out, nil
}

// sniffUTF16 recognises BOM-less UTF-16 of mostly ASCII text: nearly every
// other byte is zero, at odd offsets (little endian) or even ones (big).
func sniffUTF16(b []byte) (unicode.Endianness, bool) {
	n := min(len(b), sniffLen) &^ 1
	if n < 4 {
		return unicode.LittleEndian, false
	}
	var evenZero, oddZero int
	for i := 0; i < n; i += 2 {
		if b[i] == 0 {
			evenZero++
		}
		if b[i+1] == 0 {
			oddZero++
		}
	}
	pairs := n / 2
	switch {
	case oddZero*10 >= pairs*9 && evenZero*10 < pairs:
		return unicode.LittleEndian, true
	case evenZero*10 >= pairs*9 && oddZero*10 < pairs:
		return unicode.BigEndian, true
	}
	return unicode.LittleEndian, false
}

// binary reports whether b looks like something other than text: a NUL
// byte anywhere, or, in its first sniffLen bytes, more than 10% control
// characters or more than 10% bytes that are not valid UTF-8.
func binary(b []byte) bool {
	// A NUL anywhere, not only in the sniffed head: decoded text must never
	// hold one (the store and the analysers treat text as NUL-free), and the
	// scan is a memchr.
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	s := b[:min(len(b), sniffLen)]
	var ctrl, invalid int
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && size == 1:
			// a multibyte rune cut by the sniff window is not invalid
			if len(s) >= utf8.UTFMax || utf8.FullRune(s) {
				invalid++
			}
		case r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' && r != 0x1b:
			ctrl++
		}
		s = s[size:]
	}
	n := min(len(b), sniffLen)
	return ctrl*10 > n || invalid*10 > n
}

// markdownTitle returns the title of YAML front matter (as .mdx files often
// carry), else the text of the first ATX heading.
func markdownTitle(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for _, line := range lines[1:] {
			t := strings.TrimSpace(line)
			if t == "---" {
				break
			}
			if v, ok := strings.CutPrefix(t, "title:"); ok {
				return strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			return strings.TrimSpace(strings.TrimLeft(t, "#"))
		}
	}
	return ""
}

// rstTitle returns the first line underlined (or over- and underlined)
// with a repeated punctuation character.
func rstTitle(s string) string {
	lines := strings.Split(s, "\n")
	for i := 0; i+1 < len(lines); i++ {
		t, under := strings.TrimSpace(lines[i]), strings.TrimSpace(lines[i+1])
		if t != "" && !isAdornment(t) && isAdornment(under) && len(under) >= len([]rune(t)) {
			return t
		}
	}
	return ""
}

func isAdornment(s string) bool {
	if len(s) < 3 || !strings.ContainsRune("=-~`#\"^+*:.'_", rune(s[0])) {
		return false
	}
	return strings.Count(s, s[:1]) == len(s)
}

// orgTitle returns #+TITLE:, else the first headline.
func orgTitle(s string) string {
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if len(t) > 8 && strings.EqualFold(t[:8], "#+title:") {
			return strings.TrimSpace(t[8:])
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "* ") {
			return strings.TrimSpace(strings.TrimLeft(line, "* "))
		}
	}
	return ""
}

// asciidocTitle returns the document title line "= Title".
func asciidocTitle(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "= "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
