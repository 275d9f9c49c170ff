// Package tokenizer reads Hugging Face tokenizer.json files and encodes text
// the way the `tokenizers` library does, for the pipelines that BERT-family
// encoders use: the BertNormalizer (or Lowercase/NFD/NFC/NFKC/StripAccents
// sequences), the BertPreTokenizer (or Whitespace/WhitespaceSplit), the
// WordPiece model, added (special) tokens, BertProcessing or
// TemplateProcessing post-processors, and longest-first truncation.
// Other models (BPE, Unigram) are rejected with ErrUnsupported.
package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ErrUnsupported is returned for tokenizer.json features this package does
// not implement.
var ErrUnsupported = errors.New("tokenizer: unsupported")

// ErrInvalid wraps every structural error in a tokenizer.json.
var ErrInvalid = errors.New("tokenizer: invalid tokenizer.json")

// Encoding is the model input for one text or text pair.
type Encoding struct {
	IDs     []int64
	TypeIDs []int64
	Tokens  []string
	// Special marks tokens added by the post-processor or matched as
	// special added tokens.
	Special []bool
}

// Len is the number of tokens.
func (e Encoding) Len() int { return len(e.IDs) }

type normalizer interface{ normalize(string) string }
type preTokenizer interface{ split(string) []string }

type templatePiece struct {
	special string // special token name, or "" for a sequence
	seq     string // "A" or "B"
	typeID  int64
}

// Tokenizer encodes text. It is immutable and safe for concurrent use.
type Tokenizer struct {
	norm      normalizer
	pre       preTokenizer
	vocab     map[string]int64
	inverse   []string
	unk       string
	prefix    string
	maxChars  int
	added     []addedToken // sorted by decreasing length
	single    []templatePiece
	pair      []templatePiece
	specials  map[string][]int64
	maxLength int
	padID     int64
}

type addedToken struct {
	content string
	id      int64
	special bool
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

type rawJSON struct {
	Truncation *struct {
		MaxLength int `json:"max_length"`
	} `json:"truncation"`
	Padding *struct {
		PadID int64 `json:"pad_id"`
	} `json:"padding"`
	AddedTokens []struct {
		ID      int64  `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type                    string          `json:"type"`
		UnkToken                string          `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int             `json:"max_input_chars_per_word"`
		Vocab                   json.RawMessage `json:"vocab"`
	} `json:"model"`
}

const maxVocab = 1 << 22

// Parse decodes a tokenizer.json document.
func Parse(data []byte) (*Tokenizer, error) {
	var raw rawJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if raw.Model.Type != "WordPiece" {
		if raw.Model.Type == "" && raw.Model.ContinuingSubwordPrefix != nil {
			raw.Model.Type = "WordPiece"
		} else {
			return nil, fmt.Errorf("%w: model type %q (only WordPiece)", ErrUnsupported, raw.Model.Type)
		}
	}
	t := &Tokenizer{unk: raw.Model.UnkToken, prefix: "##", maxChars: raw.Model.MaxInputCharsPerWord,
		specials: map[string][]int64{}}
	if raw.Model.ContinuingSubwordPrefix != nil {
		t.prefix = *raw.Model.ContinuingSubwordPrefix
	}
	if t.maxChars <= 0 {
		t.maxChars = 100
	}
	if err := json.Unmarshal(raw.Model.Vocab, &t.vocab); err != nil {
		return nil, fmt.Errorf("%w: vocab: %w", ErrInvalid, err)
	}
	if len(t.vocab) == 0 || len(t.vocab) > maxVocab {
		return nil, fmt.Errorf("%w: vocabulary of %d entries", ErrInvalid, len(t.vocab))
	}
	t.inverse = make([]string, len(t.vocab))
	for tok, id := range t.vocab {
		if id < 0 || id >= int64(len(t.vocab)) || t.inverse[id] != "" {
			return nil, fmt.Errorf("%w: vocab ids must be a permutation of 0..%d (bad %q: %d)", ErrInvalid, len(t.vocab)-1, tok, id)
		}
		t.inverse[id] = tok
	}
	if _, ok := t.vocab[t.unk]; !ok {
		return nil, fmt.Errorf("%w: unk_token %q not in vocab", ErrInvalid, t.unk)
	}
	for _, a := range raw.AddedTokens {
		if a.Content == "" {
			continue
		}
		if a.ID < 0 || a.ID >= int64(len(t.inverse)) {
			return nil, fmt.Errorf("%w: added token %q id %d outside the vocabulary", ErrInvalid, a.Content, a.ID)
		}
		t.added = append(t.added, addedToken{a.Content, a.ID, a.Special})
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	var err error
	if t.norm, err = parseNormalizer(raw.Normalizer, 0); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(raw.PreTokenizer, 0); err != nil {
		return nil, err
	}
	if err := t.parsePostProcessor(raw.PostProcessor); err != nil {
		return nil, err
	}
	if raw.Truncation != nil && raw.Truncation.MaxLength > 0 {
		t.maxLength = raw.Truncation.MaxLength
	}
	if raw.Padding != nil {
		t.padID = raw.Padding.PadID
	} else if id, ok := t.vocab["[PAD]"]; ok {
		t.padID = id
	}
	return t, nil
}

// WithMaxLength returns a copy truncating encodings to n tokens (0: none).
func (t *Tokenizer) WithMaxLength(n int) *Tokenizer {
	c := *t
	c.maxLength = n
	return &c
}

// MaxLength is the truncation length (0: none).
func (t *Tokenizer) MaxLength() int { return t.maxLength }

// VocabSize is the number of vocabulary entries.
func (t *Tokenizer) VocabSize() int { return len(t.inverse) }

// PadID is the padding token id.
func (t *Tokenizer) PadID() int64 { return t.padID }

// TokenID looks a token up.
func (t *Tokenizer) TokenID(tok string) (int64, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// Token returns the token of an id.
func (t *Tokenizer) Token(id int64) string {
	if id < 0 || id >= int64(len(t.inverse)) {
		return ""
	}
	return t.inverse[id]
}

type piece struct {
	ids     []int64
	toks    []string
	special []bool
}

// tokenize runs added-token splitting, normalization, pre-tokenization and
// WordPiece over one sequence.
func (t *Tokenizer) tokenize(text string) piece {
	var p piece
	for len(text) > 0 {
		// Find the earliest (then longest) added token.
		at, which := -1, -1
		for i, a := range t.added {
			if j := strings.Index(text, a.content); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		seg := text
		if at >= 0 {
			seg = text[:at]
		}
		t.tokenizeSegment(seg, &p)
		if at < 0 {
			break
		}
		a := t.added[which]
		p.ids = append(p.ids, a.id)
		p.toks = append(p.toks, a.content)
		p.special = append(p.special, a.special)
		text = text[at+len(a.content):]
	}
	return p
}

func (t *Tokenizer) tokenizeSegment(seg string, p *piece) {
	if seg == "" {
		return
	}
	if t.norm != nil {
		seg = t.norm.normalize(seg)
	}
	var words []string
	if t.pre != nil {
		words = t.pre.split(seg)
	} else {
		words = []string{seg}
	}
	for _, w := range words {
		t.wordPiece(w, p)
	}
}

func (t *Tokenizer) wordPiece(w string, p *piece) {
	if w == "" {
		return
	}
	if utf8.RuneCountInString(w) > t.maxChars {
		p.push(t.vocab[t.unk], t.unk)
		return
	}
	start := 0
	var ids []int64
	var toks []string
	for start < len(w) {
		end := len(w)
		found := false
		for end > start {
			sub := w[start:end]
			if start > 0 {
				sub = t.prefix + sub
			}
			if id, ok := t.vocab[sub]; ok {
				ids = append(ids, id)
				toks = append(toks, sub)
				found = true
				break
			}
			// step back one rune
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if !found {
			p.push(t.vocab[t.unk], t.unk)
			return
		}
		start = end
	}
	for i := range ids {
		p.push(ids[i], toks[i])
	}
}

func (p *piece) push(id int64, tok string) {
	p.ids = append(p.ids, id)
	p.toks = append(p.toks, tok)
	p.special = append(p.special, false)
}

func (p *piece) truncate(n int) {
	p.ids, p.toks, p.special = p.ids[:n], p.toks[:n], p.special[:n]
}

// Encode encodes one text with the post-processor's single template.
func (t *Tokenizer) Encode(text string) Encoding {
	a := t.tokenize(text)
	if t.maxLength > 0 {
		budget := max(t.maxLength-t.numSpecial(t.single), 0)
		if len(a.ids) > budget {
			a.truncate(budget)
		}
	}
	return t.apply(t.single, a, piece{})
}

// EncodePair encodes a text pair (query, passage) with the pair template,
// truncating the longer sequence first.
func (t *Tokenizer) EncodePair(textA, textB string) Encoding {
	a, b := t.tokenize(textA), t.tokenize(textB)
	if t.maxLength > 0 {
		budget := max(t.maxLength-t.numSpecial(t.pair), 0)
		for len(a.ids)+len(b.ids) > budget {
			if len(a.ids) > len(b.ids) {
				a.truncate(len(a.ids) - 1)
			} else {
				b.truncate(len(b.ids) - 1)
			}
		}
	}
	return t.apply(t.pair, a, b)
}

func (t *Tokenizer) numSpecial(tpl []templatePiece) int {
	n := 0
	for _, pc := range tpl {
		if pc.special != "" {
			n += len(t.specials[pc.special])
		}
	}
	return n
}

func (t *Tokenizer) apply(tpl []templatePiece, a, b piece) Encoding {
	var e Encoding
	for _, pc := range tpl {
		if pc.special != "" {
			for _, id := range t.specials[pc.special] {
				e.IDs = append(e.IDs, id)
				e.TypeIDs = append(e.TypeIDs, pc.typeID)
				e.Tokens = append(e.Tokens, t.Token(id))
				e.Special = append(e.Special, true)
			}
			continue
		}
		src := a
		if pc.seq == "B" {
			src = b
		}
		e.IDs = append(e.IDs, src.ids...)
		e.Tokens = append(e.Tokens, src.toks...)
		e.Special = append(e.Special, src.special...)
		for range src.ids {
			e.TypeIDs = append(e.TypeIDs, pc.typeID)
		}
	}
	return e
}

// ---- post-processor ----

func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	seqA := templatePiece{seq: "A"}
	seqB := templatePiece{seq: "B", typeID: 1}
	if len(raw) == 0 || string(raw) == "null" {
		t.single = []templatePiece{seqA}
		t.pair = []templatePiece{seqA, seqB}
		return nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%w: post_processor: %w", ErrInvalid, err)
	}
	switch head.Type {
	case "BertProcessing":
		var p struct {
			Sep [2]json.RawMessage `json:"sep"`
			Cls [2]json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%w: BertProcessing: %w", ErrInvalid, err)
		}
		for _, x := range []struct {
			name string
			v    [2]json.RawMessage
		}{{"cls", p.Cls}, {"sep", p.Sep}} {
			var tok string
			var id int64
			if json.Unmarshal(x.v[0], &tok) != nil || json.Unmarshal(x.v[1], &id) != nil || id < 0 || id >= int64(len(t.inverse)) {
				return fmt.Errorf("%w: BertProcessing %s", ErrInvalid, x.name)
			}
			t.specials[x.name] = []int64{id}
		}
		cls, sep := templatePiece{special: "cls"}, templatePiece{special: "sep"}
		sepB := templatePiece{special: "sep", typeID: 1}
		t.single = []templatePiece{cls, seqA, sep}
		t.pair = []templatePiece{cls, seqA, sep, seqB, sepB}
		return nil
	case "TemplateProcessing":
		var p struct {
			Single        []json.RawMessage `json:"single"`
			Pair          []json.RawMessage `json:"pair"`
			SpecialTokens map[string]struct {
				IDs []int64 `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%w: TemplateProcessing: %w", ErrInvalid, err)
		}
		for name, st := range p.SpecialTokens {
			for _, id := range st.IDs {
				if id < 0 || id >= int64(len(t.inverse)) {
					return fmt.Errorf("%w: special token %q id %d", ErrInvalid, name, id)
				}
			}
			t.specials[name] = st.IDs
		}
		var err error
		if t.single, err = t.parseTemplate(p.Single); err != nil {
			return err
		}
		if t.pair, err = t.parseTemplate(p.Pair); err != nil {
			return err
		}
		return nil
	}
	return fmt.Errorf("%w: post_processor %q", ErrUnsupported, head.Type)
}

func (t *Tokenizer) parseTemplate(items []json.RawMessage) ([]templatePiece, error) {
	var out []templatePiece
	for _, it := range items {
		var x struct {
			Sequence *struct {
				ID     string `json:"id"`
				TypeID int64  `json:"type_id"`
			} `json:"Sequence"`
			SpecialToken *struct {
				ID     string `json:"id"`
				TypeID int64  `json:"type_id"`
			} `json:"SpecialToken"`
		}
		if err := json.Unmarshal(it, &x); err != nil {
			return nil, fmt.Errorf("%w: template: %w", ErrInvalid, err)
		}
		switch {
		case x.Sequence != nil && (x.Sequence.ID == "A" || x.Sequence.ID == "B"):
			out = append(out, templatePiece{seq: x.Sequence.ID, typeID: x.Sequence.TypeID})
		case x.SpecialToken != nil:
			if _, ok := t.specials[x.SpecialToken.ID]; !ok {
				return nil, fmt.Errorf("%w: template names unknown special token %q", ErrInvalid, x.SpecialToken.ID)
			}
			out = append(out, templatePiece{special: x.SpecialToken.ID, typeID: x.SpecialToken.TypeID})
		default:
			return nil, fmt.Errorf("%w: template item %s", ErrInvalid, it)
		}
	}
	return out, nil
}

// ---- normalizers ----

type normFunc func(string) string

func (f normFunc) normalize(s string) string { return f(s) }

type normSeq []normalizer

func (s normSeq) normalize(x string) string {
	for _, n := range s {
		x = n.normalize(x)
	}
	return x
}

const maxNesting = 8

func parseNormalizer(raw json.RawMessage, depth int) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if depth > maxNesting {
		return nil, fmt.Errorf("%w: normalizers nested too deeply", ErrInvalid)
	}
	var n struct {
		Type               string            `json:"type"`
		CleanText          *bool             `json:"clean_text"`
		HandleChineseChars *bool             `json:"handle_chinese_chars"`
		StripAccents       *bool             `json:"strip_accents"`
		Lowercase          *bool             `json:"lowercase"`
		Normalizers        []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%w: normalizer: %w", ErrInvalid, err)
	}
	on := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	switch n.Type {
	case "BertNormalizer":
		clean, chinese, lower := on(n.CleanText, true), on(n.HandleChineseChars, true), on(n.Lowercase, true)
		strip := on(n.StripAccents, lower)
		return normFunc(func(s string) string {
			if clean {
				s = cleanText(s)
			}
			if chinese {
				s = padChinese(s)
			}
			if strip {
				s = stripAccents(s)
			}
			if lower {
				s = strings.ToLower(s)
			}
			return s
		}), nil
	case "Lowercase":
		return normFunc(strings.ToLower), nil
	case "StripAccents":
		return normFunc(func(s string) string { return removeMarks(s) }), nil
	case "NFD":
		return normFunc(norm.NFD.String), nil
	case "NFC":
		return normFunc(norm.NFC.String), nil
	case "NFKC":
		return normFunc(norm.NFKC.String), nil
	case "NFKD":
		return normFunc(norm.NFKD.String), nil
	case "Sequence":
		var seq normSeq
		for _, r := range n.Normalizers {
			c, err := parseNormalizer(r, depth+1)
			if err != nil {
				return nil, err
			}
			if c != nil {
				seq = append(seq, c)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, n.Type)
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func isWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)
}

func cleanText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 0 || r == utf8.RuneError || isControl(r):
		case isWhitespace(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

func padChinese(s string) string {
	if !strings.ContainsFunc(s, isChinese) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isChinese(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func stripAccents(s string) string { return removeMarks(norm.NFD.String(s)) }

func removeMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s)
}

// ---- pre-tokenizers ----

type preFunc func(string) []string

func (f preFunc) split(s string) []string { return f(s) }

type preSeq []preTokenizer

func (s preSeq) split(x string) []string {
	words := []string{x}
	for _, p := range s {
		var next []string
		for _, w := range words {
			next = append(next, p.split(w)...)
		}
		words = next
	}
	return words
}

func parsePreTokenizer(raw json.RawMessage, depth int) (preTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if depth > maxNesting {
		return nil, fmt.Errorf("%w: pre-tokenizers nested too deeply", ErrInvalid)
	}
	var p struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: pre_tokenizer: %w", ErrInvalid, err)
	}
	switch p.Type {
	case "BertPreTokenizer":
		return preFunc(bertSplit), nil
	case "WhitespaceSplit":
		return preFunc(func(s string) []string { return strings.FieldsFunc(s, isWhitespace) }), nil
	case "Whitespace":
		return preFunc(whitespaceSplit), nil
	case "Punctuation":
		return preFunc(func(s string) []string { return splitPunct(s) }), nil
	case "Sequence":
		var seq preSeq
		for _, r := range p.PreTokenizers {
			c, err := parsePreTokenizer(r, depth+1)
			if err != nil {
				return nil, err
			}
			if c != nil {
				seq = append(seq, c)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, p.Type)
}

// isPunct follows BERT: ASCII non-alphanumeric printable characters and
// Unicode punctuation.
func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

func splitPunct(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if isPunct(r) {
			if i > start {
				out = append(out, s[start:i])
			}
			out = append(out, s[i:i+utf8.RuneLen(r)])
			start = i + utf8.RuneLen(r)
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func bertSplit(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, isWhitespace) {
		out = append(out, splitPunct(w)...)
	}
	return out
}

// whitespaceSplit is the `Whitespace` pre-tokenizer: runs of word
// characters (\w) or of other non-space characters.
func whitespaceSplit(s string) []string {
	var out []string
	isWord := func(r rune) bool {
		return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
	}
	cur, curWord := []rune(nil), false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			flush()
		case len(cur) > 0 && isWord(r) != curWord:
			flush()
			cur, curWord = append(cur, r), isWord(r)
		default:
			cur, curWord = append(cur, r), isWord(r)
		}
	}
	flush()
	return slices.Clip(out)
}
