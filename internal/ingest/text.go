package ingest

import (
	"strings"

	"golang.org/x/text/encoding/unicode"
)

// sniffLen is how much of a file the text/binary decision looks at (as git does).
const sniffLen = 8000

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

// binary reports whether b looks like something other than text: more
// than one in per of its first sniffLen bytes are control characters (C0
// other than white space and escape, and DEL). A NUL is checked by the
// caller, anywhere in b. Bytes that are not valid UTF-8 do not count:
// legacy charsets are decoded, not refused.
func binary(b []byte, per int) bool {
	s := b[:min(len(b), sniffLen)]
	ctrl := 0
	for _, c := range s {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b || c == 0x7f {
			ctrl++
		}
	}
	return ctrl*per > len(s)
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
