package retrieval

// Unit "page" (§7.7.2): the pages of paged documents — PDF text arrives
// from internal/ingest with a form feed between pages, and chunkUnits
// chunks such a document page by page, recording each chunk's page in its
// chunk info and citation. The pipeline groups chunk hits by (document,
// page) like unit "document" groups them by document; fillPages then
// turns each group's best chunk into the whole page. An unpaged document
// is one page (its source page, or 1).

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// maxPageChunks bounds the chunks read to rebuild one page.
const maxPageChunks = 256

// fillPages replaces each page hit's text (its best chunk) with the page's
// text and its citation span with the page's; the chunk reference goes (a
// page is not a chunk).
func (rv *Retriever) fillPages(ctx context.Context, hits []rcp.Hit, withText bool) error {
	for i := range hits {
		h := &hits[i]
		if h.Chunk == nil {
			continue // an unchunked document: already the whole page
		}
		chunks, err := rv.pageChunks(ctx, h.Chunk.DocID, h.Chunk.Index)
		if err != nil {
			return err
		}
		h.Chunk = nil
		if len(chunks) == 0 {
			continue
		}
		text := joinSpans(chunks)
		if withText {
			h.Text = &text
		}
		if h.Citation != nil {
			if first, ok := pipeline.ReadChunkInfo(chunks[0].Meta); ok {
				st, en := first.Start, first.Start+utf8.RuneCountInString(text)
				h.Citation.Start, h.Citation.End = &st, &en
			}
		}
	}
	return nil
}

// pageChunks returns, in order, the chunks of doc on the page of chunk at.
func (rv *Retriever) pageChunks(ctx context.Context, doc string, at int) ([]*search.Document, error) {
	get := func(i int) (*search.Document, error) {
		if i < 0 {
			return nil, nil
		}
		d, err := rv.ix.Get(ctx, catalog.ChunkID(doc, i))
		if err != nil {
			return nil, fmt.Errorf("engine: page: %w", err)
		}
		if d == nil || d.Chunk == nil || d.Chunk.DocID != doc {
			return nil, nil
		}
		return d, nil
	}
	hit, err := get(at)
	if err != nil || hit == nil {
		return nil, err
	}
	page := pageOfUnit(hit)
	out := []*search.Document{hit}
	for i := at - 1; i >= 0 && len(out) < maxPageChunks; i-- {
		d, err := get(i)
		if err != nil {
			return nil, err
		}
		if d == nil || pageOfUnit(d) != page {
			break
		}
		out = append([]*search.Document{d}, out...)
	}
	for i := at + 1; len(out) < maxPageChunks; i++ {
		d, err := get(i)
		if err != nil {
			return nil, err
		}
		if d == nil || pageOfUnit(d) != page {
			break
		}
		out = append(out, d)
	}
	return out, nil
}

func pageOfUnit(d *search.Document) int {
	if d.Source != nil && d.Source.Page > 0 {
		return d.Source.Page
	}
	return 1
}

// joinSpans rebuilds the text the chunks cover from their byte spans in
// the parent: overlapping sentences once, a space across a gap.
func joinSpans(chunks []*search.Document) string {
	var sb strings.Builder
	end := -1
	for _, c := range chunks {
		st, txt := c.Chunk.Start, c.Text
		switch {
		case end < 0 || st == end:
		case st > end:
			sb.WriteByte(' ')
		case c.Chunk.End > end && end-st <= len(txt):
			txt = txt[end-st:]
		default:
			continue // wholly inside what is written
		}
		sb.WriteString(txt)
		end = max(end, c.Chunk.End)
	}
	return sb.String()
}
