package transform

import (
	"cmp"
	"slices"
	"strings"
)

// PRFOptions configure pseudo-relevance feedback.
type PRFOptions struct {
	Docs   int // feedback documents (default 10)
	Terms  int // expansion terms (default 10)
	Repeat int // weight of each original query word, as repetitions (default 2)
}

// DefaultPRF are the options rcpd uses.
var DefaultPRF = PRFOptions{Docs: 10, Terms: 10, Repeat: 2}

// PRF is RM3-style pseudo-relevance feedback: P(w|R) = Σ_d P(d|q)·P(w|d)
// over the top feedback documents (P(d|q) ∝ the first-pass score,
// P(w|d) = tf/|d|), the top Terms words by P(w|R) that are not function
// words, not query words and (with a lexicon) in less than half the
// corpus, appended once each to the query words repeated Repeat times.
// The index ranks by query term frequency, so repetition is how the
// interpolation weight reaches BM25.
func (t *Transformer) PRF(query string, texts []string, scores []float64, o PRFOptions) string {
	if o.Docs <= 0 {
		o.Docs = DefaultPRF.Docs
	}
	if o.Terms <= 0 {
		o.Terms = DefaultPRF.Terms
	}
	if o.Repeat <= 0 {
		o.Repeat = DefaultPRF.Repeat
	}
	qw := Words(query)
	qstems := map[string]bool{}
	for _, w := range qw {
		qstems[t.cfg.Stem(w)] = true
	}
	texts = texts[:min(len(texts), o.Docs)]
	var total float64
	for i := range texts {
		total += max(scores[i], 0)
	}
	rel := map[string]float64{}
	for i, text := range texts {
		pd := 1 / float64(len(texts))
		if total > 0 {
			pd = max(scores[i], 0) / total
		}
		ws := Words(text)
		for _, w := range ws {
			rel[w] += pd / float64(len(ws))
		}
	}
	type tw struct {
		w string
		p float64
	}
	var cands []tw
	for w, p := range rel {
		if functionWords[w] || len(w) < 3 || qstems[t.cfg.Stem(w)] {
			continue
		}
		if l := t.cfg.Lexicon; l != nil && l.Docs() > 0 && 2*l.DF(w) > l.Docs() {
			continue
		}
		cands = append(cands, tw{w, p})
	}
	slices.SortFunc(cands, func(a, b tw) int {
		if c := cmp.Compare(b.p, a.p); c != 0 {
			return c
		}
		return strings.Compare(a.w, b.w)
	})
	var b strings.Builder
	for range o.Repeat {
		for _, w := range qw {
			b.WriteString(w)
			b.WriteByte(' ')
		}
	}
	seen := map[string]bool{}
	n := 0
	for _, c := range cands {
		if n == o.Terms {
			break
		}
		if s := t.cfg.Stem(c.w); !seen[s] {
			seen[s] = true
			b.WriteString(c.w)
			b.WriteByte(' ')
			n++
		}
	}
	return strings.TrimSpace(b.String())
}
