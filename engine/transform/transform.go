// Package transform rewrites queries for the agentic loop of RCP §7.7.3 and
// §7.8: rewrite (normalisation, spelling correction against the corpus
// vocabulary, expansion with related terms), multi-query, decompose and
// step-back, all offline and deterministic for a seed; hyde and a
// chat-model version of every method when an OpenAI-compatible chat
// endpoint is configured. PRF builds an RM3-style expanded query from the
// top hits of a first retrieval.
//
// Related terms come from the corpus itself (document co-occurrence, see
// Lexicon.Related), from an optional term-neighbour function (the engine
// passes LSA neighbours) and from WordNet synonyms when its database is
// installed; a synonym the corpus does not contain is never added, since it
// could not match anything.
package transform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"

	"github.com/rcpgo/rcpgo/engine/llm"
)

// Method names (§7.8).
const (
	Rewrite    = "rewrite"
	HyDE       = "hyde"
	MultiQuery = "multi-query"
	Decompose  = "decompose"
	StepBack   = "step-back"
)

// OfflineMethods are the methods served without a chat model.
var OfflineMethods = []string{Rewrite, MultiQuery, Decompose, StepBack}

// Bounds of a request (§15.5: transform fan-out is bounded).
const (
	DefaultN = 3
	// DefaultMinAssociation is the NPMI an expansion word needs with a
	// query word (measured: docs/rcpd.md, "Agentic loop", the rewrite row).
	DefaultMinAssociation = 0.7
	MaxN                  = 10
	MaxQueryBytes         = 4096
)

// ErrUnknownMethod is returned for a method the Transformer does not serve.
var ErrUnknownMethod = errors.New("transform: method not available")

// Config configures a Transformer. Every field is optional.
type Config struct {
	// Lexicon is the corpus vocabulary (nil: no spelling correction and no
	// co-occurrence expansion).
	Lexicon *Lexicon
	// MinAssociation is the normalised PMI over the corpus's documents
	// (Lexicon.Association) an expansion word must reach with at least one
	// query word; 0 means DefaultMinAssociation, a value above 1 disables
	// expansion. Without a Lexicon there is no expansion.
	MinAssociation float64
	// WordNet adds synonyms (rewrite, multi-query) and hypernyms (step-back).
	WordNet *WordNet
	// Neighbours returns up to n words related to word (LSA neighbours).
	Neighbours func(word string, n int) []string
	// Stem maps a word to its index term, so expansions never repeat a
	// query word in another inflection.
	Stem func(string) string
	// Chat, when set, serves hyde and the model version of every method.
	Chat   llm.Chat
	Logger *slog.Logger
}

// Transformer serves query/transform. Safe for concurrent use.
type Transformer struct {
	cfg Config
}

// New returns a Transformer.
func New(cfg Config) *Transformer {
	if cfg.Stem == nil {
		cfg.Stem = func(s string) string { return s }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Transformer{cfg: cfg}
}

// Methods lists the methods served, in §7.8 order.
func (t *Transformer) Methods() []string {
	if t.cfg.Chat == nil {
		return slices.Clone(OfflineMethods)
	}
	return []string{Rewrite, HyDE, MultiQuery, Decompose, StepBack}
}

// UsesModel reports whether methods run on the chat model.
func (t *Transformer) UsesModel() bool { return t.cfg.Chat != nil }

// Request is one transform.
type Request struct {
	Query  string
	Method string
	N      int    // queries wanted by multi-query/decompose (0: DefaultN)
	Seed   uint64 // fixes the choice among equally good variants
}

// Result is what a transform produced.
type Result struct {
	Queries      []string
	Hypothetical string
}

// Transform runs req. The query must be non-empty and at most
// MaxQueryBytes; N at most MaxN (the engine validates both for the wire).
func (t *Transformer) Transform(ctx context.Context, req Request) (Result, error) {
	if !slices.Contains(t.Methods(), req.Method) {
		return Result{}, fmt.Errorf("%w: %q", ErrUnknownMethod, req.Method)
	}
	n := req.N
	if n <= 0 {
		n = DefaultN
	}
	n = min(n, MaxN)
	if t.cfg.Chat != nil {
		res, err := chatTransform(ctx, t.cfg.Chat, req.Method, req.Query, n)
		if err == nil || req.Method == HyDE || ctx.Err() != nil {
			return res, err
		}
		t.cfg.Logger.Warn("transform: chat model failed; serving the offline method", "method", req.Method, "err", err)
	}
	if len(req.Query) > MaxQueryBytes {
		return Result{}, fmt.Errorf("%w: %d bytes > %d", ErrQueryTooLong, len(req.Query), MaxQueryBytes)
	}
	var qs []string
	var err error
	switch req.Method {
	case Rewrite:
		var q string
		q, err = t.rewriteQuery(ctx, req.Query)
		qs = []string{q}
	case MultiQuery:
		qs, err = t.multiQuery(ctx, req.Query, n, req.Seed)
	case Decompose:
		qs, err = t.decompose(ctx, req.Query, n)
	case StepBack:
		var q string
		q, err = t.stepBack(ctx, req.Query)
		qs = []string{q}
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Queries: qs}, nil
}

// ErrQueryTooLong is returned for a query over MaxQueryBytes: every
// offline method corrects each word, so the cap bounds their work whoever
// calls (query/transform, retrieve's rewrite, the MCP tools).
var ErrQueryTooLong = errors.New("transform: query too long")

// functionWords are dropped when looking for the content of a question:
// the analyser's stop set plus interrogatives and auxiliaries.
var functionWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for if in into is it no not of on or such
	that the their then there these they this to was will with what which who whom whose when where why how
	do does did done can could should would may might must shall have has had been being am were i me my we our
	you your he she his her its them than also any some all about from between over under after before during
	via vs versus more most less least very much many other others each both either neither`) {
		functionWords[w] = true
	}
}

// IsFunctionWord reports whether w carries no topic.
func IsFunctionWord(w string) bool { return functionWords[w] }

// correctedContext returns the words of q, lower-cased and
// spell-corrected: each distinct word is corrected once, and ctx is
// checked every correctCheckEvery distinct words.
func (t *Transformer) correctedContext(ctx context.Context, q string) ([]string, error) {
	ws := Words(q)
	if t.cfg.Lexicon == nil {
		return ws, ctx.Err()
	}
	done := map[string]string{}
	for i, w := range ws {
		if functionWords[w] {
			continue
		}
		c, ok := done[w]
		if !ok {
			if len(done)%correctCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			c = t.cfg.Lexicon.Correct(w)
			done[w] = c
		}
		ws[i] = c
	}
	return ws, ctx.Err()
}

// correctCheckEvery is how many distinct words are corrected between two
// looks at the context (one correction is microseconds).
const correctCheckEvery = 64

func content(ws []string) []string {
	var out []string
	for _, w := range ws {
		if !functionWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// rewriteQueryWeight is how many times the rewrite repeats the query's
// own words: the index ranks by query term frequency, so the words asked
// weigh 3:1 against each correction or expansion (measured with
// DefaultMinAssociation on Cranfield and SciFact, docs/rcpd.md).
const rewriteQueryWeight = 3

// rewriteQuery is the offline rewrite: the query as asked (its own
// words are never taken away, so the rewrite cannot lose what the
// question matched, and they are repeated to weigh rewriteQueryWeight),
// followed by the spelling corrections of its words the corpus does not
// know and by words associated with its content words above
// MinAssociation.
func (t *Transformer) rewriteQuery(ctx context.Context, q string) (string, error) {
	ws, err := t.correctedContext(ctx, q)
	if err != nil {
		return "", err
	}
	asked := Words(q)
	out := []string{strings.Join(strings.Fields(q), " ")}
	for range rewriteQueryWeight - 1 {
		out = append(out, strings.Join(asked, " "))
	}
	for i, w := range ws {
		if i < len(asked) && w != asked[i] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	c := content(ws)
	out = append(out, t.expand(c, min(5, max(2, len(c))))...)
	return strings.Join(out, " "), nil
}

// associated reports whether expansion word v is associated with one of
// the query words c at least as strongly as MinAssociation (NPMI over
// the corpus's documents): a word that merely co-occurs, or a synonym
// the corpus does not use alongside the query's words, is not added.
func (t *Transformer) associated(v string, c []string) bool {
	l := t.cfg.Lexicon
	if l == nil {
		return false
	}
	min := t.cfg.MinAssociation
	if min == 0 {
		min = DefaultMinAssociation
	}
	for _, w := range c {
		if l.Association(v, w) >= min {
			return true
		}
	}
	return false
}

// known reports whether w is in the corpus often enough to help a query.
func (t *Transformer) known(w string) bool {
	return t.cfg.Lexicon == nil || t.cfg.Lexicon.DF(w) >= 2
}

// expand returns up to n words related to the content words c: first one
// corpus-attested WordNet synonym per word, then one LSA neighbour per
// word, then co-occurring words. No two share a stem with each other or
// with c.
func (t *Transformer) expand(c []string, n int) []string {
	stems := map[string]bool{}
	for _, w := range c {
		stems[t.cfg.Stem(w)] = true
	}
	var out []string
	add := func(w string) bool {
		s := t.cfg.Stem(w)
		if len(out) >= n || stems[s] || functionWords[w] || !t.known(w) || !t.associated(w, c) {
			return false
		}
		stems[s] = true
		out = append(out, w)
		return true
	}
	for _, w := range c {
		if t.cfg.WordNet != nil {
			for _, s := range t.cfg.WordNet.Synonyms(w) {
				if add(s) {
					break
				}
			}
		}
	}
	for _, w := range c {
		if t.cfg.Neighbours != nil {
			for _, s := range t.cfg.Neighbours(w, 5) {
				if add(s) {
					break
				}
			}
		}
	}
	if t.cfg.Lexicon != nil && len(out) < n {
		skip := func(w string) bool { return stems[t.cfg.Stem(w)] || functionWords[w] }
		for _, w := range t.cfg.Lexicon.Related(c, n, skip) {
			add(w)
		}
	}
	return out
}

// multiQuery returns up to n distinct reformulations: the corrected query
// first, then (in an order fixed by seed) the keyword form, the expanded
// form, one synonym substitution per word and one drop-a-word form per
// word (most common word dropped first).
func (t *Transformer) multiQuery(ctx context.Context, q string, n int, seed uint64) ([]string, error) {
	ws, err := t.correctedContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c := content(ws)
	first := strings.Join(ws, " ")
	var pool []string
	pool = append(pool, strings.Join(c, " "))
	if exp := t.expand(c, min(4, max(2, len(c)))); len(exp) > 0 {
		pool = append(pool, strings.Join(append(slices.Clone(c), exp...), " "))
	}
	if t.cfg.WordNet != nil {
		for i, w := range c {
			for _, s := range t.cfg.WordNet.Synonyms(w) {
				if t.known(s) && t.cfg.Stem(s) != t.cfg.Stem(w) {
					v := slices.Clone(c)
					v[i] = s
					pool = append(pool, strings.Join(v, " "))
					break
				}
			}
		}
	}
	if len(c) >= 3 {
		for _, i := range t.byGenerality(c) {
			pool = append(pool, strings.Join(slices.Delete(slices.Clone(c), i, i+1), " "))
		}
	}
	if seed != 0 {
		r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	}
	out := []string{first}
	for _, p := range pool {
		if len(out) == n {
			break
		}
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// byGenerality orders the indexes of c from the most common word in the
// corpus (the least specific) to the rarest; ties keep query order.
func (t *Transformer) byGenerality(c []string) []int {
	idx := make([]int, len(c))
	for i := range idx {
		idx[i] = i
	}
	if t.cfg.Lexicon == nil {
		return idx
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return t.cfg.Lexicon.DF(c[b]) - t.cfg.Lexicon.DF(c[a])
	})
	return idx
}

// stepBack returns a more general query: the content words without
// numbers and without the rarer half (the specifics), plus a WordNet
// hypernym of the rarest word when the corpus has one.
func (t *Transformer) stepBack(ctx context.Context, q string) (string, error) {
	ws, err := t.correctedContext(ctx, q)
	if err != nil {
		return "", err
	}
	c := content(ws)
	c = slices.DeleteFunc(c, func(w string) bool { return strings.IndexFunc(w, unicode.IsDigit) >= 0 })
	if len(c) == 0 {
		return strings.Join(ws, " "), nil
	}
	order := t.byGenerality(c)
	keep := map[int]bool{}
	for _, i := range order[:max(1, (len(c)+1)/2)] {
		keep[i] = true
	}
	var out []string
	for i, w := range c {
		if keep[i] {
			out = append(out, w)
		}
	}
	if t.cfg.WordNet != nil {
		rarest := c[order[len(order)-1]]
		for _, h := range t.cfg.WordNet.Hypernyms(rarest) {
			if t.known(h) && !slices.Contains(out, h) {
				out = append(out, h)
				break
			}
		}
	}
	return strings.Join(out, " "), nil
}
