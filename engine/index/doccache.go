package index

import (
	"github.com/maypok86/otter/v2"
	"github.com/rcpgo/rcpgo/engine/search"
)

// docCache keeps recently loaded documents decoded, so a hit that is
// returned again costs a map lookup instead of a bbolt read, a record
// decode and a zstd frame. A document number names one immutable record
// (a replacement gets a new number), so an entry never goes stale; it is
// dropped when its record is purged (purge) and evicted by weight (about
// the bytes it holds). Cached documents are shared between readers: Load's
// callers must not modify them.
type docCache struct {
	c *otter.Cache[search.DocNum, cachedDoc]
}

type cachedDoc struct {
	doc      *search.Document
	facts    search.Facts
	withText bool
}

// DefaultDocCacheBytes is Options.DocCacheBytes when unset.
const DefaultDocCacheBytes = 32 << 20

// docOverhead approximates the bytes a decoded document holds besides its
// strings: the structs, the cache entry, a small metadata map.
const docOverhead = 320

func newDocCache(maxBytes int64) *docCache {
	if maxBytes <= 0 {
		return nil
	}
	c, err := otter.New(&otter.Options[search.DocNum, cachedDoc]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(_ search.DocNum, v cachedDoc) uint32 { return docWeight(v.doc) },
	})
	if err != nil { // only for invalid options, which these are not
		panic(err)
	}
	return &docCache{c: c}
}

func docWeight(d *search.Document) uint32 {
	n := docOverhead + len(d.ID) + len(d.Title) + len(d.Text)
	if d.Source != nil {
		n += len(d.Source.Name) + len(d.Source.URI)
	}
	n += 64 * len(d.Meta)
	return uint32(min(n, 1<<31))
}

// get returns the cached document numbered n if it holds what the caller
// needs (its text when withText).
func (dc *docCache) get(n search.DocNum, withText bool) (*search.Document, search.Facts, bool) {
	if dc == nil {
		return nil, search.Facts{}, false
	}
	v, ok := dc.c.GetIfPresent(n)
	if !ok || withText && !v.withText {
		return nil, search.Facts{}, false
	}
	return v.doc, v.facts, true
}

func (dc *docCache) put(n search.DocNum, d *search.Document, f search.Facts, withText bool) {
	if dc != nil {
		dc.c.Set(n, cachedDoc{doc: d, facts: f, withText: withText})
	}
}

// purge drops the documents whose records were deleted.
func (dc *docCache) purge(seqs []uint64) {
	if dc == nil {
		return
	}
	for _, s := range seqs {
		dc.c.Invalidate(search.DocNum(s))
	}
}
