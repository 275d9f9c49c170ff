// Package chunk splits documents into retrieval units for server-side
// chunking (RCP §7.10 "chunk": true) and counts tokens for token budgets
// (§7.7.2).
//
// # Splitting
//
// Split is structure-aware. It reads the text as Markdown-ish prose:
//
//   - a line starting with 1–6 '#' followed by a space is a heading; it always
//     starts a new chunk and updates the section path (the chain of enclosing
//     headings) reported with every chunk;
//   - blank lines separate paragraphs; a paragraph boundary ends the current
//     chunk once it holds at least half of Options.Size tokens;
//   - paragraphs are split into sentences at '.', '!' or '?' (optionally
//     followed by closing quotes/brackets) followed by white space, and at
//     single newlines; chunks are packed from whole sentences up to
//     Options.Size tokens;
//   - a single sentence longer than Size is cut at word boundaries.
//
// Consecutive chunks of one section overlap: the next chunk starts with the
// trailing whole sentences of the previous one totalling at most
// Options.Overlap tokens (never the whole previous chunk, so splitting always
// advances). Chunks never overlap across a heading.
//
// Every chunk's Text is exactly text[Start:End] (byte offsets into the
// original text, white space trimmed), so citations can point into the
// original document.
//
// # Token counting
//
// Tokens approximates a BPE tokenizer (cl100k-style) without a vocabulary:
// each run of letters and digits counts ceil(runes/6) tokens (at least one),
// and every other non-space rune counts one token. On English prose this is
// within about ±20% of cl100k counts; it is deterministic, allocation-free and
// the same function packs token budgets and sizes chunks.
package chunk

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Defaults of Options.
const (
	DefaultSize    = 200
	DefaultOverlap = 40
)

// Options configure Split. Zero values select the defaults.
type Options struct {
	// Size is the target maximum chunk size in tokens (see Tokens).
	Size int `json:"size"`
	// Overlap is the maximum number of tokens of trailing sentences repeated
	// at the start of the next chunk of the same section. Negative disables
	// overlap.
	Overlap int `json:"overlap"`
}

func (o Options) fill() Options {
	if o.Size <= 0 {
		o.Size = DefaultSize
	}
	if o.Overlap == 0 {
		o.Overlap = DefaultOverlap
	}
	if o.Overlap < 0 {
		o.Overlap = 0
	}
	if o.Overlap >= o.Size {
		o.Overlap = o.Size / 2
	}
	return o
}

// Chunk is one piece of a document.
type Chunk struct {
	Index   int      // 0-based position in the document
	Start   int      // byte offset of the first byte in the original text
	End     int      // byte offset just past the last byte
	Text    string   // text[Start:End]
	Section []string // enclosing headings, outermost first (nil when none)
}

// unit is one sentence (or heading line) with its span.
type unit struct {
	start, end int
	tokens     int
	heading    bool // a heading line: starts a new chunk
	paraStart  bool // first sentence of a paragraph
	section    []string
}

// Split cuts text into chunks; see the package documentation. An empty or
// all-space text yields no chunks.
func Split(text string, opts Options) []Chunk {
	out, _ := SplitContext(context.Background(), text, opts)
	return out
}

// SplitContext is Split that stops with ctx's error when ctx ends. Its
// time is linear in the length of text.
func SplitContext(ctx context.Context, text string, opts Options) ([]Chunk, error) {
	o := opts.fill()
	units, err := segment(ctx, text, o.Size)
	if err != nil {
		return nil, err
	}
	var out []Chunk
	i := 0
	for i < len(units) {
		if len(out)&255 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		start := i
		tokens := 0
		for i < len(units) {
			u := units[i]
			if i > start {
				if u.heading {
					break
				}
				if tokens+u.tokens > o.Size {
					break
				}
				if u.paraStart && tokens >= o.Size/2 {
					break
				}
			}
			tokens += u.tokens
			i++
			if u.heading && i < len(units) && !units[i].heading && tokens+units[i].tokens <= o.Size {
				// keep a heading with the first sentence below it
				tokens += units[i].tokens
				i++
			}
		}
		first, last := units[start], units[i-1]
		out = append(out, Chunk{Index: len(out), Start: first.start, End: last.end,
			Text: text[first.start:last.end], Section: first.section})
		if i >= len(units) || units[i].heading || o.Overlap == 0 {
			continue
		}
		// step back over trailing sentences for the overlap, never to start
		back, ot := i, 0
		for back-1 > start && !units[back-1].heading && ot+units[back-1].tokens <= o.Overlap {
			back--
			ot += units[back].tokens
		}
		i = back
	}
	return out, nil
}

// segment splits text into heading lines and sentences.
func segment(ctx context.Context, text string, size int) ([]unit, error) {
	var units []unit
	var section []string
	var levels []int
	paraStart := true
	pos := 0
	for lines := 0; pos < len(text); lines++ {
		if lines&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		nl := strings.IndexByte(text[pos:], '\n')
		lineEnd := len(text)
		next := len(text)
		if nl >= 0 {
			lineEnd = pos + nl
			next = lineEnd + 1
		}
		line := text[pos:lineEnd]
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			paraStart = true
		case headingLevel(trimmed) > 0:
			lvl := headingLevel(trimmed)
			title := strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
			for len(levels) > 0 && levels[len(levels)-1] >= lvl {
				levels = levels[:len(levels)-1]
				section = section[:len(section)-1]
			}
			levels = append(levels, lvl)
			section = append(section[:len(section):len(section)], title)
			s, e := trimSpan(text, pos, lineEnd)
			units = append(units, unit{start: s, end: e, tokens: Tokens(text[s:e]), heading: true, paraStart: true, section: section})
			paraStart = true
		default:
			for _, sp := range sentences(text, pos, lineEnd) {
				for _, piece := range hardSplit(text, sp[0], sp[1], size) {
					units = append(units, unit{start: piece[0], end: piece[1], tokens: Tokens(text[piece[0]:piece[1]]),
						paraStart: paraStart, section: section})
					paraStart = false
				}
			}
		}
		pos = next
	}
	return units, nil
}

func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || (line[n] != ' ' && line[n] != '\t') {
		return 0
	}
	return n
}

func trimSpan(text string, s, e int) (int, int) {
	for s < e {
		r, n := utf8.DecodeRuneInString(text[s:])
		if !unicode.IsSpace(r) {
			break
		}
		s += n
	}
	for e > s {
		r, n := utf8.DecodeLastRuneInString(text[:e])
		if !unicode.IsSpace(r) {
			break
		}
		e -= n
	}
	return s, e
}

// sentences returns the trimmed sentence spans of text[s:e] (one line).
func sentences(text string, s, e int) [][2]int {
	var out [][2]int
	cur := s
	for i := s; i < e; {
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		j := i
		for j < e && strings.ContainsRune(`"')]»”’`, rune(text[j])) {
			j++
		}
		if j < e {
			r2, _ := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsSpace(r2) {
				continue
			}
		}
		if a, b := trimSpan(text, cur, j); a < b {
			out = append(out, [2]int{a, b})
		}
		cur = j
		i = j
	}
	if a, b := trimSpan(text, cur, e); a < b {
		out = append(out, [2]int{a, b})
	}
	return out
}

// hardSplit cuts a span longer than size tokens at word boundaries. The
// token count of the growing piece is kept incrementally (a counter that
// is fed rune by rune), so the cost is linear in the span.
func hardSplit(text string, s, e, size int) [][2]int {
	if Tokens(text[s:e]) <= size {
		return [][2]int{{s, e}}
	}
	var out [][2]int
	cur, lastSpace := s, -1
	var tc tokenCounter
	for i := s; i < e; {
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			lastSpace = i
		}
		i += n
		if tc.add(r) > size {
			cut := i - n
			if lastSpace > cur {
				cut = lastSpace
			}
			if cut <= cur {
				cut = i
			}
			if a, b := trimSpan(text, cur, cut); a < b {
				out = append(out, [2]int{a, b})
			}
			cur, lastSpace = cut, -1
			i = cut
			tc = tokenCounter{}
		}
	}
	if a, b := trimSpan(text, cur, e); a < b {
		out = append(out, [2]int{a, b})
	}
	return out
}

// Tokens returns the approximate token count of s (see the package
// documentation).
func Tokens(s string) int {
	var tc tokenCounter
	n := 0
	for _, r := range s {
		n = tc.add(r)
	}
	return n
}

// tokenCounter counts Tokens incrementally: add returns the count of the
// runes added so far.
type tokenCounter struct {
	done int // tokens of finished word runs and symbols
	run  int // runes of the current word run
}

func (t *tokenCounter) add(r rune) int {
	switch {
	case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
		t.run++
	case unicode.IsSpace(r):
		t.done += (t.run + 5) / 6
		t.run = 0
	default:
		t.done += (t.run+5)/6 + 1
		t.run = 0
	}
	return t.done + (t.run+5)/6
}
