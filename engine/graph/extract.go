package graph

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Node kinds: an entity is a capitalised (proper-noun) phrase or an
// acronym; a keyphrase is a run of content words scored within its unit.
const (
	KindEntity    = 1
	KindKeyphrase = 2
)

// Extraction limits, per unit (bounded work and memory per document).
const (
	maxEntityWords  = 4
	maxKeyphrases   = 3
	maxNodesPerUnit = 12
	maxPredWords    = 8
	maxTriples      = 16
	maxLeadBytes    = 320
)

// Mention is one extracted node of a unit: a normalised phrase and its kind.
type Mention struct {
	Name string
	Kind uint8
}

// Triple is a (subject, predicate, object) read off one sentence: two
// consecutive entity mentions and the words between them. S and O index
// Extraction.Nodes.
type Triple struct {
	S, O int
	Pred string
}

// Extraction is what one unit (a document or a chunk) contributes to the
// graph.
type Extraction struct {
	Nodes   []Mention
	Triples []Triple
	Lead    string // the unit's most entity-dense sentence (for summaries)
}

type token struct {
	text  string // surface form
	lower string
	cap   bool // starts with an upper-case letter
	acro  bool // two or more letters, all upper case
	stop  bool
}

// Extract reads the nodes and triples of one unit offline: entities are
// maximal runs of capitalised words (a sentence-initial stop word is not
// part of one) and acronyms; keyphrases are the most frequent runs of
// content words (ties by first occurrence), YAKE-style candidates without
// a model; triples join consecutive entities of a sentence by the words
// between them.
func Extract(title, text string) Extraction {
	var ex Extraction
	index := map[string]int{}
	add := func(name string, kind uint8) int {
		if i, ok := index[name]; ok {
			return i
		}
		if len(ex.Nodes) >= maxNodesPerUnit {
			return -1
		}
		index[name] = len(ex.Nodes)
		ex.Nodes = append(ex.Nodes, Mention{Name: name, Kind: kind})
		return index[name]
	}
	sentences := splitSentences(title, text)
	bestLead, bestN := "", -1
	kp := map[string]*kpCand{}
	pos := 0
	toksOf := make([][]token, len(sentences))
	midCaps := map[string]bool{} // capitalised away from a sentence start
	for i, s := range sentences {
		toksOf[i] = tokenize(s)
		for j, t := range toksOf[i] {
			if j > 0 && t.cap {
				midCaps[t.lower] = true
			}
		}
	}
	for si, s := range sentences {
		toks := toksOf[si]
		ents := entitySpans(toks, midCaps)
		n := 0
		prev, prevEnd := -1, 0
		for _, sp := range ents {
			i := add(phrase(toks[sp[0]:sp[1]]), KindEntity)
			if i < 0 {
				continue
			}
			n++
			if prev >= 0 && prev != i && len(ex.Triples) < maxTriples {
				if pred := predicate(toks[prevEnd:sp[0]]); pred != "" {
					ex.Triples = append(ex.Triples, Triple{S: prev, O: i, Pred: pred})
				}
			}
			prev, prevEnd = i, sp[1]
		}
		if n > bestN && s != title {
			bestLead, bestN = s, n
		}
		pos = keyphraseCandidates(toks, kp, pos)
	}
	for _, c := range topKeyphrases(kp, maxKeyphrases) {
		if _, ok := index[c]; !ok {
			add(c, KindKeyphrase)
		}
	}
	ex.Lead = truncate(bestLead, maxLeadBytes)
	return ex
}

type kpCand struct {
	name  string
	count int
	first int
}

// keyphraseCandidates counts runs of lower-case content words (n-grams of
// one and two words) of one sentence.
func keyphraseCandidates(toks []token, kp map[string]*kpCand, pos int) int {
	run := 0
	for i, t := range toks {
		pos++
		if t.stop || t.cap || t.acro || utf8.RuneCountInString(t.lower) < 4 || !hasLetter(t.lower) {
			run = 0
			continue
		}
		run++
		count(kp, t.lower, pos)
		if run >= 2 {
			count(kp, toks[i-1].lower+" "+t.lower, pos)
		}
	}
	return pos
}

func count(kp map[string]*kpCand, name string, pos int) {
	c, ok := kp[name]
	if !ok {
		c = &kpCand{name: name, first: pos}
		kp[name] = c
	}
	c.count++
}

// topKeyphrases keeps candidates seen at least twice (a phrase mentioned
// once is not what a unit is about), bigrams before their words on ties.
func topKeyphrases(kp map[string]*kpCand, n int) []string {
	var list []*kpCand
	for _, c := range kp {
		if c.count >= 2 {
			list = append(list, c)
		}
	}
	sort.Slice(list, func(a, b int) bool {
		x, y := list[a], list[b]
		if x.count != y.count {
			return x.count > y.count
		}
		if wx, wy := strings.Count(x.name, " "), strings.Count(y.name, " "); wx != wy {
			return wx > wy
		}
		if x.first != y.first {
			return x.first < y.first
		}
		return x.name < y.name
	})
	out := make([]string, 0, n)
	for _, c := range list[:min(n, len(list))] {
		out = append(out, c.name)
	}
	return out
}

// entitySpans returns [start, end) token spans of entity mentions. A lone
// capitalised word at a sentence start is only a name if the unit also
// capitalises it elsewhere ("Researchers found" is not an entity).
func entitySpans(toks []token, midCaps map[string]bool) [][2]int {
	var spans [][2]int
	for i := 0; i < len(toks); {
		t := toks[i]
		if !(t.cap || t.acro) || t.stop || !hasLetter(t.lower) {
			i++
			continue
		}
		j := i + 1
		for j < len(toks) && j-i < maxEntityWords && (toks[j].cap || toks[j].acro) && !toks[j].stop {
			j++
		}
		if i > 0 || j-i > 1 || t.acro || midCaps[t.lower] {
			spans = append(spans, [2]int{i, j})
		}
		i = j
	}
	return spans
}

func phrase(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.lower
	}
	return strings.Join(parts, " ")
}

// predicate is the words between two entity mentions, lower-cased; empty
// when they are too far apart to be related by the sentence.
func predicate(toks []token) string {
	if len(toks) == 0 || len(toks) > maxPredWords {
		return ""
	}
	return phrase(toks)
}

// splitSentences splits title and text into sentences at . ! ? followed by
// a space and at line breaks.
func splitSentences(title, text string) []string {
	var out []string
	if t := strings.TrimSpace(title); t != "" {
		out = append(out, t)
	}
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := -1
		switch {
		case c == '\n':
			end = i
		case (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'):
			end = i + 1
		}
		if end >= 0 {
			if s := strings.TrimSpace(text[start:end]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// tokenize splits a sentence into words (letters, digits, inner - and ').
func tokenize(s string) []token {
	var toks []token
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := strings.Trim(s[start:end], "-'")
		start = -1
		if w == "" {
			return
		}
		r, _ := utf8.DecodeRuneInString(w)
		lower := strings.ToLower(w)
		t := token{text: w, lower: lower, cap: unicode.IsUpper(r), stop: stopWords[lower]}
		t.acro = utf8.RuneCountInString(w) >= 2 && w == strings.ToUpper(w) && hasLetter(lower)
		toks = append(toks, t)
	}
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || ((r == '-' || r == '\'') && start >= 0)
		if word {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return toks
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// stopWords are English function words: never an entity on their own (a
// capitalised sentence-initial "The" is not a name) nor a keyphrase.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are as at be
because been before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his how however i if in
into is it its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves whose whereas thus therefore within
without among may might must shall upon via per et al using used use one two three new`) {
		m[w] = true
	}
	return m
}()
