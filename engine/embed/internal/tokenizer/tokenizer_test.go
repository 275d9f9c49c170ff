package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const fixturePath = "../../ortembed/testdata/tokenizer.json"

func load(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Load(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncodeBert(t *testing.T) {
	tok := load(t)
	tests := []struct {
		in   string
		want string
	}{
		{"How does a wing stall?", "[CLS] how does a wing stall ? [SEP]"},
		{"Airfoil DRAG", "[CLS] air ##foil drag [SEP]"},
		{"unplayable cafés", "[CLS] [UNK] cafe ##s [SEP]"},
		{"the boundary-layer flow (mach 12)", "[CLS] the boundary - layer flow ( mach 1 ##2 ) [SEP]"},
		{"wing[MASK] lift", "[CLS] wing [MASK] lift [SEP]"},
		{"wing\tlift\u00a0drag\x00", "[CLS] wing lift drag [SEP]"},
		{"中 wing", "[CLS] [UNK] wing [SEP]"},
		{"", "[CLS] [SEP]"},
		{"Ünflow", "[CLS] un ##flow [SEP]"},
	}
	// "##flow" is not in the vocabulary: the whole word is unknown.
	tests[len(tests)-1].want = "[CLS] [UNK] [SEP]"
	for _, tt := range tests {
		e := tok.Encode(tt.in)
		if got := strings.Join(e.Tokens, " "); got != tt.want {
			t.Errorf("Encode(%q) = %q, want %q", tt.in, got, tt.want)
		}
		for i, id := range e.IDs {
			if tok.Token(id) != e.Tokens[i] {
				t.Errorf("%q: id %d is %q, token says %q", tt.in, id, tok.Token(id), e.Tokens[i])
			}
			if e.TypeIDs[i] != 0 {
				t.Errorf("%q: type id %d", tt.in, e.TypeIDs[i])
			}
		}
		if !e.Special[0] || !e.Special[e.Len()-1] {
			t.Errorf("%q: CLS/SEP not marked special", tt.in)
		}
	}
}

func TestEncodePairAndTruncation(t *testing.T) {
	tok := load(t).WithMaxLength(10)
	e := tok.EncodePair("wing stall", "lift drag flow air mach shock wave layer")
	if got := strings.Join(e.Tokens, " "); got != "[CLS] wing stall [SEP] lift drag flow air mach [SEP]" {
		t.Errorf("pair = %q", got)
	}
	if !slices.Equal(e.TypeIDs, []int64{0, 0, 0, 0, 1, 1, 1, 1, 1, 1}) {
		t.Errorf("type ids %v", e.TypeIDs)
	}
	// Longest first: both sides shrink toward equal length.
	e = tok.EncodePair("wing wing wing wing wing wing", "lift lift lift lift lift lift")
	if got := strings.Join(e.Tokens, " "); got != "[CLS] wing wing wing wing [SEP] lift lift lift [SEP]" && got != "[CLS] wing wing wing [SEP] lift lift lift lift [SEP]" {
		t.Errorf("longest-first = %q", got)
	}
	if e.Len() != 10 {
		t.Errorf("len %d", e.Len())
	}
	s := tok.Encode(strings.Repeat("wing ", 50))
	if s.Len() != 10 || s.Tokens[9] != "[SEP]" {
		t.Errorf("single truncation: %v", s.Tokens)
	}
	if load(t).MaxLength() != 32 || tok.MaxLength() != 10 {
		t.Error("WithMaxLength must not modify the original")
	}
}

func TestBertProcessingAndSequences(t *testing.T) {
	doc := map[string]any{
		"normalizer":     map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFD"}, map[string]any{"type": "StripAccents"}, map[string]any{"type": "Lowercase"}}},
		"pre_tokenizer":  map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "WhitespaceSplit"}, map[string]any{"type": "Punctuation"}}},
		"post_processor": map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 2}, "cls": []any{"[CLS]", 1}},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"vocab": map[string]int{"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "cafe": 3, "!": 4, "##s": 5}},
	}
	data, _ := json.Marshal(doc)
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	e := tok.EncodePair("Café!", "cafes")
	if got := strings.Join(e.Tokens, " "); got != "[CLS] cafe ! [SEP] cafe ##s [SEP]" {
		t.Errorf("got %q", got)
	}
	if !slices.Equal(e.TypeIDs, []int64{0, 0, 0, 0, 1, 1, 1}) {
		t.Errorf("type ids %v", e.TypeIDs)
	}
	if tok.VocabSize() != 6 {
		t.Errorf("vocab %d", tok.VocabSize())
	}
}

func TestParseErrors(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "vocab": map[string]int{"[UNK]": 0, "a": 1}}}
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		want   error
	}{
		{"bpe", func(m map[string]any) { m["model"] = map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0}} }, ErrUnsupported},
		{"unk missing", func(m map[string]any) { m["model"].(map[string]any)["unk_token"] = "<unk>" }, ErrInvalid},
		{"ids not a permutation", func(m map[string]any) {
			m["model"].(map[string]any)["vocab"] = map[string]int{"[UNK]": 0, "a": 5}
		}, ErrInvalid},
		{"unknown normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Precompiled"} }, ErrUnsupported},
		{"unknown pre-tokenizer", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Metaspace"} }, ErrUnsupported},
		{"template with unknown special", func(m map[string]any) {
			m["post_processor"] = map[string]any{"type": "TemplateProcessing", "single": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]"}}}}
		}, ErrInvalid},
		{"added token out of range", func(m map[string]any) {
			m["added_tokens"] = []any{map[string]any{"id": 9, "content": "[X]"}}
		}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.mutate(m)
			data, _ := json.Marshal(m)
			if _, err := Parse(data); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := Parse([]byte("{")); !errors.Is(err, ErrInvalid) {
		t.Errorf("truncated JSON: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, "How does a wing stall?")
	f.Add([]byte(`{"model":{"type":"WordPiece","unk_token":"u","vocab":{"u":0}}}`), "héllo 中 [x]")
	f.Fuzz(func(t *testing.T, doc []byte, text string) {
		tok, err := Parse(doc)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		for _, e := range []Encoding{tok.Encode(text), tok.EncodePair(text, text)} {
			if len(e.IDs) != len(e.Tokens) || len(e.IDs) != len(e.TypeIDs) || len(e.IDs) != len(e.Special) {
				t.Fatal("ragged encoding")
			}
			for _, id := range e.IDs {
				if id < 0 || id >= int64(tok.VocabSize()) {
					t.Fatalf("id %d outside the vocabulary", id)
				}
			}
		}
	})
}

func FuzzEncode(f *testing.F) {
	tok := load(f)
	f.Add("How does a wing stall?")
	f.Add("\xff\xfe中 cafés [MASK][SEP]")
	f.Fuzz(func(t *testing.T, text string) {
		e := tok.Encode(text)
		if e.Len() < 2 || e.Len() > 32 {
			t.Fatalf("length %d", e.Len())
		}
		for _, s := range e.Tokens {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid token %q", s)
			}
		}
	})
}
