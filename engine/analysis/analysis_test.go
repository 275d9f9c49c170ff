package analysis

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	en := Default()
	none := Must(Options{Language: "none", NoStopWords: true})
	uni := Must(Options{Language: "none", NoStopWords: true, CJK: CJKUnigram})
	custom := Must(Options{StopWords: []string{"Flow"}})
	tests := []struct {
		name string
		a    *Analyzer
		in   string
		want []string
	}{
		{"english stem+stop", en, "The Running dogs of the aircraft's wings", []string{"run", "dog", "aircraft", "wing"}},
		{"possessive curly", en, "Boeing’s wings", []string{"boe", "wing"}},
		{"mid punctuation", none, "don't e.g. 3.14 1,000 a-b x.", []string{"don't", "e.g", "3.14", "1,000", "a", "b", "x"}},
		{"case folding unicode", none, "STRASSE Straße ÉCOLE", []string{"strasse", "strasse", "école"}},
		{"greek final sigma fold", none, "ΟΔΟΣ", []string{"οδοσ"}},
		{"cjk bigrams", none, "東京都に住む", []string{"東京", "京都", "都に", "に住", "住む"}},
		{"cjk unigram", uni, "東京", []string{"東", "京"}},
		{"cjk isolated char", none, "a 猫 b", []string{"a", "猫", "b"}},
		{"thai bigrams", none, "ภาษาไทย", []string{"ภา", "าษ", "ษา", "าไ", "ไท", "ทย"}},
		{"mixed script", none, "Go言語 rocks", []string{"go", "言語", "rocks"}},
		{"fullwidth nfkc", none, "ＡＢＣ", []string{"abc"}},
		{"arabic", none, "مرحبا بالعالم", []string{"مرحبا", "بالعالم"}},
		{"custom stop", custom, "flow and heat", []string{"and", "heat"}},
		{"empty", en, "  ... ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.a.Terms(tt.in)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestOffsetsAndPositions(t *testing.T) {
	a := Default()
	text := "The heat-transfer of Straße and 東京都"
	toks := a.Analyze(text)
	for _, tk := range toks {
		if tk.Start < 0 || tk.End > len(text) || tk.Start >= tk.End {
			t.Fatalf("bad offsets %+v", tk)
		}
	}
	if toks[0].Term != "heat" || text[toks[0].Start:toks[0].End] != "heat" || toks[0].Position != 1 {
		t.Fatalf("first token %+v", toks[0])
	}
	var raw []string
	for _, tk := range toks {
		raw = append(raw, text[tk.Start:tk.End])
	}
	want := []string{"heat", "transfer", "Straße", "東京", "京都"}
	if !slices.Equal(raw, want) {
		t.Fatalf("raw spans %q, want %q", raw, want)
	}
	// Stop words keep their position slot.
	if toks[2].Position != 4 {
		t.Fatalf("Straße position = %d, want 4", toks[2].Position)
	}
}

func TestOptions(t *testing.T) {
	if _, err := New(Options{Language: "klingon"}); err == nil {
		t.Fatal("want error for unknown language")
	}
	if Default().Fingerprint() != Must(Options{Language: "english"}).Fingerprint() {
		t.Fatal("default fingerprint differs from explicit english")
	}
	if Default().Fingerprint() == Must(Options{NoStopWords: true}).Fingerprint() {
		t.Fatal("fingerprint ignores stop words")
	}
	long := strings.Repeat("x", 300)
	if got := Default().Terms(long); len(got) != 0 {
		t.Fatalf("overlong token kept: %d", len(got))
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"hello world", "東京都", "don't 3.14", "\xff\xfe", "a'", "ภาษาไทย"} {
		f.Add(s)
	}
	a := Default()
	f.Fuzz(func(t *testing.T, s string) {
		prevEnd, prevPos := 0, -1
		for _, tk := range a.Analyze(s) {
			if tk.Start < 0 || tk.End > len(s) || tk.Start >= tk.End {
				t.Fatalf("bad span %+v in %q", tk, s)
			}
			if tk.Position <= prevPos {
				t.Fatalf("positions not increasing: %+v", tk)
			}
			if tk.Term == "" || !utf8.ValidString(tk.Term) && utf8.ValidString(s) {
				t.Fatalf("bad term %q", tk.Term)
			}
			_ = prevEnd
			prevEnd, prevPos = tk.End, tk.Position
		}
	})
}

func BenchmarkAnalyze(b *testing.B) {
	a := Default()
	text := strings.Repeat("The boundary layer transition on a flat plate at supersonic speeds was measured. ", 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		a.Analyze(text)
	}
}
