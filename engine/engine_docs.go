package engine

// The x-rcpgo document methods (rcp/vendor_rcpgo.go): x-rcpgo/get returns
// whole stored documents, x-rcpgo/list pages through document ids and
// x-rcpgo/values lists the distinct values of a filterable field.
//
// # The document catalog
//
// The index stores retrieval units: a whole document, or the chunks of a
// chunked one (each chunk holds only its trimmed slice of the text, with
// lineage ChunkRef{DocID, Index, Start, End}); it keeps neither the
// original text of a chunked document nor a listing API. The engine
// therefore keeps a catalog of top-level documents in its own bbolt file
// (engine.db), written under the same locks and in the same transaction as
// the dense text log:
//
//	docs      id → docRecord (title, size, chunk count, the original text
//	          of chunked documents, the string values of declared fields,
//	          the metadata key kinds; binary, engine_catalog_codec.go)
//	kindsets  the distinct sets of metadata key kinds, stored once
//	values    field 0x00 value → number of documents carrying it
//	kinds     key 0x00 kind → number of documents whose metadata key has a
//	          value of that kind (the inferred filter fields, engine_infer.go)
//	catalog   "state" → catalogState
//
// The index stays authoritative for existence, metadata and source: get
// reads the document (or its chunks) from the index and takes only the
// original text and title of chunked documents from the catalog.
//
// The catalog is trusted whole after a clean shutdown: Open marks it dirty
// and Close marks it clean. After a crash only the documents of the last
// write can disagree with the index, and each write names them in both
// files' commits: Open re-derives those (engine_catalog_recover.go). When
// the catalog is missing (a data directory written before the catalog
// existed), dirty without that journal (written by an earlier version),
// or was built for another set of declared fields, Open rebuilds it from
// every record of the index's record store (engine/store, read before the
// index opens it). A rebuild or a reconciliation keeps the
// catalog's original text of a chunked document when every live chunk
// still matches it, and otherwise reassembles the text from the chunks at
// their byte offsets (the white space the chunker trimmed between chunks
// comes back as spaces).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/rcpgo/rcpgo/engine/internal/pipeline"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/engine/store"
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
)

// Limits of the x-rcpgo methods.
const (
	DefaultListLimit = 100  // x-rcpgo/list and x-rcpgo/values page size
	MaxListLimit     = 1000 // largest page served
	MaxGetIDs        = 1000 // ids per x-rcpgo/get
	maxValueBytes    = 512  // longer field values are not catalogued
	catalogFormat    = 2    // 2: records carry their metadata kinds
)

var (
	bucketDocs    = []byte("docs")
	bucketValues  = []byte("values")
	bucketCatalog = []byte("catalog")
	keyState      = []byte("state")
)

// docRecord is the catalog entry of a top-level document.
type docRecord struct {
	Title   string              `json:"t,omitempty"`
	Size    int64               `json:"s"`           // bytes of the document's text
	Chunks  int                 `json:"n,omitempty"` // > 0: chunked into this many chunks
	Text    string              `json:"x,omitempty"` // the original text of a chunked document
	Context bool                `json:"c,omitempty"` // chunks carry a situating context as title
	Values  map[string][]string `json:"v,omitempty"` // declared field → distinct string values
	Kinds   map[string]string   `json:"k,omitempty"` // metadata key → kind of its value (engine_infer.go)
}

type catalogState struct {
	Format int    `json:"format"`
	Clean  bool   `json:"clean"`
	Fields string `json:"fields"` // the declared fields the values were built for
	// Counted: the docs bucket's sequence is the number of documents it
	// holds (putRecord keeps it), so Documents reads one number instead of
	// walking every page of the catalog. A state written by an earlier
	// version lacks it, and openCatalog counts once.
	Counted bool `json:"counted,omitempty"`
	// Journal: every write names the documents it changes before its
	// index commit (engine_catalog_recover.go), so after a crash only
	// those are re-derived. A dirty state without it (written by an
	// earlier version) is rebuilt whole.
	Journal bool `json:"journal,omitempty"`
	// Names: every add also names its documents in the index's store, in
	// its index commit, and the two commits run at once (commitLocked), so
	// after a crash the index may hold a write the catalog and the dense
	// log lack; reconcileCatalog repairs both directions. Such a state is
	// written with Journal false: an earlier version, which would
	// reconcile only the catalog's names, rebuilds the catalog whole.
	Names bool `json:"names,omitempty"`
}

func (e *Engine) fieldsSignature() string {
	var b strings.Builder
	for _, k := range sortedKeys(e.fields) {
		b.WriteString(k + "=" + e.fields[k] + ";")
	}
	return b.String()
}

// openCatalog makes the catalog current (rebuilding it when it cannot be
// trusted) and marks it dirty until Close. It runs in Open before the
// index is opened.
func (e *Engine) openCatalog(ctx context.Context) error {
	var st catalogState
	found := false
	if err := e.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketCatalog).Get(keyState); v != nil {
			found = json.Unmarshal(v, &st) == nil
		}
		return nil
	}); err != nil {
		return err
	}
	sig := e.fieldsSignature()
	if found && !st.Clean && (st.Journal || st.Names) && st.Counted && st.Format == catalogFormat && st.Fields == sig {
		start := time.Now()
		n, err := e.reconcileCatalog(ctx)
		if err != nil {
			return fmt.Errorf("reconciling the document catalog: %w", err)
		}
		e.log.Info("engine: reconciled the document catalog with the index", "reason", "not closed cleanly", "documents", n,
			"took", time.Since(start).Round(time.Millisecond))
	} else if !found || !st.Clean || st.Format != catalogFormat || st.Fields != sig {
		if found && !st.Clean && st.Names {
			// The rebuild below derives every catalog record, but only
			// drops dense records: the last write's may be missing.
			if _, err := e.reconcileCatalog(ctx); err != nil {
				return fmt.Errorf("reconciling the document catalog: %w", err)
			}
		}
		why := "missing"
		switch {
		case found && st.Format != catalogFormat:
			why = "format changed"
		case found && !st.Clean:
			why = "not closed cleanly, by a version without the write journal"
		case found:
			why = "declared fields changed"
		}
		start := time.Now()
		n, err := e.rebuildCatalog(ctx)
		if err != nil {
			return fmt.Errorf("rebuilding the document catalog: %w", err)
		}
		if n == 0 && !found {
			return e.setCatalogState(false) // a new data directory
		}
		e.log.Info("engine: rebuilt the document catalog", "reason", why, "documents", n, "took", time.Since(start).Round(time.Millisecond))
	} else if !st.Counted {
		if err := e.db.Update(func(tx *bolt.Tx) error {
			docs := tx.Bucket(bucketDocs)
			return docs.SetSequence(uint64(docs.Stats().KeyN))
		}); err != nil {
			return fmt.Errorf("counting the document catalog: %w", err)
		}
	}
	return e.setCatalogState(false)
}

// setCatalogState records the catalog's state; openCatalog has made the
// docs bucket's sequence its count (Counted) before the first call.
func (e *Engine) setCatalogState(clean bool) error {
	b, _ := json.Marshal(catalogState{Format: catalogFormat, Clean: clean, Fields: e.fieldsSignature(), Counted: true, Names: true})
	return e.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCatalog).Put(keyState, b) })
}

type chunkPiece struct {
	index, start, end int
	text, title       string
	context           bool
}

// rebuildCatalog recomputes the catalog from every record of the index's
// record store (a catalog missing, from an earlier version or built for
// other fields; after a crash reconcileCatalog re-derives only the last
// write's documents).
func (e *Engine) rebuildCatalog(ctx context.Context) (int, error) {
	b := newCatalogBuilder(e)
	err := e.viewIndexStore(true, func(tx *store.ReadTx) error {
		return tx.ForEachLive(func(id string, seq uint64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			d, err := tx.Doc(seq)
			if err != nil || d == nil {
				return err
			}
			b.add(id, d)
			return nil
		})
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	err = e.db.Update(func(tx *bolt.Tx) error {
		b.finish(tx, tx.Bucket(bucketDocs))
		for _, bk := range [][]byte{bucketDocs, bucketValues, bucketKinds, bucketKindSets} {
			if err := tx.DeleteBucket(bk); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
			if _, err := tx.CreateBucket(bk); err != nil {
				return err
			}
		}
		docs, vals := tx.Bucket(bucketDocs), tx.Bucket(bucketValues)
		for _, id := range sortedKeys(b.recs) { // in key order: full pages
			if err := putRecord(docs, vals, id, b.recs[id]); err != nil {
				return err
			}
		}
		if e.cfg.Dense == DenseNone {
			return nil
		}
		pruned, err := pruneDenseLog(openDenseTx(tx), b.live)
		if pruned > 0 {
			e.log.Info("engine: dropped dense records of units the index does not hold", "units", pruned)
		}
		return err
	})
	return len(b.recs), err
}

// pruneDenseLog deletes the dense records of units not in live. A crash
// that kept a write's dense log commit without its index commit
// (commitLocked) leaves the log naming a write that was never acknowledged:
// dense recall drops such a unit at query time, but it would stay
// embedded, in the HNSW graph and among the RAPTOR tree's leaves.
func pruneDenseLog(d denseTx, live map[string]bool) (int, error) {
	var dead []string
	c := d.recs.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if !live[string(k)] {
			dead = append(dead, string(k))
		}
	}
	for _, id := range dead {
		if err := d.del(id); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}

// piecesMatch reports whether every chunk is text[start:end].
func piecesMatch(text string, ps []chunkPiece) bool {
	for _, p := range ps {
		if p.start < 0 || p.end > len(text) || p.start > p.end || text[p.start:p.end] != p.text {
			return false
		}
	}
	return true
}

// reassemble rebuilds a chunked document's text from its chunks: each
// chunk's text at its byte offsets, gaps (trimmed white space) as spaces;
// white space after the last chunk is lost.
func reassemble(ps []chunkPiece) string {
	n := 0
	for _, p := range ps {
		if p.end-p.start == len(p.text) && p.start >= 0 {
			n = max(n, p.end)
		}
	}
	buf := bytes.Repeat([]byte{' '}, n)
	for _, p := range ps {
		if p.end-p.start == len(p.text) && p.start >= 0 {
			copy(buf[p.start:], p.text)
		}
	}
	return string(buf) // leading gaps stay (as spaces): chunk offsets remain valid
}

// fieldValues returns the catalogued string values of the declared fields
// of meta (an array contributes each element).
func (e *Engine) fieldValues(meta map[string]any) map[string][]string {
	var out map[string][]string
	for f := range e.fields {
		v, ok := meta[f]
		if !ok {
			continue
		}
		var vals []string
		add := func(x any) {
			if s, ok := valueString(x); ok && s != "" && len(s) <= maxValueBytes && utf8.ValidString(s) {
				for _, have := range vals {
					if have == s {
						return
					}
				}
				vals = append(vals, s)
			}
		}
		if arr, ok := v.([]any); ok {
			for _, x := range arr {
				add(x)
			}
		} else {
			add(v)
		}
		if len(vals) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			sort.Strings(vals)
			out[f] = vals
		}
	}
	return out
}

// valueString is the string form of a scalar metadata value.
func valueString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return valueString(f)
		}
		return x.String(), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		b, _ := json.Marshal(x)
		return string(b), true
	case float32:
		return valueString(float64(x))
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	}
	return "", false
}

func valueKey(field, value string) []byte {
	k := make([]byte, 0, len(field)+1+len(value))
	k = append(k, field...)
	k = append(k, 0)
	return append(k, value...)
}

// countValues adds delta to the document count of each of rec's values.
func countValues(vals *bolt.Bucket, rec *docRecord, delta int64) error {
	if rec == nil {
		return nil
	}
	for f, vs := range rec.Values {
		for _, v := range vs {
			k := valueKey(f, v)
			var n int64
			if cur := vals.Get(k); len(cur) == 8 {
				n = int64(binary.BigEndian.Uint64(cur))
			}
			n += delta
			if n <= 0 {
				if err := vals.Delete(k); err != nil {
					return err
				}
				continue
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(n))
			if err := vals.Put(k, b[:]); err != nil {
				return err
			}
		}
	}
	return nil
}

func getRecord(docs *bolt.Bucket, id string) *docRecord {
	v := docs.Get([]byte(id))
	if v == nil {
		return nil
	}
	rec, err := decodeCatalogRecord(docs.Tx(), v)
	if err != nil {
		return nil
	}
	return rec
}

// putRecord stores rec under id (nil deletes), keeping the value and kind
// counts.
func putRecord(docs, vals *bolt.Bucket, id string, rec *docRecord) error {
	prev := docs.Get([]byte(id))
	var old *docRecord
	if prev != nil {
		old, _ = decodeCatalogRecord(docs.Tx(), prev) // undecodable: replaced, its counts not undone
	}
	kinds, err := docs.Tx().CreateBucketIfNotExists(bucketKinds)
	if err != nil {
		return err
	}
	if err := countKinds(kinds, old, rec); err != nil {
		return err
	}
	if err := countValues(vals, old, -1); err != nil {
		return err
	}
	// The bucket's sequence counts its documents (catalogState.Counted).
	if n := docs.Sequence(); prev != nil && rec == nil && n > 0 {
		if err := docs.SetSequence(n - 1); err != nil {
			return err
		}
	} else if prev == nil && rec != nil {
		if err := docs.SetSequence(n + 1); err != nil {
			return err
		}
	}
	if rec == nil {
		return docs.Delete([]byte(id))
	}
	if err := countValues(vals, rec, 1); err != nil {
		return err
	}
	b, err := encodeCatalogRecord(docs.Tx(), rec)
	if err != nil {
		return err
	}
	docs.FillPercent = catalogFill
	return docs.Put([]byte(id), b)
}

// catalogTx runs fn on the catalog buckets inside tx.
func catalogTx(tx *bolt.Tx) (docs, vals *bolt.Bucket) {
	return tx.Bucket(bucketDocs), tx.Bucket(bucketValues)
}

// parseChunkID splits "parent#cN".
func parseChunkID(id string) (string, int, bool) {
	i := strings.LastIndex(id, "#c")
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+2:])
	if err != nil || n < 0 || strconv.Itoa(n) != id[i+2:] {
		return "", 0, false
	}
	return id[:i], n, true
}

// liveChunk returns a live chunk of parent among its first n, or nil
// (caller holds the catalog lock, gate.RLockCatalog, or commits).
func (e *Engine) liveChunk(ctx context.Context, parent string, n int) (*search.Document, error) {
	for i := 0; i < n; i++ {
		d, err := e.ix.Get(ctx, chunkID(parent, i))
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

func (e *Engine) getDocuments(ctx context.Context, p *rcp.GetDocumentsParams) (*rcp.GetDocumentsResult, error) {
	if p.IDs == nil {
		return nil, rcp.InvalidParams("ids", "ids is required")
	}
	if len(p.IDs) > MaxGetIDs {
		return nil, &rcp.Error{Code: rcp.CodePayloadTooLarge, Message: fmt.Sprintf("at most %d ids per %s", MaxGetIDs, rcp.MethodRCPGoGet),
			Data: &rcp.ErrorData{Field: "ids", Detail: fmt.Sprintf("%d ids > limit %d", len(p.IDs), MaxGetIDs)}}
	}
	res := &rcp.GetDocumentsResult{Documents: []rcp.StoredDocument{}}
	e.gate.RLockCatalog() // the catalog and the index at one version (commits hold it)
	defer e.gate.RUnlockCatalog()
	recs := make(map[string]*docRecord, len(p.IDs))
	if err := e.db.View(func(tx *bolt.Tx) error {
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
		d, err := e.storedDocument(ctx, id, recs[id])
		if err != nil {
			return nil, err
		}
		if d == nil {
			res.Missing = append(res.Missing, id)
			continue
		}
		res.Documents = append(res.Documents, *d)
	}
	res.IndexVersion = e.ix.Version()
	return res, nil
}

// storedDocument assembles document id (nil when it does not exist).
func (e *Engine) storedDocument(ctx context.Context, id string, rec *docRecord) (*rcp.StoredDocument, error) {
	if id == "" {
		return nil, nil
	}
	var src *search.Document
	title, text := "", ""
	if rec != nil && rec.Chunks > 0 {
		c, err := e.liveChunk(ctx, id, rec.Chunks)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		src, title, text = c, rec.Title, rec.Text
	}
	if src == nil {
		d, err := e.ix.Get(ctx, id)
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
		srcName, wire = src.Source.Name, src.Source.Name == WireSource
	}
	t := &rcp.Trust{Level: trust.Policy{Sources: e.cfg.TrustedSources}.Level(srcName, wire)}
	if !e.cfg.NoScreen {
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

func (e *Engine) listDocuments(ctx context.Context, p *rcp.ListDocumentsParams) (*rcp.ListDocumentsResult, error) {
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
	err = e.db.View(func(tx *bolt.Tx) error {
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

// Documents returns the number of stored top-level documents (what
// x-rcpgo/list lists); Stats().Docs counts retrieval units (unchunked
// documents and chunks).
func (e *Engine) Documents() (int, error) {
	if e.cfg.Backend != nil {
		// The catalog holds this replica's writes only; the backend's count
		// is of retrieval units (documents and chunks).
		return e.ix.Stats().Docs, nil
	}
	n := 0
	err := e.db.View(func(tx *bolt.Tx) error {
		n = int(tx.Bucket(bucketDocs).Sequence()) // kept by putRecord: no page walk
		return nil
	})
	return n, err
}

// ---- x-rcpgo/values ----

func (e *Engine) fieldValuesMethod(ctx context.Context, p *rcp.FieldValuesParams) (*rcp.FieldValuesResult, error) {
	if p.Field == "" {
		return nil, rcp.InvalidParams("field", "field is required")
	}
	if _, ok := e.fields[p.Field]; !ok {
		return nil, rcp.InvalidParams("field", "%q is not a filterable field (filter.fields)", p.Field)
	}
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	res := &rcp.FieldValuesResult{Values: []string{}}
	start := valueKey(p.Field, p.Prefix)
	err = e.db.View(func(tx *bolt.Tx) error {
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

// forgetCatalog drops the catalog's state from engine.db (when it is
// there), so that Open rebuilds the catalog from the repaired index.
func forgetCatalog(path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketCatalog); b != nil {
			return b.Delete(keyState)
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
