package knowledge

// Citations of the structured hits (graph, memory, tree): every hit that
// stands for units of the index cites them exactly as a retrieve hit cites
// its unit — source (a file's URI for `rcp index add`), uri, title, rune
// offsets into the document, page — never the method that wrote them.

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
)

// MetaCitations is the hit meta key listing the citations of every unit
// behind a structured hit (path, subgraph, community, tree-node, node):
// hit.citation is the first of them.
const MetaCitations = "citations"

// maxHitCitations bounds meta.citations.
const maxHitCitations = 10

// unitCitation is d's citation and trust as a retrieve hit carries them.
// span, when not nil, narrows the citation to byte offsets [span[0],
// span[1]) of d.Text (the evidence sentence of a triple).
func (kn *Knowledge) unitCitation(d *search.Document, span *[2]int) (*rcp.Citation, *rcp.Trust) {
	cit := &rcp.Citation{}
	var page int
	wire := pipeline.CiteSource(d, kn.opts.WireSource, cit, &page)
	start, end := pipeline.UnitSpan(d)
	if span != nil && span[0] >= 0 && span[0] <= span[1] && span[1] <= len(d.Text) {
		end = min(end, start+utf8.RuneCountInString(d.Text[:span[1]]))
		start += utf8.RuneCountInString(d.Text[:span[0]])
	}
	cit.Start, cit.End = &start, &end
	src := ""
	if d.Source != nil {
		src = d.Source.Name
	}
	tr := &rcp.Trust{Level: trust.Policy{Sources: kn.opts.TrustedSources}.Level(src, wire)}
	if kn.opts.Screen {
		sc := trust.Screen(d.Title + "\n" + d.Text)
		score, susp := 1-sc.Score, sc.Suspected
		tr.Score, tr.InjectionSuspected = &score, &susp
	}
	return cit, tr
}

// citeUnits sets h.citation (and trust) to the first live unit of ids and
// meta.citations to the citations of up to maxHitCitations of them; units
// the index no longer holds are skipped. It returns the live ids.
func (kn *Knowledge) citeUnits(ctx context.Context, h *rcp.Hit, ids []string) ([]string, error) {
	var live []string
	var cits []any
	for _, id := range ids {
		d, err := kn.ix.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		if d == nil {
			continue
		}
		live = append(live, id)
		if len(cits) >= maxHitCitations {
			continue
		}
		cit, tr := kn.unitCitation(d, nil)
		if h.Citation == nil {
			h.Citation, h.Trust = cit, tr
		}
		cits = append(cits, citationMeta(id, cit))
	}
	if len(cits) > 1 {
		if h.Meta == nil {
			h.Meta = map[string]any{}
		}
		h.Meta[MetaCitations] = cits
	}
	return live, nil
}

// citationMeta is one entry of meta.citations: the unit id and its
// citation's fields.
func citationMeta(id string, c *rcp.Citation) map[string]any {
	m := map[string]any{"id": id, "source": c.Source}
	if c.URI != "" {
		m["uri"] = c.URI
	}
	if c.Title != "" {
		m["title"] = c.Title
	}
	if c.Start != nil && c.End != nil {
		m["start"], m["end"] = *c.Start, *c.End
	}
	if c.Page != nil {
		m["page"] = *c.Page
	}
	return m
}
