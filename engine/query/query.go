// Package query is the syntax of a retrieve query's text and its meaning
// for matching, apart from any index (as zoekt keeps query/ apart from its
// index).
//
// A query text may quote phrases ("like this"): a document matches only if
// every quoted phrase occurs in it — its analysed terms at the same
// relative positions (stop words removed from the phrase still count as
// gaps) within one field. All terms, quoted or not, are ranked by BM25F as
// usual; the phrases only restrict which documents may rank. An unpaired
// quote is ignored.
//
// A proximity query ("like this"~N, Lucene's sloppy phrase) relaxes the
// positions: its terms must occur in one field, each at its own position,
// within N position moves of the phrase — max(p−o) − min(p−o) ≤ N over the
// terms' positions p and offsets o in the phrase. ~0 is the exact phrase;
// ~1 allows one word between two terms; swapping two adjacent terms takes
// ~2. The suffix is syntax, not a ranked word (RankText).
//
// The embedded index tests phrases on its stored positions
// (engine/index); a backend without positions tests them on the analysed
// text of the hits it returns (Matcher).
package query

import (
	"strings"

	"github.com/rcpgo/rcpgo/engine/analysis"
)

// MaxPhrases bounds the quoted phrases of one query.
const MaxPhrases = 16

// MaxSlop bounds a proximity query's slop; a larger one is taken as it
// (no field holds that many positions, so both mean "anywhere in one
// field").
const MaxSlop = 1 << 24

// Phrase is one quoted phrase, analysed: its terms and their positions
// relative to the first term (Offsets), and the slop of a proximity query
// (0: the exact phrase).
type Phrase struct {
	Terms   []string
	Offsets []int
	Slop    int
}

// Phrases returns the quoted phrases of text that have at least one term
// (at most MaxPhrases).
func Phrases(an *analysis.Analyzer, text string) []Phrase {
	var out []Phrase
	for len(out) < MaxPhrases {
		_, inner, slop, rest, ok := cutQuoted(text)
		if !ok {
			break
		}
		text = rest
		toks := an.Analyze(inner)
		if len(toks) == 0 {
			continue
		}
		p := Phrase{Slop: slop}
		for _, t := range toks {
			p.Terms = append(p.Terms, t.Term)
			p.Offsets = append(p.Offsets, t.Position-toks[0].Position)
		}
		out = append(out, p)
	}
	return out
}

// cutQuoted finds the first quoted span of text: head runs up to its
// closing quote, inner is what the quotes hold, slop is its proximity
// suffix's and rest follows that suffix; ok is false when text holds no
// pair of quotes.
func cutQuoted(text string) (head, inner string, slop int, rest string, ok bool) {
	i := strings.IndexByte(text, '"')
	if i < 0 {
		return "", "", 0, "", false
	}
	j := strings.IndexByte(text[i+1:], '"')
	if j < 0 {
		return "", "", 0, "", false
	}
	end := i + 1 + j + 1
	slop, n := parseSlop(text[end:])
	return text[:end], text[i+1 : end-1], slop, text[end+n:], true
}

// parseSlop reads the proximity suffix "~N" at the start of s (right after
// a phrase's closing quote): the slop and the bytes it takes, or (0, 0)
// when s starts with none.
func parseSlop(s string) (slop, n int) {
	if len(s) < 2 || s[0] != '~' {
		return 0, 0
	}
	for n = 1; n < len(s) && s[n] >= '0' && s[n] <= '9'; n++ {
		slop = min(slop*10+int(s[n]-'0'), MaxSlop)
	}
	if n == 1 {
		return 0, 0
	}
	return slop, n
}

// RankText is the part of a query text that ranks: the text without the
// proximity suffixes ("~N" right after a quoted phrase), which are syntax,
// not words. A text without one is returned as it is.
func RankText(text string) string {
	if !strings.Contains(text, `"~`) {
		return text
	}
	var b strings.Builder
	for {
		head, _, _, rest, ok := cutQuoted(text)
		if !ok {
			break
		}
		b.WriteString(head)
		text = rest
	}
	b.WriteString(text)
	return b.String()
}
