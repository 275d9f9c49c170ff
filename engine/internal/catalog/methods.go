package catalog

// The x-rcpgo document methods (rcp/vendor_rcpgo.go): x-rcpgo/get returns
// whole stored documents, x-rcpgo/list pages through document ids and
// x-rcpgo/values lists the distinct values of a filterable field.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
)

// Handle registers the x-rcpgo document methods on r: get and list, and
// values when fields are declared.
func (c *Catalog) Handle(r *rcp.Router) {
	rcp.Handle(r, rcp.MethodRCPGoGet, c.getDocuments)
	rcp.Handle(r, rcp.MethodRCPGoList, c.listDocuments)
	if len(c.fields) > 0 {
		rcp.Handle(r, rcp.MethodRCPGoValues, c.fieldValuesMethod)
	}
}

// LiveChunk returns a live chunk of parent among its first n, or nil
// (caller holds the catalog lock, gate.RLockCatalog, or commits).
func (c *Catalog) LiveChunk(ctx context.Context, parent string, n int) (*search.Document, error) {
	for i := 0; i < n; i++ {
		d, err := c.ix.Get(ctx, ChunkID(parent, i))
		if err != nil {
			return nil, err
		}
		if d != nil && d.Chunk != nil && d.Chunk.DocID == parent {
			return d, nil
		}
	}
	return nil, nil
}

// ---- x-rcpgo/get ----

func (c *Catalog) getDocuments(ctx context.Context, p *rcp.GetDocumentsParams) (*rcp.GetDocumentsResult, error) {
	if p.IDs == nil {
		return nil, rcp.InvalidParams("ids", "ids is required")
	}
	if len(p.IDs) > MaxGetIDs {
		return nil, &fault.Error{Err: ErrTooLarge, Message: fmt.Sprintf("at most %d ids per %s", MaxGetIDs, rcp.MethodRCPGoGet),
			Field: "ids", Detail: fmt.Sprintf("%d ids > limit %d", len(p.IDs), MaxGetIDs)}
	}
	res := &rcp.GetDocumentsResult{Documents: []rcp.StoredDocument{}}
	c.gate.RLockCatalog() // the catalog and the index at one version (commits hold it)
	defer c.gate.RUnlockCatalog()
	recs := make(map[string]*Record, len(p.IDs))
	if err := c.db.View(func(tx *bolt.Tx) error {
		docs, _ := catalogTx(tx)
		for _, id := range p.IDs {
			recs[id] = getRecord(docs, id)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("engine: catalog: %w", err)
	}
	seen := map[string]bool{}
	for _, id := range p.IDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		d, err := c.storedDocument(ctx, id, recs[id])
		if err != nil {
			return nil, err
		}
		if d == nil {
			res.Missing = append(res.Missing, id)
			continue
		}
		res.Documents = append(res.Documents, *d)
	}
	res.IndexVersion = c.ix.Version()
	return res, nil
}

// storedDocument assembles document id (nil when it does not exist).
func (c *Catalog) storedDocument(ctx context.Context, id string, rec *Record) (*rcp.StoredDocument, error) {
	if id == "" {
		return nil, nil
	}
	var src *search.Document
	title, text := "", ""
	if rec != nil && rec.Chunks > 0 {
		c, err := c.LiveChunk(ctx, id, rec.Chunks)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		src, title, text = c, rec.Title, rec.Text
	}
	if src == nil {
		d, err := c.ix.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		if d == nil || d.Chunk != nil {
			return nil, nil // absent, or a chunk: get serves whole documents
		}
		src, title, text = d, d.Title, d.Text
	}
	out := &rcp.StoredDocument{ID: id, Text: text, Title: title}
	for k, v := range src.Meta {
		if k == pipeline.MetaKey {
			continue
		}
		if out.Meta == nil {
			out.Meta = map[string]any{}
		}
		out.Meta[k] = v
	}
	srcName, wire := "", true
	if src.Source != nil {
		out.URI = src.Source.URI
		srcName, wire = src.Source.Name, src.Source.Name == c.opts.WireSource
	}
	t := &rcp.Trust{Level: c.opts.Trust.Level(srcName, wire)}
	if c.opts.Screen {
		sc := trust.Screen(title + "\n" + text)
		score := 1 - sc.Score
		susp := sc.Suspected
		t.Score, t.InjectionSuspected = &score, &susp
	}
	out.Trust = t
	return out, nil
}

// ---- x-rcpgo/list ----

// listCursor is the decoded x-rcpgo/list cursor: the listing resumes after
// id After among the ids starting with Prefix (a position in id order, so
// paging never repeats or skips an id that exists throughout).
type listCursor struct {
	V      int    `json:"v"`
	After  string `json:"a"`
	Prefix string `json:"p"`
}

func encodeListCursor(c listCursor) string {
	c.V = 1
	b, _ := json.Marshal(c)
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:]...))
}

func decodeListCursor(s string) (listCursor, bool) {
	var c listCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 5 {
		return c, false
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(sum) || json.Unmarshal(body, &c) != nil || c.V != 1 {
		return c, false
	}
	return c, true
}

func pageLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, rcp.InvalidParams("limit", "limit must be positive")
	case limit == 0:
		return DefaultListLimit, nil
	}
	return min(limit, MaxListLimit), nil
}

func (c *Catalog) listDocuments(ctx context.Context, p *rcp.ListDocumentsParams) (*rcp.ListDocumentsResult, error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	after, resume := "", false
	if p.Cursor != "" {
		c, ok := decodeListCursor(p.Cursor)
		if !ok {
			return nil, rcp.InvalidParams("cursor", "malformed cursor")
		}
		if c.Prefix != p.Prefix {
			return nil, rcp.InvalidParams("cursor", "the cursor belongs to a listing with another prefix")
		}
		after, resume = c.After, true
	}
	res := &rcp.ListDocumentsResult{Documents: []rcp.DocumentRef{}}
	prefix := []byte(p.Prefix)
	err = c.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDocs).Cursor()
		var k, v []byte
		if resume {
			k, v = c.Seek([]byte(after))
			if k != nil && string(k) == after {
				k, v = c.Next()
			}
		} else {
			k, v = c.Seek(prefix)
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(res.Documents) == limit {
				res.NextCursor = encodeListCursor(listCursor{After: res.Documents[limit-1].ID, Prefix: p.Prefix})
				return nil
			}
			rec, err := decodeCatalogRecord(tx, v)
			if err != nil {
				return fmt.Errorf("catalog record %q: %w", k, err)
			}
			res.Documents = append(res.Documents, rcp.DocumentRef{ID: string(k), Title: rec.Title, Size: rec.Size, Chunks: rec.Chunks})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: catalog: %w", err)
	}
	return res, ctx.Err()
}

// Documents returns the number of catalogued top-level documents (what
// x-rcpgo/list lists).
func (c *Catalog) Documents() (int, error) {
	n := 0
	err := c.db.View(func(tx *bolt.Tx) error {
		n = int(tx.Bucket(bucketDocs).Sequence()) // kept by putRecord: no page walk
		return nil
	})
	return n, err
}

// ---- x-rcpgo/values ----

func (c *Catalog) fieldValuesMethod(ctx context.Context, p *rcp.FieldValuesParams) (*rcp.FieldValuesResult, error) {
	if p.Field == "" {
		return nil, rcp.InvalidParams("field", "field is required")
	}
	if _, ok := c.fields[p.Field]; !ok {
		return nil, rcp.InvalidParams("field", "%q is not a filterable field (filter.fields)", p.Field)
	}
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	res := &rcp.FieldValuesResult{Values: []string{}}
	start := valueKey(p.Field, p.Prefix)
	err = c.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketValues).Cursor()
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, start); k, _ = c.Next() {
			if len(res.Values) == limit {
				res.HasMore = true
				return nil
			}
			res.Values = append(res.Values, string(k[len(p.Field)+1:]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: catalog: %w", err)
	}
	return res, ctx.Err()
}
