package pipeline

// What the engine stores about a chunk in its metadata (MetaKey), and
// the pages of paged documents.

import (
	"strconv"

	"github.com/rcpgo/rcpgo/engine/search"
)

// Internal metadata the engine stores under MetaKey on chunk documents.
const MetaKey = "_rcpd"

// ChunkInfo is stored under meta[MetaKey] of chunks: rune offsets into the
// parent text, the section path and the situating context (contextual).
type ChunkInfo struct {
	Start   int
	End     int
	Page    int // 1-based page of a paged document's chunk (0: unpaged)
	Section []string
	Context string
}

// PageID names page n of document doc (unit "page").
func PageID(doc string, n int) string { return doc + "#p" + strconv.Itoa(n) }

// pageOf is the 1-based page a unit lies on, 0 for a unit of a document
// without pages: only paginated documents (PDF, whose text arrives with
// form feeds between pages, or a document whose meta names its page) have
// page units.
func pageOf(d *search.Document) int {
	if d != nil && d.Source != nil && d.Source.Page > 0 {
		return d.Source.Page
	}
	return 0
}

// ReadChunkInfo decodes meta[MetaKey].
func ReadChunkInfo(meta map[string]any) (ChunkInfo, bool) {
	m, ok := meta[MetaKey].(map[string]any)
	if !ok {
		return ChunkInfo{}, false
	}
	num := func(k string) int {
		switch v := m[k].(type) {
		case float64:
			return int(v)
		case int:
			return v
		case interface{ Int64() (int64, error) }:
			n, _ := v.Int64()
			return int(n)
		}
		return 0
	}
	ci := ChunkInfo{Start: num("start"), End: num("end"), Page: num("page")}
	ci.Context, _ = m["context"].(string)
	if sec, ok := m["section"].([]any); ok {
		for _, x := range sec {
			if str, ok := x.(string); ok {
				ci.Section = append(ci.Section, str)
			}
		}
	}
	return ci, true
}
