package pipeline

// Stage pack: the page, its token budget and its cited hits.

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

// pack slices the page, packs the token budget and builds cited hits.
func pack(ctx context.Context, s *State) error {
	r := s.Req
	start := min(r.Offset, len(s.Cands))
	end := min(start+r.K, len(s.Cands))
	page := s.Cands[start:end]
	if err := s.load(ctx, page, r.IncludeText); err != nil {
		return err
	}
	tokens := 0
	if r.TokenBudget != nil {
		n := 0
		for _, c := range page {
			t := tokensOf(c)
			if tokens+t > *r.TokenBudget {
				break
			}
			tokens += t
			n++
		}
		if n == 0 && len(page) > 0 {
			s.note("tokenBudget %d is smaller than the best hit (%d tokens); no hit packed", *r.TokenBudget, tokensOf(page[0]))
		}
		page = page[:n]
		end = start + n
	} else {
		for _, c := range page {
			tokens += tokensOf(c)
		}
	}
	s.Page.Tokens = tokens
	if end < len(s.Cands) && r.K > 0 && end > start {
		s.Page.Next = end
	}
	s.Page.Hits = make([]rcp.Hit, 0, len(page))
	parts := make([]hitParts, len(page))
	for i, c := range page {
		s.Page.Hits = append(s.Page.Hits, s.hit(c, &parts[i]))
		if r.Vectors {
			s.Page.Vectors = append(s.Page.Vectors, c.vec)
		}
	}
	if s.observing() {
		s.observe("pack", 1, fmt.Sprintf("packed %s (%s)", wording.Plural(len(page), "hit", "hits"), wording.Plural(tokens, "token", "tokens")), nil)
	}
	return nil
}

// CiteSource fills cit's title, source, uri and page from d the way every
// hit cites its unit (page points at storage for the page number): the
// source is meta.source when the document has one (a file's URI, set by
// `rcp index add`), else Source.Name, else wireName. It reports whether d
// was written over the wire (for the trust policy).
func CiteSource(d *search.Document, wireName string, cit *rcp.Citation, page *int) bool {
	cit.Title = d.Title
	wire := true
	if d.Source != nil {
		cit.Source, cit.URI = d.Source.Name, d.Source.URI
		if d.Source.Page > 0 {
			*page = d.Source.Page
			cit.Page = page
		}
		wire = d.Source.Name == wireName
	}
	if src, ok := d.Meta["source"].(string); ok && src != "" {
		cit.Source = src
	}
	if cit.Source == "" {
		cit.Source = wireName
	}
	return wire
}

// UnitSpan returns the rune offsets [start, end) d's citation covers: its
// span of the parent document for a chunk (chunk info), else the whole
// text.
func UnitSpan(d *search.Document) (start, end int) {
	if d.Chunk != nil {
		if ci, ok := ReadChunkInfo(d.Meta); ok {
			return ci.Start, ci.End
		}
	}
	return 0, utf8.RuneCountInString(d.Text)
}

// hitParts holds what one wire hit points to, so that a page allocates
// them at once instead of a handful of small objects per hit.
type hitParts struct {
	conf, trustScore float64
	text             string
	start, end, page int
	suspected        bool
	cit              rcp.Citation
	chunk            rcp.ChunkRef
	trust            rcp.Trust
}

// scoreCount is the number of entries of c's hit.scores.
func scoreCount(c *Candidate) int {
	n := 0
	for _, has := range [...]bool{c.HasSparse, c.HasDense, c.HasFused, c.HasRerank} {
		if has {
			n++
		}
	}
	return n
}

// hit builds the wire hit for c, its parts in p.
func (s *State) hit(c *Candidate, p *hitParts) rcp.Hit {
	r := s.Req
	d := c.Doc
	id := c.ID
	unit := rcp.UnitChunk
	if r.Unit == rcp.UnitDocument || r.Unit == rcp.UnitPage {
		id, unit = c.groupID, r.Unit
	} else if d != nil && d.Chunk == nil {
		unit = rcp.UnitDocument // an unchunked document is its own unit
	}
	h := rcp.Hit{ID: rcp.StringID(id), Score: c.Score, Unit: unit, Modality: rcp.ModalityText}
	if r.Confidence {
		p.conf = c.conf
		h.Confidence = &p.conf
	}
	h.Scores = make(map[string]float64, scoreCount(c))
	if c.HasSparse {
		h.Scores["sparse"] = c.Sparse
	}
	if c.HasDense {
		h.Scores["dense"] = c.Dense
	}
	if c.HasFused {
		h.Scores["fused"] = c.Fused
	}
	if c.HasRerank {
		h.Scores["rerank"] = c.Rerank
	}
	if d == nil {
		return h
	}
	if r.IncludeText {
		p.text = d.Text
		h.Text = &p.text
	}
	if _, internal := d.Meta[MetaKey]; !internal && len(d.Meta) > 0 {
		h.Meta = d.Meta // read for this request alone: no copy
	} else if len(d.Meta) > 1 {
		h.Meta = make(map[string]any, len(d.Meta)-1)
		for k, v := range d.Meta {
			if k != MetaKey {
				h.Meta[k] = v
			}
		}
	}
	cit := &p.cit
	wire := CiteSource(d, s.Deps.WireName, cit, &p.page)
	if d.Chunk != nil {
		p.chunk = rcp.ChunkRef{DocID: d.Chunk.DocID, Index: d.Chunk.Index}
		h.Chunk = &p.chunk
		if ci, ok := ReadChunkInfo(d.Meta); ok {
			p.start, p.end = ci.Start, ci.End
			cit.Start, cit.End = &p.start, &p.end
			h.Chunk.Context = ci.Context
		}
	} else {
		p.start, p.end = 0, c.Facts.Runes
		if !hasFacts(c) {
			p.end = utf8.RuneCountInString(d.Text)
		}
		cit.Start, cit.End = &p.start, &p.end
	}
	h.Citation = cit
	srcName := ""
	if d.Source != nil {
		srcName = d.Source.Name
	}
	t := &p.trust
	t.Level = s.Deps.Trust.Level(srcName, wire)
	if s.Deps.Screen {
		verdict, susp := c.Facts.ScreenScore, c.Facts.Suspected // screened at index time
		if !hasFacts(c) {
			sc := trust.Screen(d.Title + "\n" + d.Text)
			verdict, susp = sc.Score, sc.Suspected
		}
		p.trustScore, p.suspected = 1-verdict, susp // trust.score: higher is more trustworthy
		t.Score = &p.trustScore
		t.InjectionSuspected = &p.suspected
	}
	if v := c.verdict; v != nil && v.Quarantined {
		// Quarantined by client reports (§15.3): advisory, never trusted,
		// and trust.score 0 — what tells a reported passage from one
		// that is merely unvetted (the console's "reported" badge).
		t.Level = rcp.TrustUntrusted
		p.trustScore = 0
		t.Score = &p.trustScore
		if v.Injection {
			yes := true
			t.InjectionSuspected = &yes
		}
	}
	h.Trust = t
	return h
}
