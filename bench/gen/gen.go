// Package gen generates synthetic corpora and queries for scale tests,
// reproducibly: the same Config (seed included) always yields the same
// bytes. Documents are produced one at a time from (seed, index), so a
// corpus of any size streams in constant memory and any document can be
// regenerated on its own — which is how queries know their relevant
// document without keeping the corpus.
//
// Words are pseudo-words built from syllables, drawn from a Zipf
// distribution over the vocabulary (frequent words are short, as in real
// text); passage lengths are log-normal; every document carries metadata
// for filter workloads: lang (keyword), year (int), score (float),
// published (bool) and date (YYYY-MM-DD). The output is BEIR-compatible:
// corpus.jsonl, queries.jsonl and qrels/test.tsv.
package gen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Config describes a synthetic dataset. Zero fields take the defaults shown.
type Config struct {
	Seed        uint64  `json:"seed"`        // default 1
	Docs        int     `json:"docs"`        // number of passages (default 10 000)
	Queries     int     `json:"queries"`     // number of queries (default 1 000)
	Vocab       int     `json:"vocab"`       // distinct words (default 50 000)
	ZipfS       float64 `json:"zipfS"`       // Zipf exponent, > 1 (default 1.07)
	MedianWords int     `json:"medianWords"` // median passage length in words (default 85)
	Sigma       float64 `json:"sigma"`       // log-normal spread of passage lengths (default 0.35)
	MinWords    int     `json:"minWords"`    // shortest passage (default 10)
	MaxWords    int     `json:"maxWords"`    // longest passage (default 400)
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	def(&c.Docs, 10_000)
	def(&c.Queries, 1_000)
	def(&c.Vocab, 50_000)
	def(&c.MedianWords, 85)
	def(&c.MinWords, 10)
	def(&c.MaxWords, 400)
	if c.ZipfS == 0 {
		c.ZipfS = 1.07
	}
	if c.Sigma == 0 {
		c.Sigma = 0.35
	}
	return c
}

// Generator produces documents and queries of one Config. Its methods are
// safe for concurrent use.
type Generator struct {
	cfg   Config
	words [][]byte // by frequency rank
}

// stopRanks is the number of most frequent words treated as function words:
// titles and queries avoid them.
const stopRanks = 100

// New validates cfg and builds the vocabulary (the only state that grows
// with the configuration, not with the corpus).
func New(cfg Config) (*Generator, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Docs < 0 || cfg.Queries < 0:
		return nil, errors.New("gen: negative Docs or Queries")
	case cfg.Vocab < 2*stopRanks:
		return nil, fmt.Errorf("gen: Vocab must be at least %d", 2*stopRanks)
	case cfg.ZipfS <= 1:
		return nil, errors.New("gen: ZipfS must be > 1")
	case cfg.MinWords < 1 || cfg.MaxWords < cfg.MinWords || cfg.MedianWords < 1 || cfg.Sigma < 0:
		return nil, errors.New("gen: bad passage length parameters")
	}
	return &Generator{cfg: cfg, words: vocabulary(cfg.Seed, cfg.Vocab)}, nil
}

// Config returns the configuration with defaults applied.
func (g *Generator) Config() Config { return g.cfg }

// Word returns the word of frequency rank r (0 = most frequent).
func (g *Generator) Word(r int) string { return string(g.words[r]) }

var (
	onsets = []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch", "cl", "dr", "fl", "gr", "kr", "pl", "pr", "sh", "st", "th", "tr", "qu"}
	vowels = []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"}
	codas  = []string{"", "", "", "", "n", "r", "s", "l", "t", "m", "x", "nd", "st", "rk"}
)

// vocabulary builds vocab distinct pseudo-words. Rank r is written in
// bijective base-S over a seed-shuffled syllable table, so the most
// frequent S words have one syllable, the next S² two, and so on — distinct
// by construction.
func vocabulary(seed uint64, vocab int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 0x766f636162)) // "vocab"
	var syl []string
	for _, o := range onsets {
		for _, v := range vowels {
			syl = append(syl, o+v)
		}
	}
	rng.Shuffle(len(syl), func(i, j int) { syl[i], syl[j] = syl[j], syl[i] })
	syl = syl[:256]
	out := make([][]byte, vocab)
	for r := range out {
		var w []byte
		n := r + 1
		var digits []int
		for n > 0 {
			n--
			digits = append(digits, n%len(syl))
			n /= len(syl)
		}
		for i := len(digits) - 1; i >= 0; i-- {
			w = append(w, syl[digits[i]]...)
		}
		// A coda picked from the rank keeps words pronounceable-ish and
		// cannot merge two ranks: the syllable digits already differ.
		w = append(w, codas[(r*7+len(digits))%len(codas)]...)
		out[r] = w
	}
	return dedupe(out)
}

// dedupe appends the rank to the rare word whose spelling collides with an
// earlier one (a coda can turn "ba"+"n" into another rank's "ban").
func dedupe(words [][]byte) [][]byte {
	seen := make(map[string]bool, len(words))
	for r, w := range words {
		if seen[string(w)] {
			w = append(w, strconv.Itoa(r)...)
			words[r] = w
		}
		seen[string(w)] = true
	}
	return words
}

// stream holds the per-goroutine random state, reseeded for every item so
// an item depends only on (seed, kind, index).
type stream struct {
	pcg   *rand.PCG
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []int32
	title []int32
}

const (
	kindDoc   = 0x646f63 // "doc"
	kindQuery = 0x717279 // "qry"
)

func (g *Generator) newStream() *stream {
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	return &stream{pcg: pcg, rng: rng, zipf: rand.NewZipf(rng, g.cfg.ZipfS, 1, uint64(g.cfg.Vocab-1))}
}

func (s *stream) reset(seed uint64, kind uint64, i int) {
	s.pcg.Seed(seed^kind<<40, uint64(i)*0x9e3779b97f4a7c15+kind)
}

// Meta is the filterable metadata of a document.
type Meta struct {
	Lang      string  `json:"lang"`
	Year      int     `json:"year"`
	Score     float64 `json:"score"`
	Published bool    `json:"published"`
	Date      string  `json:"date"`

	month, day int
}

func (m Meta) appendDate(b []byte) []byte {
	b = strconv.AppendInt(b, int64(m.Year), 10)
	b = append(b, '-', byte('0'+m.month/10), byte('0'+m.month%10), '-', byte('0'+m.day/10), byte('0'+m.day%10))
	return b
}

var langs = []struct {
	code   string
	weight int
}{{"en", 60}, {"de", 12}, {"fr", 10}, {"es", 10}, {"ja", 8}}

var monthDays = [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// doc draws document i into s.title, s.words and returns its metadata.
func (g *Generator) doc(s *stream, i int) Meta {
	s.reset(g.cfg.Seed, kindDoc, i)
	r := s.rng
	// title: 3..9 content words
	s.title = s.title[:0]
	for n := 3 + r.IntN(7); len(s.title) < n; {
		if w := int32(s.zipf.Uint64()); w >= stopRanks {
			s.title = append(s.title, w)
		}
	}
	n := int(math.Round(float64(g.cfg.MedianWords) * math.Exp(g.cfg.Sigma*r.NormFloat64())))
	n = min(max(n, g.cfg.MinWords), g.cfg.MaxWords)
	s.words = s.words[:0]
	for range n {
		s.words = append(s.words, int32(s.zipf.Uint64()))
	}
	var m Meta
	p := r.IntN(100)
	for _, l := range langs {
		if p < l.weight {
			m.Lang = l.code
			break
		}
		p -= l.weight
	}
	// years skew recent: 1990 + 35·sqrt(u)
	m.Year = 1990 + int(35*math.Sqrt(r.Float64()))
	m.month = 1 + r.IntN(12)
	m.day = 1 + r.IntN(monthDays[m.month-1])
	m.Score = float64(r.IntN(1000)) / 1000
	m.Published = r.IntN(10) < 8
	return m
}

// DocID returns the id of document i ("d" + i).
func DocID(i int) string { return "d" + strconv.Itoa(i) }

// QueryID returns the id of query j ("q" + j).
func QueryID(j int) string { return "q" + strconv.Itoa(j) }

// Doc is a generated document.
type Doc struct {
	ID    string
	Title string
	Text  string
	Meta  Meta
}

// Doc returns document i (0 ≤ i < Docs).
func (g *Generator) Doc(i int) Doc {
	s := g.newStream()
	m := g.doc(s, i)
	m.Date = string(m.appendDate(nil))
	return Doc{ID: DocID(i), Title: string(g.appendTitle(nil, s.title)), Text: string(g.appendText(nil, s.words)), Meta: m}
}

// MetaMap returns the metadata as the map an RCP index/add document carries.
func (m Meta) MetaMap() map[string]any {
	return map[string]any{"lang": m.Lang, "year": m.Year, "score": m.Score, "published": m.Published, "date": m.Date}
}

func (g *Generator) appendTitle(b []byte, ws []int32) []byte {
	for k, w := range ws {
		if k > 0 {
			b = append(b, ' ')
		}
		word := g.words[w]
		if k == 0 {
			b = append(b, word[0]-'a'+'A')
			b = append(b, word[1:]...)
		} else {
			b = append(b, word...)
		}
	}
	return b
}

// appendText writes words as sentences of 6..20 words (lengths derived
// from the word ranks, so no extra randomness is consumed).
func (g *Generator) appendText(b []byte, ws []int32) []byte {
	start := true
	left := 0
	for k, w := range ws {
		if left == 0 {
			left = 6 + int(uint32(w)*2654435761>>16)%15
		}
		if k > 0 {
			b = append(b, ' ')
		}
		word := g.words[w]
		if start {
			b = append(b, word[0]-'a'+'A')
			b = append(b, word[1:]...)
			start = false
		} else {
			b = append(b, word...)
		}
		left--
		if left == 0 || k == len(ws)-1 {
			b = append(b, '.')
			start = true
		}
	}
	return b
}

// AppendDocJSON appends document i as one corpus.jsonl line (with '\n').
func (g *Generator) appendDocJSON(s *stream, b []byte, i int) []byte {
	m := g.doc(s, i)
	b = append(b, `{"_id":"d`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","title":"`...)
	b = g.appendTitle(b, s.title)
	b = append(b, `","text":"`...)
	b = g.appendText(b, s.words)
	b = append(b, `","metadata":{"lang":"`...)
	b = append(b, m.Lang...)
	b = append(b, `","year":`...)
	b = strconv.AppendInt(b, int64(m.Year), 10)
	b = append(b, `,"score":`...)
	b = strconv.AppendFloat(b, m.Score, 'f', -1, 64)
	b = append(b, `,"published":`...)
	b = strconv.AppendBool(b, m.Published)
	b = append(b, `,"date":"`...)
	b = m.appendDate(b)
	b = append(b, "\"}}\n"...)
	return b
}

// Query is a generated query with the document it was drawn from.
type Query struct {
	ID       string
	Text     string
	Relevant string // id of the document the query's words come from
}

// Query returns query j: 2..6 distinct content words sampled from one
// document (chosen uniformly from the seed and j), which is its relevant
// document — a known-item query. Rarer words are preferred, as people
// query with distinctive terms.
func (g *Generator) Query(j int) Query {
	return g.query(g.newStream(), j)
}

func (g *Generator) query(s *stream, j int) Query {
	if g.cfg.Docs == 0 {
		return Query{ID: QueryID(j)}
	}
	s.reset(g.cfg.Seed, kindQuery, j)
	target := s.rng.IntN(g.cfg.Docs)
	n := 2 + s.rng.IntN(5)
	g.doc(s, target) // reseeds s: draw nothing from s.rng before this returns
	// candidates: distinct content words of the document, rarest first
	cand := make([]int32, 0, len(s.words)+len(s.title))
	seen := map[int32]bool{}
	for _, w := range append(s.words, s.title...) {
		if w >= stopRanks && !seen[w] {
			seen[w] = true
			cand = append(cand, w)
		}
	}
	// pick from the rarer half by rank with a deterministic shuffle
	sortInt32Desc(cand)
	pool := cand[:max(min(len(cand), 2*n), min(len(cand), n))]
	qr := rand.New(rand.NewPCG(g.cfg.Seed^kindQuery, uint64(j)))
	qr.Shuffle(len(pool), func(a, b int) { pool[a], pool[b] = pool[b], pool[a] })
	pool = pool[:min(n, len(pool))]
	var b []byte
	for k, w := range pool {
		if k > 0 {
			b = append(b, ' ')
		}
		b = append(b, g.words[w]...)
	}
	return Query{ID: QueryID(j), Text: string(b), Relevant: DocID(target)}
}

func sortInt32Desc(a []int32) {
	// insertion sort is fine: a passage has a few hundred words at most
	for i := 1; i < len(a); i++ {
		for k := i; k > 0 && a[k] > a[k-1]; k-- {
			a[k], a[k-1] = a[k-1], a[k]
		}
	}
}
