// Package fusion merges per-engine ranked hit lists into one list (RCP/1
// §16.3): Reciprocal Rank Fusion (the default), weighted score fusion with
// per-engine min-max normalisation, and convex combination anchored at each
// engine's advertised scoreFloor.
//
// # Input and arithmetic
//
// Lists are a slice, so engine order is explicit. Engines are walked in
// slice order and each engine's hits in list order; the 1-based position is
// the rank. Every occurrence adds its contribution to its document's fused
// score and the list's weight to its summed weight, accumulating in float64
// in that order (so an id repeated inside one list contributes twice). The
// order of additions is observable in the last ulp, and this package
// reproduces the reference SDKs bit for bit.
//
//   - RRF: w / (rrfK + rank), rrfK default 60, weight default 1.
//   - Weighted: w · (score − min) / (max − min), min and max taken over the
//     list's hits that have a score; a hit without a score counts as raw 0;
//     when max == min every hit of the list gets norm 1.0.
//   - Convex: the same with min replaced by the list's ScoreFloor; a list
//     with Role RoleDense is weighted α (default 0.5) and one with
//     RoleLexical 1 − α; lists without a role use their Weight. When
//     max == floor the norm is 1.0; a score below the floor is not clamped.
//     §16.3: a client MUST fall back to RRF when any engine lacks a floor, so
//     Fuse does exactly that (see EffectiveMethod).
//
// rcp.Hit cannot tell an absent score from 0, so a hit whose Score is NaN is
// treated as "no score" (excluded from min/max, normalised as raw 0). A
// decoder that maps an absent or null "score" (§4.6) to NaN gets the
// reference semantics; a hit with score 0 is scored.
//
// # Identity, deduplication and order
//
// Documents are keyed by the stringified Hit.id (rcp.ID.String: the string
// itself, or a number's JSON text exactly as received, so 1.0 and "1" are
// different documents and 12345678901234567890 is exact). Options.Key may
// key on citation.uri or a content hash instead (§16.3 MAY). A hit without
// an id is an error (the schema requires Hit.id).
//
// The output is ordered by fused score descending, then summed weight
// descending, then stringified id ascending in byte order (= code point
// order), then key. Floats compare exactly. The order is total, so it never
// depends on Go map iteration.
//
// Of the hits sharing a key, the first seen is kept unless a later one is
// strictly richer: more text runes (utf8.RuneCountInString), then more
// content blocks. The kept hit's engine becomes meta.engine.
//
// # Output hits
//
// Each fused hit is a copy of the kept hit with Score set to the fused
// score and (unless Options.Bare) a fresh Meta map holding, in order of
// precedence:
//
//  1. the kept hit's own meta keys;
//  2. meta.engine, meta.engineRank and meta.engineScore (the kept hit's
//     engine, 1-based rank and original score; engineScore is omitted for
//     score-less hits), each only when the hit did not already carry it, so
//     an upstream federation's origin survives;
//  3. keys of the other duplicates' meta that are still missing, in
//     encounter order (§16.3: the fused hit SHOULD merge meta). The
//     reference SDKs keep only the richest hit's meta; this is a deliberate
//     divergence;
//  4. meta.fusedScore, always set (as the references do).
//
// # Order independence
//
// §16.3 promises "a total order independent of engine response arrival
// order". The comparator is a total order over (score, weight, id, key), so
// for a given set of fused scores the output order is independent of the
// order of the input lists. The fused scores themselves are float sums whose
// last bit can depend on addition order (vector
// rrf/float-summation-order-matters), and the kept body and meta.engine
// depend on which engine is seen first when richness ties. So permuting the
// lists leaves unchanged: the set of documents, their summed weights, their
// scores to within a few ulps, and the whole order whenever contributions
// add exactly (for example dyadic weights and norms). Callers that need
// strict independence should sort their lists by engine id before fusing;
// the slice order is then canonical.
package fusion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/rcp"
)

// Role is an engine's role in convex combination.
type Role string

// Convex roles (§16.3: α weights the dense engine, 1 − α the lexical one).
const (
	RoleDense   Role = "dense"
	RoleLexical Role = "lexical"
)

// DefaultRRFK is the §16.3 default rrfK.
const DefaultRRFK = 60

// List is one engine's ranked hits, best first.
type List struct {
	Engine string    // registry id; becomes meta.engine
	Hits   []rcp.Hit // ranked, best first
	// Weight multiplies the list's contributions; nil means 1.0 (so an
	// explicit 0 is expressible).
	Weight *float64
	// ScoreFloor is the engine's advertised scoreFloor (§6.1), needed by
	// convex fusion.
	ScoreFloor *float64
	// Role places the list in the convex formula.
	Role Role
}

// Options configure Fuse. The zero value is RRF with rrfK 60 and no
// truncation.
type Options struct {
	Method string   // rcp.FusionRRF (default ""), rcp.FusionWeighted or rcp.FusionConvex
	RRFK   *float64 // nil: 60
	Alpha  *float64 // convex α in [0,1]; nil: 0.5
	K      *int     // truncate to K results; nil keeps all, 0 returns none
	Key    KeyFunc  // dedup identity; nil: KeyByID
	// Bare leaves each Result.Hit.Meta as the kept hit had it, without
	// the fused meta described under "Output hits": for callers that use
	// only keys and scores (the engine's pipeline fuses a few hundred
	// candidates per hybrid retrieve, and building those maps was most of
	// the fusion's cost). Order and scores are the same.
	Bare bool
}

// KeyFunc returns the identity under which hits are merged.
type KeyFunc func(h *rcp.Hit) string

// KeyByID keys on the stringified id (§16.3 default).
func KeyByID(h *rcp.Hit) string { return idString(h.ID) }

// idString is rcp.ID.String without a JSON decode for the common case of a
// string id with no escapes (rcp.ID keeps string ids canonically escaped).
func idString(id rcp.ID) string {
	raw := id.Raw()
	if id.IsString() && len(raw) >= 2 && !strings.ContainsRune(raw, '\\') {
		return raw[1 : len(raw)-1]
	}
	return id.String()
}

// KeyByCitationURI keys on citation.uri, falling back to the id for hits
// without one. Keys are prefixed so a URI never collides with an id.
func KeyByCitationURI(h *rcp.Hit) string {
	if h.Citation != nil && h.Citation.URI != "" {
		return "uri:" + h.Citation.URI
	}
	return "id:" + idString(h.ID)
}

// KeyByContentHash keys on a SHA-256 of the text and text content blocks,
// falling back to the id for hits with no text.
func KeyByContentHash(h *rcp.Hit) string {
	sum := sha256.New()
	n := 0
	if h.Text != nil && *h.Text != "" {
		sum.Write([]byte(*h.Text))
		n++
	}
	for _, c := range h.Content {
		sum.Write([]byte{0})
		sum.Write([]byte(c.Type + "\x00" + c.Text + "\x00" + c.URI + "\x00" + c.Data))
		n++
	}
	if n == 0 {
		return "id:" + idString(h.ID)
	}
	return "sha256:" + hex.EncodeToString(sum.Sum(nil))
}

// Result is one fused document.
type Result struct {
	Hit    rcp.Hit // the kept body; Score is the fused score, Meta as documented
	Key    string  // dedup identity
	ID     string  // stringified id of the kept hit
	Score  float64 // fused score
	Weight float64 // summed weight (tie-break)
	Engine string  // engine (List.Engine) the kept hit came from; meta.engine keeps an upstream tag if the hit had one
	Rank   int     // 1-based rank of the kept hit in its engine's list
}

// ErrMissingID reports a hit without an id.
var ErrMissingID = errors.New("fusion: hit has no id")

// EffectiveMethod returns the method Fuse will apply: convex falls back to
// RRF when any list lacks a ScoreFloor (§16.3 MUST); "" means RRF.
func EffectiveMethod(lists []List, method string) string {
	switch method {
	case "", rcp.FusionRRF:
		return rcp.FusionRRF
	case rcp.FusionConvex:
		for _, l := range lists {
			if l.ScoreFloor == nil {
				return rcp.FusionRRF
			}
		}
	}
	return method
}

type acc struct {
	key, id  string
	score    float64
	weight   float64
	hit      *rcp.Hit
	list     int // index of the kept hit's list
	rank     int
	richText int
	others   []*rcp.Hit // other duplicates, for meta merging
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Fuse merges lists as documented in the package comment.
func Fuse(lists []List, opts Options) ([]Result, error) {
	return FuseContext(context.Background(), lists, opts)
}

// checkEvery is how many hits FuseContext handles between two context
// checks: a cancelled fusion of many or long lists (content-hash keys hash
// every hit's text) stops within milliseconds.
const checkEvery = 1024

// FuseContext is Fuse that stops with ctx's error once ctx ends.
func FuseContext(ctx context.Context, lists []List, opts Options) ([]Result, error) {
	p, err := resolve(lists, opts)
	if err != nil {
		return nil, err
	}
	keyOf := opts.Key
	if keyOf == nil {
		keyOf = KeyByID
	}

	total := 0
	for _, l := range lists {
		total += len(l.Hits)
	}
	index := make(map[string]int, total)
	accs := make([]acc, 0, total)
	seen := 0

	for li := range lists {
		l := &lists[li]
		sc, err := p.scale(l, len(l.Hits), func(i int) float64 { return l.Hits[i].Score })
		if err != nil {
			return nil, err
		}
		for hi := range l.Hits {
			if seen++; seen%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			h := &l.Hits[hi]
			if h.ID.IsZero() {
				return nil, fmt.Errorf("%w: engine %q rank %d", ErrMissingID, l.Engine, hi+1)
			}
			rank := hi + 1
			c := sc.Contribution(rank, h.Score)
			key := keyOf(h)
			i, seen := index[key]
			if !seen {
				id := key
				if opts.Key != nil {
					id = idString(h.ID)
				}
				i = len(accs)
				index[key] = i
				accs = append(accs, acc{key: key, id: id, hit: h, list: li, rank: rank,
					richText: utf8.RuneCountInString(h.TextOf())})
			} else {
				a := &accs[i]
				rt := utf8.RuneCountInString(h.TextOf())
				if rt > a.richText || (rt == a.richText && len(h.Content) > len(a.hit.Content)) {
					a.others = append(a.others, a.hit)
					a.hit, a.list, a.rank, a.richText, a.id = h, li, rank, rt, idString(h.ID)
				} else {
					a.others = append(a.others, h)
				}
			}
			a := &accs[i]
			a.score += c
			a.weight += sc.Weight
		}
	}

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	order := make([]*acc, len(accs))
	for i := range accs {
		order[i] = &accs[i]
	}
	slices.SortFunc(order, func(a, b *acc) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		case a.weight > b.weight:
			return -1
		case a.weight < b.weight:
			return 1
		}
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	if opts.K != nil && *opts.K < len(order) {
		order = order[:max(*opts.K, 0)]
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Result, len(order))
	for i, a := range order {
		engine := lists[a.list].Engine
		hit := *a.hit
		hit.Score = a.score
		if !opts.Bare {
			hit.Meta = fusedMeta(a, engine)
		}
		out[i] = Result{Hit: hit, Key: a.key, ID: a.id, Score: a.score, Weight: a.weight, Engine: engine, Rank: a.rank}
	}
	return out, nil
}

// params are Options resolved and checked against the lists.
type params struct {
	method      string
	rrfK, alpha float64
}

// resolve applies Options' defaults and checks them (EffectiveMethod
// decides the method).
func resolve(lists []List, opts Options) (params, error) {
	p := params{method: EffectiveMethod(lists, opts.Method), rrfK: DefaultRRFK, alpha: 0.5}
	if p.method != rcp.FusionRRF && p.method != rcp.FusionWeighted && p.method != rcp.FusionConvex {
		return p, fmt.Errorf("fusion: unknown method %q", opts.Method)
	}
	if opts.RRFK != nil {
		p.rrfK = *opts.RRFK
		if !finite(p.rrfK) || p.rrfK < 0 {
			return p, fmt.Errorf("fusion: rrfK %v must be a finite number ≥ 0", p.rrfK)
		}
	}
	if opts.Alpha != nil {
		p.alpha = *opts.Alpha
		if !(p.alpha >= 0 && p.alpha <= 1) {
			return p, fmt.Errorf("fusion: alpha %v outside [0,1]", p.alpha)
		}
	}
	return p, nil
}

// scale is list l's arithmetic under p; its n hits' scores are score(0),
// …, score(n-1), best first.
func (p params) scale(l *List, n int, score func(int) float64) (Scale, error) {
	sc := Scale{rrf: p.method == rcp.FusionRRF, rrfK: p.rrfK, Weight: 1}
	if l.Weight != nil {
		sc.Weight = *l.Weight
	}
	if p.method == rcp.FusionConvex {
		switch l.Role {
		case RoleDense:
			sc.Weight = p.alpha
		case RoleLexical:
			sc.Weight = 1 - p.alpha
		}
	}
	if !finite(sc.Weight) {
		return sc, fmt.Errorf("fusion: engine %q weight %v is not finite", l.Engine, sc.Weight)
	}
	if !sc.rrf {
		var err error
		if sc.lo, sc.span, err = bounds(l, n, score, p.method); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

// Scale is one list's share of the fused arithmetic: what each of its
// hits adds to its document's fused score and summed weight. Fuse applies
// it to every hit; Scales gives it to callers that keep their own
// candidates and only need the numbers (the engine's pipeline fuses two
// lists of a few dozen candidates per hybrid retrieve, for which building
// hits, keys and maps cost more than the arithmetic).
type Scale struct {
	Weight   float64 // added to the document's summed weight per hit
	rrf      bool
	rrfK     float64
	lo, span float64
}

// Contribution is what the hit at 1-based rank with score adds to its
// document's fused score (a NaN score is "no score", as in Fuse).
func (sc Scale) Contribution(rank int, score float64) float64 {
	if sc.rrf {
		return sc.Weight / (sc.rrfK + float64(rank))
	}
	norm := 1.0
	if sc.span != 0 {
		if math.IsNaN(score) {
			score = 0
		}
		norm = (score - sc.lo) / sc.span
	}
	return sc.Weight * norm
}

// Scales checks opts as Fuse does and returns each list's Scale. lists
// give each list's Engine, Weight, ScoreFloor and Role (their Hits are not
// read); scores[i] are list i's hit scores, best first. A caller that adds,
// for every document, the contributions of its hits in list order starting
// from 0 (and likewise the weights) gets Fuse's scores bit for bit.
func Scales(lists []List, scores [][]float64, opts Options) ([]Scale, error) {
	if len(scores) != len(lists) {
		return nil, fmt.Errorf("fusion: %d score lists for %d lists", len(scores), len(lists))
	}
	p, err := resolve(lists, opts)
	if err != nil {
		return nil, err
	}
	out := make([]Scale, len(lists))
	for i := range lists {
		ss := scores[i]
		if out[i], err = p.scale(&lists[i], len(ss), func(j int) float64 { return ss[j] }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bounds returns the normalisation origin and span of a list: (min, max-min)
// for weighted, (floor, max-floor) for convex, over the hits that have a
// score. A span of 0 (all equal, one hit, or no scored hit) means norm 1.0.
func bounds(l *List, n int, score func(int) float64, method string) (lo, span float64, err error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range n {
		s := score(i)
		if math.IsNaN(s) {
			continue
		}
		if math.IsInf(s, 0) {
			return 0, 0, fmt.Errorf("fusion: engine %q rank %d has a non-finite score", l.Engine, i+1)
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	if math.IsInf(hi, -1) { // no scored hit
		return 0, 0, nil
	}
	if method == rcp.FusionConvex {
		lo = *l.ScoreFloor
		if !finite(lo) {
			return 0, 0, fmt.Errorf("fusion: engine %q scoreFloor %v is not finite", l.Engine, lo)
		}
	}
	if span = hi - lo; !finite(span) {
		return 0, 0, fmt.Errorf("fusion: engine %q score range overflows", l.Engine)
	}
	return lo, span, nil
}

func fusedMeta(a *acc, engine string) map[string]any {
	m := make(map[string]any, len(a.hit.Meta)+4)
	maps.Copy(m, a.hit.Meta)
	setIfAbsent := func(k string, v any) {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	setIfAbsent("engine", engine)
	setIfAbsent("engineRank", a.rank)
	if s := a.hit.Score; finite(s) {
		setIfAbsent("engineScore", s)
	}
	for _, o := range a.others {
		for k, v := range o.Meta {
			setIfAbsent(k, v)
		}
	}
	m["fusedScore"] = a.score
	return m
}

// Hits returns the fused hits of rs.
func Hits(rs []Result) []rcp.Hit {
	out := make([]rcp.Hit, len(rs))
	for i := range rs {
		out[i] = rs[i].Hit
	}
	return out
}
