package transform

import (
	"context"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode"
)

// Bounds of a Lexicon: the corpus sample it learns from and what it keeps
// per document, so its memory is independent of the corpus size.
const (
	// MaxLexiconDocs is the number of documents a Lexicon reads.
	MaxLexiconDocs = 20000
	// maxDocWords caps the distinct words kept per document for
	// co-occurrence.
	maxDocWords = 400
	// maxWordLen drops longer tokens (URLs, hashes, base64).
	maxWordLen = 40
)

// Lexicon is the surface vocabulary of a corpus: every lower-cased word
// with its document frequency, and which sampled documents hold it (for
// co-occurrence). It is immutable once built and safe for concurrent use.
type Lexicon struct {
	ids   map[string]int32
	words []string
	df    []int32
	post  [][]int32  // word id → document ordinals (ascending)
	docs  [][]int32  // document ordinal → distinct word ids (first maxDocWords)
	spell spellIndex // candidate corrections (symmetric deletes)
	stem  func(string) string
	stems map[string]bool // stems of the words, so inflections are not "corrected"
}

// Words splits text into lower-cased words: maximal runs of letters and
// digits (an inner apostrophe or hyphen ends a word).
func Words(text string) []string {
	var out []string
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = appendWord(out, text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = appendWord(out, text[start:])
	}
	return out
}

func appendWord(out []string, w string) []string {
	if len(w) > maxWordLen {
		return out
	}
	return append(out, strings.ToLower(w))
}

// BuildLexicon reads up to MaxLexiconDocs texts. stem maps a word to its
// index term (nil: identity); a word whose stem occurs in the corpus is
// never spell-corrected.
func BuildLexicon(ctx context.Context, texts iter.Seq[string], stem func(string) string) (*Lexicon, error) {
	if stem == nil {
		stem = func(s string) string { return s }
	}
	l := &Lexicon{ids: map[string]int32{}, stem: stem, stems: map[string]bool{}}
	seen := map[int32]bool{}
	n := 0
	for text := range texts {
		if n == MaxLexiconDocs {
			break
		}
		if n%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		clear(seen)
		var doc []int32
		for _, w := range Words(text) {
			id, ok := l.ids[w]
			if !ok {
				id = int32(len(l.words))
				l.ids[w] = id
				l.words = append(l.words, w)
				l.df = append(l.df, 0)
				l.post = append(l.post, nil)
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			l.df[id]++
			if len(doc) < maxDocWords {
				doc = append(doc, id)
				l.post[id] = append(l.post[id], int32(n))
			}
		}
		l.docs = append(l.docs, doc)
		n++
	}
	for _, w := range l.words {
		l.stems[stem(w)] = true
	}
	if err := l.spell.build(ctx, l.words, l.df); err != nil {
		return nil, err
	}
	return l, nil
}

// Docs is the number of documents read.
func (l *Lexicon) Docs() int { return len(l.docs) }

// Size is the number of distinct words.
func (l *Lexicon) Size() int { return len(l.words) }

// DF is the document frequency of word (0 when unknown).
func (l *Lexicon) DF(word string) int {
	if id, ok := l.ids[word]; ok {
		return int(l.df[id])
	}
	return 0
}

// Correct returns the corpus word closest to word by edit distance
// (optimal string alignment): distance 1 for words of up to 5 runes,
// 2 above; among equals the most frequent, then the first in byte order.
// Words known to the corpus (or inflections of them), shorter than 4 runes
// or holding a digit are returned unchanged. Candidates come from the
// symmetric-delete index (spellIndex): at most a few dozen lookups and
// distance checks per word, whatever the vocabulary size.
func (l *Lexicon) Correct(word string) string {
	r := []rune(word)
	if len(r) < 4 || l.DF(word) > 0 || l.stems[l.stem(word)] || strings.IndexFunc(word, unicode.IsDigit) >= 0 {
		return word
	}
	maxD := 1
	if len(r) > 5 {
		maxD = 2
	}
	best, bestD, bestDF := word, maxD+1, int32(0)
	var cr []rune
	var rows [3][]int
	l.spell.candidates(r, maxD, func(id int32) {
		c := l.words[id]
		cr = append(cr[:0], []rune(c)...)
		if abs(len(cr)-len(r)) > maxD {
			return
		}
		d := osaRows(r, cr, maxD, &rows)
		if d > maxD {
			return
		}
		if d < bestD || d == bestD && (l.df[id] > bestDF || l.df[id] == bestDF && c < best) {
			best, bestD, bestDF = c, d, l.df[id]
		}
	})
	return best
}

// osa is the optimal-string-alignment distance of a and b, or limit+1 as
// soon as it must exceed limit.
func osa(a, b []rune, limit int) int {
	var rows [3][]int
	return osaRows(a, b, limit, &rows)
}

// osaRows is osa with its three rows kept in rows between calls.
func osaRows(a, b []rune, limit int, rows *[3][]int) int {
	if abs(len(a)-len(b)) > limit {
		return limit + 1
	}
	for i := range rows {
		if cap(rows[i]) < len(b)+1 {
			rows[i] = make([]int, len(b)+1)
		}
		rows[i] = rows[i][:len(b)+1]
	}
	prev2, prev, cur := rows[0], rows[1], rows[2]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// maxCooccurDocs bounds the documents scanned per query word.
const maxCooccurDocs = 500

// Related returns up to n corpus words that co-occur with the given words
// more than their frequency predicts, best first. A candidate's score sums,
// over the query words, P(v | w) · log(N / df(v)) on the documents holding
// w; candidates must co-occur in at least two documents, and words in skip
// (and the query words) are never returned.
func (l *Lexicon) Related(words []string, n int, skip func(string) bool) []string {
	if n <= 0 || len(l.docs) == 0 {
		return nil
	}
	score := map[int32]float64{}
	support := map[int32]int{}
	query := map[int32]bool{}
	for _, w := range words {
		if id, ok := l.ids[w]; ok {
			query[id] = true
		}
	}
	N := float64(len(l.docs))
	for id := range query {
		docs := l.post[id]
		if len(docs) > maxCooccurDocs {
			docs = docs[:maxCooccurDocs]
		}
		count := map[int32]int{}
		for _, d := range docs {
			for _, v := range l.docs[d] {
				count[v]++
			}
		}
		for v, c := range count {
			if c < 2 || query[v] {
				continue
			}
			support[v] += c
			score[v] += float64(c) / float64(len(docs)) * math.Log(N/float64(l.df[v]))
		}
	}
	type cand struct {
		id    int32
		score float64
	}
	var cs []cand
	for v, s := range score {
		w := l.words[v]
		if support[v] < 2 || len([]rune(w)) < 3 || skip != nil && skip(w) || strings.IndexFunc(w, unicode.IsDigit) >= 0 {
			continue
		}
		cs = append(cs, cand{v, s})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(l.words[a.id], l.words[b.id])
	})
	out := make([]string, 0, min(n, len(cs)))
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, l.words[c.id])
	}
	return out
}

// minAssociationSupport is how many documents must hold both words for
// Association to be more than -1: rarer pairs are chance.
const minAssociationSupport = 3

// Association is the normalised pointwise mutual information of words a
// and b over the sampled documents, in [-1, 1]: log(P(a,b)/(P(a)P(b))) /
// −log P(a,b), 1 when they always occur together, 0 when independent;
// -1 when either is unknown or they share fewer than
// minAssociationSupport documents.
func (l *Lexicon) Association(a, b string) float64 {
	ia, okA := l.ids[a]
	ib, okB := l.ids[b]
	if !okA || !okB || len(l.docs) == 0 {
		return -1
	}
	pa, pb := l.post[ia], l.post[ib]
	both := 0
	for i, j := 0, 0; i < len(pa) && j < len(pb); {
		switch {
		case pa[i] == pb[j]:
			both++
			i++
			j++
		case pa[i] < pb[j]:
			i++
		default:
			j++
		}
	}
	if both < minAssociationSupport {
		return -1
	}
	n := float64(len(l.docs))
	pab := float64(both) / n
	if pab >= 1 {
		return 1
	}
	return math.Log(pab/(float64(len(pa))/n*float64(len(pb))/n)) / -math.Log(pab)
}
