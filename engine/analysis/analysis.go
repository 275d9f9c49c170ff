// Package analysis turns text into index terms: Unicode word segmentation,
// case folding, stop-word removal and Snowball stemming, with the byte offsets
// of every token in the original text (for highlighting and citations).
//
// The same Analyzer must be used for documents and queries. An Analyzer is
// immutable after New and safe for concurrent use.
package analysis

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/french"
	"github.com/kljensen/snowball/hungarian"
	"github.com/kljensen/snowball/norwegian"
	"github.com/kljensen/snowball/russian"
	"github.com/kljensen/snowball/spanish"
	"github.com/kljensen/snowball/swedish"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// CJKMode says how runs of characters from scripts written without spaces
// (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) become tokens.
type CJKMode int

const (
	// CJKBigram emits overlapping character bigrams ("東京都" → "東京", "京都");
	// an isolated character is emitted as a unigram. This is the default.
	CJKBigram CJKMode = iota
	// CJKUnigram emits every character as its own token.
	CJKUnigram
)

// Options configure an Analyzer. The zero value is the English default:
// Snowball English stemming, the Lucene English stop set, possessive
// stripping and CJK bigrams.
type Options struct {
	// Language selects the Snowball stemmer: "english" (default when empty),
	// "french", "spanish", "russian", "swedish", "norwegian", "hungarian",
	// or "none" for no stemming.
	Language string
	// StopWords replaces the default stop list for the language (English:
	// Lucene's 33-word set; other languages: none). Compared after folding.
	StopWords []string
	// NoStopWords disables stop-word removal entirely.
	NoStopWords bool
	// KeepPossessives keeps a trailing 's / ’s (stripped by default).
	KeepPossessives bool
	// CJK selects how unspaced scripts are tokenised.
	CJK CJKMode
	// MaxTokenBytes drops longer tokens (default 255).
	MaxTokenBytes int
}

// EnglishStopWords is Lucene's EnglishAnalyzer stop set.
var EnglishStopWords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
	"into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
	"their", "then", "there", "these", "they", "this", "to", "was", "will",
	"with",
}

// Token is one analysed term and where it came from.
type Token struct {
	Term     string // the normalised term as indexed
	Position int    // ordinal of the token in the text, counting removed stop words
	Start    int    // byte offset of the first byte in the original text
	End      int    // byte offset just past the last byte
}

// Analyzer is a configured analysis chain. Safe for concurrent use.
type Analyzer struct {
	opts  Options
	stop  map[string]struct{}
	stopN int // longest stop word, in bytes
	stem  func(string, bool) string
	cache stemCache
	fold  sync.Pool // *cases.Caser (stateful, so pooled)
	fp    string
}

// New builds an Analyzer.
func New(opts Options) (*Analyzer, error) {
	if opts.Language == "" {
		opts.Language = "english"
	}
	if opts.MaxTokenBytes <= 0 {
		opts.MaxTokenBytes = 255
	}
	if opts.CJK != CJKBigram && opts.CJK != CJKUnigram {
		return nil, fmt.Errorf("analysis: unknown CJK mode %d", opts.CJK)
	}
	a := &Analyzer{opts: opts, stop: map[string]struct{}{}}
	switch opts.Language {
	case "english":
		a.stem = english.Stem
	case "french":
		a.stem = french.Stem
	case "spanish":
		a.stem = spanish.Stem
	case "russian":
		a.stem = russian.Stem
	case "swedish":
		a.stem = swedish.Stem
	case "norwegian":
		a.stem = norwegian.Stem
	case "hungarian":
		a.stem = hungarian.Stem
	case "none":
	default:
		return nil, fmt.Errorf("analysis: unsupported language %q", opts.Language)
	}
	a.fold.New = func() any { c := cases.Fold(); return &c }
	if !opts.NoStopWords {
		words := opts.StopWords
		if words == nil && opts.Language == "english" {
			words = EnglishStopWords
		}
		for _, w := range words {
			f := a.foldString(w)
			a.stop[f] = struct{}{}
			a.stopN = max(a.stopN, len(f))
		}
	}
	a.cache.init()
	a.fp = a.fingerprint()
	return a, nil
}

// Must is New that panics on error; for package-level defaults and tests.
func Must(opts Options) *Analyzer {
	a, err := New(opts)
	if err != nil {
		panic(err)
	}
	return a
}

// Default returns the default English analyzer.
func Default() *Analyzer { return Must(Options{}) }

// Options returns the options the analyzer was built with (defaults filled).
func (a *Analyzer) Options() Options { return a.opts }

// Fingerprint identifies the analysis chain: two analyzers with the same
// fingerprint produce the same terms. Indexes record it to detect a changed
// configuration.
func (a *Analyzer) Fingerprint() string { return a.fp }

func (a *Analyzer) fingerprint() string {
	stops := make([]string, 0, len(a.stop))
	for w := range a.stop {
		stops = append(stops, w)
	}
	slices.Sort(stops)
	h := sha256.New()
	fmt.Fprintf(h, "v1|%s|%v|%d|%d|%s", a.opts.Language, a.opts.KeepPossessives, a.opts.CJK, a.opts.MaxTokenBytes, strings.Join(stops, ","))
	return "a1-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// Analyze returns the tokens of text.
func (a *Analyzer) Analyze(text string) []Token {
	return a.AppendTokens(nil, text)
}

// Terms returns just the terms of text, in order.
func (a *Analyzer) Terms(text string) []string {
	toks := a.AppendTokens(nil, text)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Term
	}
	return out
}

// AppendTokens appends the tokens of text to dst and returns it.
func (a *Analyzer) AppendTokens(dst []Token, text string) []Token {
	pos := 0
	segment(text, a.opts.CJK, func(raw string, start, end int, cjk bool) {
		p := pos
		pos++
		term := a.normalize(raw, cjk)
		if term == "" || len(term) > a.opts.MaxTokenBytes {
			return
		}
		if len(term) <= a.stopN {
			if _, ok := a.stop[term]; ok {
				return
			}
		}
		if a.stem != nil && !cjk && len(term) > 2 {
			term = a.stemCached(term)
			if term == "" {
				return
			}
		}
		dst = append(dst, Token{Term: term, Position: p, Start: start, End: end})
	})
	return dst
}

// normalize folds case and strips possessives.
func (a *Analyzer) normalize(raw string, cjk bool) string {
	var s string
	if isASCII(raw) {
		s = lowerASCII(raw)
	} else {
		s = a.foldString(raw)
	}
	if cjk || a.opts.KeepPossessives {
		return s
	}
	for _, suf := range [...]string{"'s", "’s", "＇s"} {
		if strings.HasSuffix(s, suf) && len(s) > len(suf) {
			return s[:len(s)-len(suf)]
		}
	}
	return s
}

func (a *Analyzer) foldString(s string) string {
	if isASCII(s) {
		return lowerASCII(s)
	}
	c := a.fold.Get().(*cases.Caser)
	out := norm.NFKC.String(c.String(s))
	c.Reset()
	a.fold.Put(c)
	return out
}

func (a *Analyzer) stemCached(term string) string {
	if s, ok := a.cache.get(term); ok {
		return s
	}
	// The Snowball stemmers lower-case and trim; our terms already are.
	s := a.stem(term, true)
	a.cache.put(term, s)
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// stemCache is a bounded, sharded term → stem cache.
type stemCache struct {
	shards [16]struct {
		sync.RWMutex
		m map[string]string
	}
}

const stemCacheShardCap = 1 << 15

func (c *stemCache) init() {
	for i := range c.shards {
		c.shards[i].m = make(map[string]string)
	}
}

func (c *stemCache) shard(s string) int {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return int(h & 15)
}

func (c *stemCache) get(s string) (string, bool) {
	sh := &c.shards[c.shard(s)]
	sh.RLock()
	v, ok := sh.m[s]
	sh.RUnlock()
	return v, ok
}

func (c *stemCache) put(k, v string) {
	sh := &c.shards[c.shard(k)]
	sh.Lock()
	if len(sh.m) >= stemCacheShardCap {
		clear(sh.m)
	}
	sh.m[strings.Clone(k)] = v
	sh.Unlock()
}

// segment splits text into raw word tokens, calling emit with the raw text
// and its byte range. Words are maximal runs of letters, marks, numbers and
// connector punctuation, with UAX #29-style mid-word punctuation kept when
// it sits between two word characters (don't, e.g, 3.14, 1,000). Runs of
// unspaced scripts are emitted as bigrams or unigrams with cjk=true.
func segment(text string, mode CJKMode, emit func(raw string, start, end int, cjk bool)) {
	i := 0
	n := len(text)
	for i < n {
		r, sz := decodeRune(text, i)
		switch {
		case isUnspaced(r):
			// Collect the run of unspaced-script characters.
			starts := []int{i}
			j := i + sz
			for j < n {
				r2, sz2 := decodeRune(text, j)
				if !isUnspaced(r2) {
					if unicode.Is(unicode.Mn, r2) || unicode.Is(unicode.Mc, r2) {
						// Combining marks (Thai vowels/tones) stay with the previous character.
						j += sz2
						continue
					}
					break
				}
				starts = append(starts, j)
				j += sz2
			}
			starts = append(starts, j)
			chars := len(starts) - 1
			if mode == CJKUnigram || chars == 1 {
				for c := 0; c < chars; c++ {
					emit(text[starts[c]:starts[c+1]], starts[c], starts[c+1], true)
				}
			} else {
				for c := 0; c+1 < chars; c++ {
					emit(text[starts[c]:starts[c+2]], starts[c], starts[c+2], true)
				}
			}
			i = j
		case isWordRune(r):
			start := i
			j := i + sz
			prev := r
			for j < n {
				r2, sz2 := decodeRune(text, j)
				if isWordRune(r2) && !isUnspaced(r2) {
					prev = r2
					j += sz2
					continue
				}
				if isMid(r2, prev) && j+sz2 < n {
					r3, sz3 := decodeRune(text, j+sz2)
					if isWordRune(r3) && !isUnspaced(r3) && midJoins(r2, prev, r3) {
						prev = r3
						j += sz2 + sz3
						continue
					}
				}
				break
			}
			emit(text[start:j], start, j, false)
			i = j
		default:
			i += sz
		}
	}
}

func decodeRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || unicode.Is(unicode.Pc, r)
}

func isMid(r, prev rune) bool {
	switch r {
	case '\'', '’', '＇', '.', '·':
		return true
	case ',', ';':
		return unicode.IsDigit(prev)
	}
	return false
}

// midJoins reports whether mid-word punctuation r between prev and next
// keeps the word together: apostrophes and middle dots between letters,
// periods between two letters or two digits, commas between two digits.
func midJoins(r, prev, next rune) bool {
	pd, nd := unicode.IsDigit(prev), unicode.IsDigit(next)
	switch r {
	case '\'', '’', '＇', '·':
		return !nd
	case '.':
		return pd == nd
	case ',', ';':
		return pd && nd
	}
	return false
}

func isUnspaced(r rune) bool {
	if r < 0x0E00 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}
