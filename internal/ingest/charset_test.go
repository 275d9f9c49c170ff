package ingest

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
)

func encodeWith(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeCharsets (issue 34, finding 4): text that is not UTF-8 is
// transcoded, and what it was taken to be is said — a byte order mark, an
// HTML <meta charset>, the statistical detector, or windows-1252 when the
// detector cannot place a few accented words. Before, Latin-1 was stored
// as "Caf\uFFFD cr\uFFFDme".
func TestDecodeCharsets(t *testing.T) {
	french := "Café crème. Le garçon a mangé une crêpe à la fraise près de la forêt, où l'été dure."
	russian := "Это русский текст для проверки определения кодировки: поиск должен находить слова."
	japaneseText := "日本語のテキストです。これは検索エンジンの文字コード判定のテストです。"
	chinese := "这是一个中文文本，用于测试检索引擎的编码检测，以及搜索结果。"
	tests := []struct {
		name string
		in   []byte
		html bool
		want string
		dec  Decoding
	}{
		{"utf-8", []byte(french), false, french, plainUTF8},
		{"latin-1 prose", encodeWith(t, charmap.ISO8859_1, french), false, french, Decoding{"ISO-8859-1", "detected"}},
		{"latin-1, two words", encodeWith(t, charmap.ISO8859_1, "Café crème"), false, "Café crème", Decoding{"windows-1252", "default"}},
		{"windows-1252 quotes", encodeWith(t, charmap.Windows1252, "It’s “quoted” — a café of the naïve."), false, "It’s “quoted” — a café of the naïve.", Decoding{}},
		{"koi8-r", encodeWith(t, charmap.KOI8R, russian), false, russian, Decoding{"KOI8-R", "detected"}},
		{"shift_jis", encodeWith(t, japanese.ShiftJIS, japaneseText), false, japaneseText, Decoding{"Shift_JIS", "detected"}},
		{"gb18030", encodeWith(t, simplifiedchinese.GB18030, chinese), false, chinese, Decoding{"GB18030", "detected"}},
		{"utf-8 bom", append([]byte{0xEF, 0xBB, 0xBF}, french...), false, french, Decoding{"UTF-8", "bom"}},
		{"html meta", append([]byte(`<html><head><meta charset="iso-8859-15"><title>x</title></head><body>`), encodeWith(t, charmap.ISO8859_15, "Prix : 5 € le café")...), true,
			"Prix : 5 € le café", Decoding{"iso-8859-15", "meta"}},
		{"html http-equiv", append([]byte(`<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251"></head><body>`), encodeWith(t, charmap.Windows1251, russian)...), true,
			russian, Decoding{"windows-1251", "meta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, dec, err := decodeText(tt.in, tt.html)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("decoded %q, want it to hold %q", out, tt.want)
			}
			if tt.dec != (Decoding{}) && dec != tt.dec {
				t.Errorf("decoding %+v, want %+v", dec, tt.dec)
			}
			if dec.UTF8() != (tt.dec == plainUTF8) {
				t.Errorf("UTF8() = %v for %+v", dec.UTF8(), dec)
			}
		})
	}
	random := make([]byte, 4096)
	rand.Read(random)
	for i := range random {
		if random[i] == 0 {
			random[i] = 1 // no NUL: the control characters alone must refuse it
		}
	}
	if _, _, err := decodeText(random, false); err != ErrBinary {
		t.Errorf("random bytes: %v, want ErrBinary", err)
	}
}

// TestReadFileCharsetAndSniffing: ReadFile records the charset it assumed
// in meta, reads a file without an extension as text when it is, and
// refuses a binary one; Collect reads extension-less text files met in a
// folder (LICENSE, Makefile) and leaves out binary ones (finding 5).
func TestReadFileCharsetAndSniffing(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"latin1.txt": encodeWith(t, charmap.ISO8859_1, "Café crème et croissants."),
		"LICENSE":    []byte("Permission is hereby granted, free of charge, to any person."),
		"Makefile":   []byte("all:\n\tgo build ./...\n"),
		"blob":       {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0},
		"notes.log":  []byte("a log line"),
	}
	writeFiles(t, dir, files)
	ctx := context.Background()
	docs, err := ReadFile(ctx, filepath.Join(dir, "latin1.txt"))
	if err != nil || !strings.Contains(docs[0].Text, "Café crème") || docs[0].Meta[MetaCharset] == nil || docs[0].Meta[MetaCharsetFrom] == nil {
		t.Fatalf("latin1.txt: %v %+v", err, docs)
	}
	docs, err = ReadFile(ctx, filepath.Join(dir, "LICENSE"))
	if err != nil || docs[0].Meta["format"] != "text" || docs[0].Meta["title"] != "LICENSE" || docs[0].Meta[MetaCharset] != nil {
		t.Fatalf("LICENSE: %v %+v", err, docs)
	}
	if _, err := ReadFile(ctx, filepath.Join(dir, "blob")); err == nil || !strings.Contains(err.Error(), ErrBinary.Error()) {
		t.Fatalf("blob: %v, want ErrBinary", err)
	}
	got, skipped, err := Collect([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, filepath.Base(f))
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[filepath.Base(s.Path)] = s.Reason
		if s.Failed {
			t.Errorf("%s: a folder's file left out by rule is not a failure", s.Path)
		}
	}
	if strings.Join(names, " ") != "LICENSE Makefile latin1.txt" || reasons["blob"] != ErrBinary.Error() || reasons["notes.log"] != "unsupported type .log" {
		t.Fatalf("collected %v, skipped %v", names, reasons)
	}
	// Named explicitly, any file is collected: ReadFile decides.
	if got, _, _ := Collect([]string{filepath.Join(dir, "notes.log"), filepath.Join(dir, "blob")}, Options{}); len(got) != 2 {
		t.Fatalf("named files: %v", got)
	}
}
