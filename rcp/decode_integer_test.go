package rcp

import (
	"bytes"
	"testing"
)

// integerSpellings are seeds for the DecodeInteger tests: the plain
// spellings its fast path takes and the neighbours it must hand to
// encoding/json (or refuse) exactly as before.
var integerSpellings = []string{
	"0", "-0", "7", "-7", "42", " 42 ", "\t3\n", "123456789012345", "-123456789012345",
	"1234567890123456", "9007199254740991", "9007199254740992", "-9007199254740992",
	"00", "01", "-01", "-", "", "+1", "1.0", "5.0", "1e2", "1E2", "1.5", "-0.0",
	`"3"`, "null", "true", "3x", "0x10", "1_000", "١", "99999999999999999999",
}

// TestDecodeIntegerFastPath checks the plain-digit fast path against the
// encoding/json path for every seed: same value, same verdict.
func TestDecodeIntegerFastPath(t *testing.T) {
	for _, s := range integerSpellings {
		n, ok := DecodeInteger([]byte(s))
		wn, wok := decodeIntegerJSON(trimmed(s))
		if n != wn || ok != wok {
			t.Errorf("DecodeInteger(%q) = %d, %v; encoding/json path: %d, %v", s, n, ok, wn, wok)
		}
	}
	for s, want := range map[string]int64{"0": 0, "-7": -7, "123456789012345": 123456789012345} {
		if n, ok := plainInteger([]byte(s)); !ok || n != want {
			t.Errorf("plainInteger(%q) = %d, %v; want %d via the fast path", s, n, ok, want)
		}
	}
}

// FuzzDecodeInteger is TestDecodeIntegerFastPath over arbitrary input.
func FuzzDecodeInteger(f *testing.F) {
	for _, s := range integerSpellings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := DecodeInteger([]byte(s))
		wn, wok := decodeIntegerJSON(trimmed(s))
		if n != wn || ok != wok {
			t.Fatalf("DecodeInteger(%q) = %d, %v; encoding/json path: %d, %v", s, n, ok, wn, wok)
		}
	})
}

func trimmed(s string) []byte { return bytes.TrimSpace([]byte(s)) }
