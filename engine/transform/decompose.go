package transform

import (
	"context"
	"slices"
	"strings"
)

// splitters separate the parts of a compound question.
//
// A conjunction between two content words followed by a function word (or
// the end) joins alternatives ("lift and drag on a wing"); otherwise,
// with two content words on each side, it joins clauses.
var splitters = map[string]bool{"and": true, "or": true, "vs": true, "versus": true, "also": true}

// Bounds of one decomposition. Each alternative doubles the sub-queries a
// question could be read as ("aa and bb of aa and bb of …" has 2^pairs), so
// the split is a depth-first walk that stops once n distinct sub-queries
// are found, after maxDecomposeLeaves sub-queries (duplicates included) or
// after maxDecomposeWork words scanned or copied, whichever comes first:
// what was found by then is the answer. A 4 KiB query (MaxQueryBytes) is
// ≈ 700 words, so the work bound allows its first sub-query (one level per
// conjunction) with room to spare.
const (
	maxDecomposeWork   = 1 << 20
	maxDecomposeLeaves = 64
)

// decompose splits a compound question into up to n sub-queries: first at
// sentence ends, question marks and semicolons, then at a conjunction
// joining two clauses (both sides with at least two content words), or at
// one joining two single words, in which case each sub-query keeps the
// shared words and one of the alternatives ("effect of caffeine and
// nicotine on sleep" → "effect of caffeine on sleep", "effect of nicotine
// on sleep"). A question with no such structure comes back whole. It stops
// with ctx's error when ctx ends.
func (t *Transformer) decompose(ctx context.Context, q string, n int) ([]string, error) {
	var out []string
	d := &decomposer{ctx: ctx, emit: func(p string) bool {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
		return len(out) < n
	}}
	for _, s := range strings.FieldsFunc(q, func(r rune) bool { return r == '?' || r == ';' || r == '.' || r == '!' }) {
		ws, err := t.correctedContext(ctx, s)
		if err != nil {
			return nil, err
		}
		if !d.split(ws) {
			break
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(out) == 0 {
		ws, err := t.correctedContext(ctx, q)
		if err != nil {
			return nil, err
		}
		out = []string{strings.Join(ws, " ")}
	}
	return out, nil
}

// decomposer walks the ways a question splits, depth first, handing each
// sub-query to emit in the order a full expansion would list them.
type decomposer struct {
	ctx    context.Context
	emit   func(string) bool // false: enough sub-queries
	work   int               // words scanned or copied so far
	leaves int
	err    error // ctx's error, once it ended
}

// split emits the sub-queries of ws and reports whether to go on.
func (d *decomposer) split(ws []string) bool {
	if d.err = d.ctx.Err(); d.err != nil {
		return false
	}
	if d.work += len(ws); d.work > maxDecomposeWork {
		return false
	}
	twoLeft := twoContentPrefix(ws) // ws[:i] has two distinct content words iff i > twoLeft
	twoRight := -1                  // ws[j:] has them iff j <= twoRight (computed when first needed)
	for i, w := range ws {
		if !splitters[w] || i == 0 || i == len(ws)-1 {
			continue
		}
		a, b := ws[i-1], ws[i+1]
		alternatives := !functionWords[a] && !functionWords[b] && (i+2 == len(ws) || functionWords[ws[i+2]])
		if !alternatives {
			if twoRight == -1 {
				twoRight = twoContentSuffix(ws)
			}
			if twoLeft >= 0 && i > twoLeft && i+1 <= twoRight {
				return d.split(ws[:i]) && d.split(ws[i+1:])
			}
			continue
		}
		d.work += 2 * len(ws)
		return d.split(slices.Concat(ws[:i], ws[i+2:])) && d.split(slices.Concat(ws[:i-1], ws[i+1:]))
	}
	d.leaves++
	return d.emit(strings.Join(ws, " ")) && d.leaves < maxDecomposeLeaves
}

// twoContentPrefix returns the index at which ws's prefix first holds two
// distinct content words (-1 when it never does).
func twoContentPrefix(ws []string) int {
	first := ""
	for i, w := range ws {
		switch {
		case functionWords[w]:
		case first == "":
			first = w
		case w != first:
			return i
		}
	}
	return -1
}

// twoContentSuffix returns the largest j such that ws[j:] holds two
// distinct content words (-2 when no suffix does).
func twoContentSuffix(ws []string) int {
	last := ""
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		switch {
		case functionWords[w]:
		case last == "":
			last = w
		case w != last:
			return i
		}
	}
	return -2
}
