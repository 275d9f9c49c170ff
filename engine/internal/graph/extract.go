package graph

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Node kinds: an entity is a name — a capitalised phrase, an acronym, a
// camel-case identifier, or a declared identifier of source code; a
// keyphrase is a run of content words the unit is about.
const (
	KindEntity    = 1
	KindKeyphrase = 2
)

// Extraction thresholds, per unit (docs/rcpd.md, "Extraction"). Limits
// grow with the unit's length so that a whole unchunked document is as
// well covered as its chunks would be, within bounds.
const (
	maxEntityWords    = 4
	maxPhraseWords    = 3
	baseNodes         = 12
	wordsPerNode      = 25 // one more node per this many words
	maxNodesPerUnit   = 300
	baseKeyphrases    = 6
	wordsPerKeyphrase = 40
	maxKeyphrases     = 60
	maxPredWords      = 6 // words between subject and object of a triple
	baseTriples       = 16
	wordsPerTriple    = 20
	maxTriples        = 200
	windowWords       = 80 // nodes co-occur when mentioned within one window
	maxLeadBytes      = 320
	headingWords      = 8    // a line of at most this many words without final punctuation is a heading
	codeCharShare     = 0.08 // a line with this share of code punctuation is code
	codeTokenShare    = 0.4  // … or with this share of identifier-like tokens
)

// Mention is one extracted node of a unit: a normalised phrase and its kind.
type Mention struct {
	Name string
	Kind uint8
}

// Triple is a (subject, predicate, object) read off one sentence: a
// subject–verb–object or copula pattern between two recognised nodes. S
// and O index Extraction.Nodes; Start and End are the byte offsets of the
// evidence sentence in the unit's text (-1, -1: the unit's title).
type Triple struct {
	S, O       int
	Pred       string
	Start, End int
}

// Extraction is what one unit (a document or a chunk) contributes to the
// graph.
type Extraction struct {
	Nodes   []Mention
	Triples []Triple
	Lead    string  // the unit's representative sentence (for summaries)
	Groups  [][]int // Nodes indexes mentioned within one window; nil: all co-occur
	// Terms, when set, are the unit's distinct analysed terms, kept so
	// that MatchUnits can find the unit by its words (memories built from
	// inline documents, which have no index to retrieve from).
	Terms []string
}

type token struct {
	lower       string
	start, end  int  // byte offsets in the sentence's source (text, or title)
	cap         bool // starts with an upper-case letter
	acro        bool // two or more letters, all upper case
	camel       bool // an upper-case letter after a lower-case one (RWMutex, JavaScript)
	digit       bool
	code        bool // holds an underscore: an identifier fragment
	firstLetter bool // starts with a letter (not 0xFF)
	afterBreak  bool // follows a colon, semicolon, bracket, quote or dash: capitalised as a start
	hyphenCaps  bool // every hyphenated part starts with a capital
	letters     int
	stop        bool
}

type sentence struct {
	text    string
	start   int // byte offset in the unit's text; -1: the title
	heading bool
	toks    []token
}

// Extract reads the nodes, triples and lead of one unit offline (no
// model). Prose and code are told apart line by line (code: a share of
// code punctuation or of identifier-like tokens; with code set, every line
// but comments); prose gives entities (capitalised runs with at least one
// real name word, acronyms, camel-case words — never single letters,
// numerals or identifier fragments), keyphrases (the most frequent runs
// of content words, inflections merged) and triples (subject–verb–object
// and copula patterns between two recognised nodes of a sentence). Code
// gives nothing in a prose unit (an identifier the text discusses is
// found in the text) and its declared and frequent identifiers in a
// source file.
func Extract(title, text string, code bool) Extraction {
	return ExtractDoc([]SourceUnit{{Title: title, Text: text, Code: code}})[0]
}

// ExtractDoc extracts the units of one document together: a keyphrase
// counts as repeated when the document repeats it (a chunk seldom repeats
// its own), and each unit keeps the candidates it mentions.
func ExtractDoc(units []SourceUnit) []Extraction {
	xs := make([]*extractor, len(units))
	doc := map[string]float64{}
	// How the document writes a word (lower case anywhere, capitalised
	// mid-sentence, as an acronym) is judged over all its units.
	lower, mid, acros := map[string]bool{}, map[string]bool{}, map[string]int{}
	for i, u := range units {
		xs[i] = newExtractor(u.Title, u.Text, u.Code, lower, mid, acros)
	}
	for i := range units {
		xs[i].collect()
		for k, c := range xs[i].cands {
			doc[k] += c.count
		}
	}
	out := make([]Extraction, len(units))
	for i, x := range xs {
		x.doc = doc
		x.selectNodes()
		x.mentions()
		out[i] = x.ex
	}
	return out
}

type candidate struct {
	name  string // surface, lower-cased
	kind  uint8
	count float64
	first int
	words int
}

type extractor struct {
	text   string
	code   bool
	sents  []sentence
	words  int // prose words
	lower  map[string]bool
	mid    map[string]bool       // capitalised away from a sentence start
	acros  map[string]int        // acronym occurrences in prose
	cands  map[string]*candidate // by key
	idents map[string]*candidate
	doc    map[string]float64 // candidate counts over the whole document
	pos    int
	ex     Extraction
	index  map[string]int // key → Nodes index
}

func newExtractor(title, text string, code bool, lower, mid map[string]bool, acros map[string]int) *extractor {
	x := &extractor{text: text, code: code, lower: lower, mid: mid, acros: acros,
		cands: map[string]*candidate{}, idents: map[string]*candidate{}, index: map[string]int{}}
	if t := strings.TrimSpace(title); t != "" {
		x.sents = append(x.sents, sentence{text: t, start: -1, heading: true, toks: tokenize(t)})
	}
	off := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		start := off
		off += len(line)
		body := strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(body) == "" {
			continue
		}
		if x.codeLine(body) {
			x.identifiers(body)
			continue
		}
		if code {
			body = stripComment(body)
		}
		x.addProse(body, start)
	}
	for _, s := range x.sents {
		for j, t := range s.toks {
			if t.acro {
				x.acros[t.lower]++
			}
			if !t.cap && !t.acro {
				x.lower[t.lower] = true
			} else if j > 0 && !s.heading && !t.afterBreak {
				x.mid[t.lower] = true
			}
		}
		if s.start >= 0 {
			x.words += len(s.toks)
		}
	}
	return x
}

// codeLine classifies one line.
func (x *extractor) codeLine(line string) bool {
	if x.code {
		return !isComment(line)
	}
	clean := proseView(line)
	if codeStart(clean) {
		return true
	}
	nonSpace, punct := 0, 0
	for _, r := range clean {
		if unicode.IsSpace(r) {
			continue
		}
		nonSpace++
		if strings.ContainsRune("{}()[];=<>&|*$#\"'`+/\\%^~@", r) {
			punct++
		}
	}
	if nonSpace == 0 {
		return false
	}
	if float64(punct)/float64(nonSpace) >= codeCharShare {
		return true
	}
	toks := tokenize(clean)
	idents := 0
	for _, t := range toks {
		if t.camel || t.code || (t.digit && t.letters > 0) || (t.acro && t.letters >= 2) {
			idents++
		}
	}
	return len(toks) >= 3 && float64(idents)/float64(len(toks)) >= codeTokenShare
}

// codeStart: a line opening like a declaration ("package x", "func f(",
// "const (", "import …"), holding ":=" or a grammar production
// ("ShortVarDecl = IdentifierList … .").
func codeStart(line string) bool {
	t := strings.TrimSpace(line)
	for _, p := range []string{"package ", "func ", "import ", "const (", "var (", "type (", "#include", "#define"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	if strings.Contains(t, ":=") {
		return true
	}
	name, rest, ok := strings.Cut(t, " = ")
	return ok && strings.HasSuffix(rest, " .") && !strings.Contains(name, " ")
}

// proseView drops what prose legitimately carries in punctuation before a
// line is classified: link targets, URLs and inline code spans.
func proseView(line string) string {
	var b strings.Builder
	inTick := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '`':
			if !inTick {
				b.WriteString(" x ")
			}
			inTick = !inTick
		case inTick:
		case c == ']' && i+1 < len(line) && line[i+1] == '(':
			if j := strings.IndexByte(line[i:], ')'); j > 0 {
				i += j
			}
		case strings.HasPrefix(line[i:], "http://") || strings.HasPrefix(line[i:], "https://"):
			for i < len(line) && line[i] != ' ' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isComment(line string) bool {
	t := strings.TrimSpace(line)
	for _, p := range []string{"//", "#", "/*", "*", "--", ";", "\"\"\"", "'''"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func stripComment(line string) string {
	return strings.TrimLeft(strings.TrimSpace(line), "/#*-;\"' ")
}

// addProse splits a prose line into sentences at . ! ? followed by a
// space; a short line without final punctuation is a heading.
func (x *extractor) addProse(line string, off int) {
	trim := strings.TrimSpace(line)
	if n := len(strings.Fields(trim)); n <= headingWords && !strings.ContainsAny(trim[len(trim)-1:], ".!?:;,") {
		lead := len(line) - len(strings.TrimLeft(line, " \t"))
		x.sents = append(x.sents, sentence{text: trim, start: off + lead, heading: true, toks: tokenize(trim)})
		return
	}
	start := 0
	emit := func(end int) {
		s := line[start:end]
		lead := len(s) - len(strings.TrimLeft(s, " \t"))
		if s = strings.TrimSpace(s); s != "" {
			x.sents = append(x.sents, sentence{text: s, start: off + start + lead, toks: tokenize(s)})
		}
	}
	for i := 0; i < len(line); i++ {
		if c := line[i]; (c == '.' || c == '!' || c == '?') && (i+1 == len(line) || line[i+1] == ' ') {
			emit(i + 1)
			start = i + 1
		}
	}
	emit(len(line))
}

// identifiers counts the identifiers of a code line of a source file;
// declared names (after a declaration keyword) count as entities.
func (x *extractor) identifiers(line string) {
	if !x.code {
		return
	}
	toks := tokenize(line)
	for i, t := range toks {
		if t.letters < 3 || codeKeywords[t.lower] || t.letters*2 < len(t.lower) {
			continue
		}
		declared := i > 0 && declKeywords[toks[i-1].lower]
		c, ok := x.idents[t.lower]
		if !ok {
			c = &candidate{name: t.lower, kind: KindKeyphrase, first: x.pos, words: 1}
			x.idents[t.lower] = c
		}
		x.pos++
		c.count++
		if declared {
			c.kind = KindEntity
		}
	}
}

// collect gathers entity and keyphrase candidates from the prose.
func (x *extractor) collect() {
	for si := range x.sents {
		s := &x.sents[si]
		weight := 1.0
		if s.heading {
			weight = 2 // a heading or title says what follows is about
		}
		taken := make([]bool, len(s.toks))
		for _, sp := range x.entitySpans(s) {
			x.count(s.toks[sp[0]:sp[1]], KindEntity, weight, x.pos+sp[0])
			for j := sp[0]; j < sp[1]; j++ {
				taken[j] = true
			}
		}
		run := 0
		for j := range s.toks {
			x.pos++
			if taken[j] || !x.contentWord(s, j) {
				run = 0
				continue
			}
			run++
			for n := 1; n <= min(run, maxPhraseWords); n++ {
				x.count(s.toks[j-n+1:j+1], KindKeyphrase, weight, x.pos)
			}
		}
	}
	for k, c := range x.idents {
		if c.kind == KindEntity || c.count >= 3 {
			if _, ok := x.cands[k]; !ok {
				x.cands[k] = c
			}
		}
	}
}

func (x *extractor) count(toks []token, kind uint8, w float64, pos int) {
	name := phrase(toks)
	k := Key(name)
	c, ok := x.cands[k]
	if !ok {
		c = &candidate{name: name, kind: kind, first: pos, words: len(toks)}
		x.cands[k] = c
	}
	if name < c.name {
		c.name = name
	}
	if kind == KindEntity {
		c.kind = KindEntity
	}
	c.count += w
}

// contentWord: a keyphrase word — no stop or generic word, no numeral or
// identifier fragment, at least three letters, lower case (or a
// capitalised word at a sentence or heading start that is no name).
func (x *extractor) contentWord(s *sentence, j int) bool {
	t := s.toks[j]
	if t.stop || genericWords[t.lower] || t.digit || t.code || t.camel || t.letters < 3 || t.letters != utf8.RuneCountInString(strings.ReplaceAll(t.lower, "-", "")) {
		return false
	}
	if t.acro {
		return false
	}
	return !t.cap || j == 0 || s.heading || x.lower[t.lower]
}

// nameWord: a token that can be part of an entity.
func nameWord(t token) bool {
	if t.stop || t.code || t.letters < 2 || (t.letters < 3 && !t.acro) || !t.firstLetter || strings.ContainsAny(t.lower, "'’") {
		return false
	}
	if strings.Contains(t.lower, "-") && !t.acro && !t.hyphenCaps {
		return false // "Go-specific", "pre-Go": not names; "SHA-256", "Hans-J" are
	}
	if t.digit && !(t.letters >= 2 && (t.acro || t.camel)) {
		return false // numerals, registers (R15), hex
	}
	return t.cap || t.acro || t.camel
}

// entitySpans returns [start, end) token spans of entity mentions: runs
// of name words. A run is a name when it holds an acronym (of 3+ letters,
// or 2 seen twice), a camel-case word, a word the unit capitalises away
// from a sentence start and never writes in lower case, or two words of
// running text (not a heading, whose words are capitalised anyway).
func (x *extractor) entitySpans(s *sentence) [][2]int {
	var spans [][2]int
	toks := s.toks
	for i := 0; i < len(toks); {
		if !nameWord(toks[i]) {
			i++
			continue
		}
		if i == 0 && !s.heading && x.lower[toks[i].lower] && i+1 < len(toks) && nameWord(toks[i+1]) {
			i++ // a common word capitalised to open the sentence ("Register BP")
			continue
		}
		j := i + 1
		for j < len(toks) && j-i < maxEntityWords && nameWord(toks[j]) {
			j++
		}
		switch {
		case s.heading && x.repeated(s, i, j):
			spans = append(spans, [2]int{i, j}) // the text names it too
		case s.heading:
			// A heading capitalises every word: only its known names are.
			for a := i; a < j; {
				if !x.knownName(toks[a]) {
					a++
					continue
				}
				b := a + 1
				for b < j && x.knownName(toks[b]) {
					b++
				}
				spans = append(spans, [2]int{a, b})
				a = b
			}
		case x.isName(s, i, j):
			spans = append(spans, [2]int{i, j})
		}
		i = j
	}
	return spans
}

// repeated: heading words [i, j) recur as written in the unit's text
// beyond the heading itself.
func (x *extractor) repeated(s *sentence, i, j int) bool {
	surface := s.text[s.toks[i].start:s.toks[j-1].end]
	n := strings.Count(x.text, surface)
	if s.start >= 0 {
		n-- // the heading line is part of the text
	}
	return n >= 1
}

// knownName: a word that is a name wherever it stands.
func (x *extractor) knownName(t token) bool {
	return t.camel || (t.acro && t.letters >= 3) || (x.mid[t.lower] && !x.lower[t.lower])
}

func (x *extractor) isName(s *sentence, i, j int) bool {
	for _, t := range s.toks[i:j] {
		if x.knownName(t) {
			return true
		}
	}
	if j-i >= 2 {
		return true
	}
	t := s.toks[i]
	if t.acro {
		return x.acros[t.lower] >= 2
	}
	// A lone capitalised word opening a sentence is a name when the unit
	// never writes it in lower case and a verb follows ("Alice works"),
	// unless it looks like an inflected common word ("Researchers found").
	w := t.lower
	if (i != 0 && !t.afterBreak) || j >= len(s.toks) || x.lower[w] || genericWords[w] || !verbForm(s.toks[j]) ||
		strings.HasSuffix(w, "s") || strings.HasSuffix(w, "ing") || strings.HasSuffix(w, "ed") {
		return false
	}
	// "Primary expressions are", "Multiple executions of": the word after
	// is the head of a noun phrase, not a verb.
	return j+1 >= len(s.toks) || !(auxiliaries[s.toks[j+1].lower] || s.toks[j+1].lower == "of")
}

// selectNodes keeps the unit's nodes: entities, then keyphrases, by
// weighted count (longer phrases first on ties), within the unit's limits.
func (x *extractor) selectNodes() {
	limit := min(maxNodesPerUnit, baseNodes+x.words/wordsPerNode)
	kpLimit := min(maxKeyphrases, baseKeyphrases+x.words/wordsPerKeyphrase)
	var ents, kps []*candidate
	for k, c := range x.cands {
		switch {
		case c.kind == KindEntity:
			ents = append(ents, c)
		case c.count >= 2 || x.doc[k] >= 2:
			kps = append(kps, c)
		}
	}
	rank := func(l []*candidate) {
		sort.Slice(l, func(a, b int) bool {
			sa, sb := l[a].count*(1+0.5*float64(l[a].words-1)), l[b].count*(1+0.5*float64(l[b].words-1))
			if sa != sb {
				return sa > sb
			}
			if da, db := x.doc[Key(l[a].name)], x.doc[Key(l[b].name)]; da != db {
				return da > db
			}
			if l[a].first != l[b].first {
				return l[a].first < l[b].first
			}
			return l[a].name < l[b].name
		})
	}
	rank(ents)
	rank(kps)
	for _, c := range ents {
		if len(x.ex.Nodes) >= limit {
			break
		}
		x.add(c)
	}
	chosen := 0
	for _, c := range kps {
		if len(x.ex.Nodes) >= limit || chosen >= kpLimit {
			break
		}
		if x.subsumed(c) {
			continue
		}
		x.add(c)
		chosen++
	}
}

func (x *extractor) add(c *candidate) {
	x.index[Key(c.name)] = len(x.ex.Nodes)
	x.ex.Nodes = append(x.ex.Nodes, Mention{Name: c.name, Kind: c.kind})
}

// subsumed: a phrase inside an already chosen longer one seen at least as
// often adds nothing.
func (x *extractor) subsumed(c *candidate) bool {
	for k, i := range x.index {
		m := x.ex.Nodes[i]
		if len(m.Name) > len(c.name) && strings.Contains(" "+k+" ", " "+Key(c.name)+" ") && x.cands[k] != nil && x.cands[k].count >= c.count {
			return true
		}
	}
	return false
}

// mentions finds the chosen nodes in every sentence: the co-occurrence
// windows, the triples and the lead.
func (x *extractor) mentions() {
	tripleLimit := min(maxTriples, baseTriples+x.words/wordsPerTriple)
	var titleNodes []int
	var window []int
	var windows [][]int
	inWindow := map[int]bool{}
	wordsIn := 0
	bestLead, bestN := "", 0
	flush := func() {
		if len(window) > 0 {
			windows = append(windows, window)
		}
		window, inWindow, wordsIn = nil, map[int]bool{}, 0
	}
	for si := range x.sents {
		s := &x.sents[si]
		ms := x.sentenceMentions(s)
		if s.start < 0 {
			for _, m := range ms {
				titleNodes = append(titleNodes, m.node)
			}
			continue
		}
		distinct := map[int]bool{}
		for _, m := range ms {
			distinct[m.node] = true
			if !inWindow[m.node] {
				inWindow[m.node] = true
				window = append(window, m.node)
			}
		}
		if !s.heading && len(distinct) > bestN {
			bestLead, bestN = s.text, len(distinct)
		}
		if !s.heading {
			x.triples(s, ms, tripleLimit)
		}
		if wordsIn += len(s.toks); wordsIn >= windowWords {
			flush()
		}
	}
	flush()
	if len(windows) > 1 {
		for i := range windows {
			windows[i] = appendNewInt(windows[i], titleNodes...)
		}
		x.ex.Groups = windows
	}
	x.ex.Lead = truncate(bestLead, maxLeadBytes)
}

type mention struct{ node, i, j int } // node index, token span

// sentenceMentions finds chosen nodes in s, longest phrase first, without
// overlap.
func (x *extractor) sentenceMentions(s *sentence) []mention {
	var out []mention
	for i := 0; i < len(s.toks); {
		found := false
		for n := min(maxEntityWords, len(s.toks)-i); n >= 1; n-- {
			if n == 1 && s.toks[i].stop {
				break
			}
			if idx, ok := x.index[Key(phrase(s.toks[i:i+n]))]; ok && !verbalForm(s.toks[i+n-1].lower, x.ex.Nodes[idx].Name) {
				out = append(out, mention{idx, i, i + n})
				i += n
				found = true
				break
			}
		}
		if !found {
			i++
		}
	}
	return out
}

// triples reads subject–verb–object and copula patterns between
// consecutive mentions of a sentence: at most maxPredWords words between
// them, the first (after adverbs) a verb form, no clause break.
func (x *extractor) triples(s *sentence, ms []mention, limit int) {
	for k := 1; k < len(ms); k++ {
		if len(x.ex.Triples) >= limit {
			return
		}
		a, b := ms[k-1], ms[k]
		if a.node == b.node || b.i-a.j < 1 || b.i-a.j > maxPredWords {
			continue
		}
		between := s.toks[a.j:b.i]
		gap := s.text[s.toks[a.j-1].end:s.toks[b.i].start]
		if strings.ContainsAny(gap, ";:()[]") {
			continue
		}
		v := 0
		for v < len(between) && adverbs[between[v].lower] {
			v++
		}
		if v == len(between) || !verbForm(between[v]) || clauseBreak(between) {
			continue
		}
		// A verb guessed from its ending (-s, -ed) needs a whole subject:
		// one opening the sentence or after a function word, not the tail
		// of a longer noun phrase ("a language model passages").
		if !auxiliaries[between[v].lower] && !commonVerbs[between[v].lower] && a.i > 0 && !s.toks[a.i-1].stop {
			continue
		}
		words := make([]string, 0, len(between))
		for _, t := range between {
			words = append(words, t.lower)
		}
		for len(words) > 1 && articles[words[len(words)-1]] {
			words = words[:len(words)-1]
		}
		x.ex.Triples = append(x.ex.Triples, Triple{S: a.node, O: b.node, Pred: strings.Join(words, " "), Start: s.start, End: s.start + len(s.text)})
	}
}

// verbForm: a copula, auxiliary or modal, a listed verb, or a third-person
// or past form (-s, -ed) of a word that is not a stop word.
func verbForm(t token) bool {
	w := t.lower
	if auxiliaries[w] {
		return true
	}
	if t.stop || t.cap || t.digit || t.code || relatives[w] {
		return false
	}
	if commonVerbs[w] {
		return true
	}
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ed"):
		return true
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return true
	}
	return false
}

// verbalForm: the last word of a mention is a verb form (-ed, -ing) of a
// node whose name is not ("scored" is no mention of "score").
func verbalForm(word, name string) bool {
	for _, suf := range []string{"ed", "ing"} {
		if strings.HasSuffix(word, suf) && !strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// clauseBreak: the words between two mentions hold a conjunction or a
// relative word, so they are not one predicate.
func clauseBreak(toks []token) bool {
	for _, t := range toks {
		if relatives[t.lower] || conjunctions[t.lower] {
			return true
		}
	}
	return false
}

func appendNewInt(dst []int, xs ...int) []int {
	for _, x := range xs {
		found := false
		for _, d := range dst {
			if d == x {
				found = true
				break
			}
		}
		if !found {
			dst = append(dst, x)
		}
	}
	return dst
}

func phrase(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.lower
	}
	return strings.Join(parts, " ")
}

// tokenize splits a sentence into words (letters, digits, underscores,
// inner - and '), a trailing possessive 's dropped.
func tokenize(s string) []token {
	var toks []token
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		st := start
		start = -1
		w := s[st:end]
		for len(w) > 0 && strings.ContainsRune("-'’", rune(w[len(w)-1])) {
			w = w[:len(w)-1]
		}
		if w == "" {
			return
		}
		for _, p := range []string{"'s", "’s"} {
			if strings.HasSuffix(w, p) && len(w) > len(p) {
				w = strings.TrimSuffix(w, p)
			}
		}
		t := classify(w, st, st+len(w))
		prev := strings.TrimRight(s[:st], " \t")
		t.afterBreak = prev != "" && strings.ContainsAny(prev[len(prev)-1:], ":;([{\"'*•-")
		if r, _ := utf8.DecodeLastRuneInString(prev); r == '“' || r == '—' || r == '–' || r == '‘' {
			t.afterBreak = true
		}
		toks = append(toks, t)
	}
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || ((r == '-' || r == '\'' || r == '’') && start >= 0)
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

func classify(w string, start, end int) token {
	r, _ := utf8.DecodeRuneInString(w)
	lower := strings.ToLower(w)
	t := token{lower: lower, start: start, end: end, cap: unicode.IsUpper(r), stop: stopWords[lower], code: strings.Contains(w, "_"),
		firstLetter: unicode.IsLetter(r)}
	upper, prevLower := 0, false
	for _, c := range w {
		switch {
		case unicode.IsLetter(c):
			t.letters++
			if unicode.IsUpper(c) {
				upper++
				if prevLower {
					t.camel = true
				}
			}
			prevLower = unicode.IsLower(c)
		case unicode.IsDigit(c):
			t.digit = true
			prevLower = false
		}
	}
	t.hyphenCaps = true
	for _, part := range strings.Split(w, "-") {
		if r, _ := utf8.DecodeRuneInString(part); !unicode.IsUpper(r) {
			t.hyphenCaps = false
		}
	}
	t.acro = t.letters >= 2 && upper == t.letters
	t.camel = t.camel && t.letters-upper >= 2 // xFF is a hex digit run, not a name
	return t
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

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// stopWords are English function words: never an entity on their own (a
// capitalised sentence-initial "The" is not a name) nor a keyphrase word.
var stopWords = wordSet(`a about above after again against all also am an and any are as at be
because been before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his how however i if in
into is it its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves whose whereas thus therefore within
without among may might must shall upon via per et al using used use one two three four five six seven
eight nine ten new let lets yes`)

// genericWords carry no topic of their own: kept out of keyphrases (they
// make "quickly" or "several times" nodes).
var genericWords = wordSet(`also often usually rather instead still even every much many several whole
cannot almost always never sometimes quickly slowly easily simply really especially generally typically
example examples following follows given like make makes made way ways thing things something anything
everything part parts kind kinds first second last next less least few lot lots far near well better best
good great small large long short high low whether either neither etc see note section sections chapter
appendix introduction overview summary otherwise likewise certain particular specific various different
same able unless since though although already yet now once twice times time`)

// auxiliaries are verb forms that are stop words.
var auxiliaries = wordSet(`is are was were be been being am has have had can could may might must shall
should will would does do did becomes become remains`)

// commonVerbs are base-form verbs of technical prose the suffix rule
// misses.
var commonVerbs = wordSet(`run read write keep find take give make use need let map store mean build
send receive return call hold lead add put`)

var adverbs = wordSet(`also often usually only then not never always still typically generally first
instead just already`)

var relatives = wordSet(`which that who whom whose where when while because although if unless since`)

var articles = wordSet(`a an the`)

var conjunctions = wordSet(`and or but nor so yet`)

// codeKeywords are words of programming languages that name no entity.
var codeKeywords = wordSet(`func function return if else for range var const type struct interface
package import go defer chan map select case default switch break continue nil true false int string bool
byte error def class self let fn pub public private protected static void new this null none while do try
catch throw from as in is not and or lambda yield async await export extends implements final int64 int32
uint uint64 float float64 float32 rune any end begin then elif fi done local echo`)

// declKeywords precede a declared name.
var declKeywords = wordSet(`func function type class def struct interface fn trait enum const var let`)
