package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/ann"
	"github.com/rcpgo/rcpgo/engine/embed"
	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/pipeline"
	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/vector"
)

// denseIndex is the dense half of the engine: the dense encoder and an HNSW
// index over the embeddings of every indexed unit (documents and chunks).
//
// LSA fit policy: the encoder is fitted at Open, never while serving, so one
// process advertises exactly one embed.identity (§13.2). Open fits when no
// usable model exists and the corpus holds at least MinFitDocs units, or
// refits when the corpus has grown to twice the size the model was fitted
// on. A refit changes the identity ("lsa-<k>:fit=<hash>"), and every vector
// is re-embedded with the new basis: the LSA vector index is rebuilt from
// the dense text log at every Open, so vectors of different bases never
// meet. Units added while serving are folded into the current basis.
//
// External encoders (openai, onnx): embedding the corpus is expensive, so
// their vectors are stored in engine.db (bucket "vectors") beside the
// identity that produced them (bucket "vectormeta"). At Open a stored
// identity different from the configured encoder's drops every stored
// vector and re-embeds the corpus from the dense text log; otherwise only
// units without a stored vector (a crash, a failed embedding) are embedded.
type denseIndex struct {
	e       *Engine
	model   embed.Provider
	persist bool // vectors are stored in bucketVectors (external encoders)
	ann     *ann.Index
	// Guarded by e.rmu (written under Lock, read under RLock).
	keys map[string]uint64
	ids  map[uint64]string
	kids map[string][]string // parent → chunk ids
	next uint64
}

var (
	bucketVectors    = []byte("vectors")
	bucketVectorMeta = []byte("vectormeta")
	keyIdentity      = []byte("identity")
)

func openDense(ctx context.Context, e *Engine) (*denseIndex, error) {
	var ids, texts, parents []string
	if err := e.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDense).ForEach(func(k, v []byte) error {
			var r denseRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("engine: corrupt dense record %q: %w", k, err)
			}
			ids, texts, parents = append(ids, string(k)), append(texts, r.Text), append(parents, r.Parent)
			return nil
		})
	}); err != nil {
		return nil, err
	}
	var model embed.Provider
	persist := false
	if e.cfg.Dense == DenseLSA {
		m, err := openLSA(ctx, e, texts)
		if m == nil || err != nil {
			return nil, err
		}
		model = m
	} else {
		model, persist = e.cfg.DenseProvider, true
	}
	ax, err := ann.New(ann.Config{Dim: model.Dimension(), Metric: ann.Cosine, Workers: 1})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	d := &denseIndex{e: e, model: model, persist: persist, ann: ax, keys: map[string]uint64{}, ids: map[uint64]string{}, kids: map[string][]string{}}
	docs := make([]index.Document, len(ids))
	for i := range ids {
		docs[i] = index.Document{ID: ids[i], Text: texts[i]}
		if parents[i] != "" {
			docs[i].Chunk = &index.ChunkRef{DocID: parents[i]}
		}
	}
	if !persist {
		if err := d.addTexts(ctx, docs, texts); err != nil {
			return nil, err
		}
		return d, nil
	}
	stored, err := d.loadVectors(ids, texts)
	if err != nil {
		return nil, err
	}
	var missDocs []index.Document
	var missTexts []string
	var haveDocs []index.Document
	var haveVecs [][]float32
	for i := range docs {
		if v, ok := stored[ids[i]]; ok {
			haveDocs, haveVecs = append(haveDocs, docs[i]), append(haveVecs, v)
		} else {
			missDocs, missTexts = append(missDocs, docs[i]), append(missTexts, texts[i])
		}
	}
	if err := d.insert(haveDocs, haveVecs); err != nil {
		return nil, err
	}
	if len(missDocs) > 0 {
		e.log.Info("engine: embedding units without stored vectors", "units", len(missDocs), "identity", model.Identity())
		if err := d.addTexts(ctx, missDocs, missTexts); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// openLSA loads, fits or refits the LSA model (see denseIndex); nil when
// the corpus is too small to fit one.
func openLSA(ctx context.Context, e *Engine, texts []string) (*lsa.Model, error) {
	path := filepath.Join(e.cfg.Dir, "lsa.model")
	fp := e.an.Fingerprint()
	m, err := lsa.Load(path, e.an.Terms)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m = nil
	case err != nil:
		e.log.Warn("engine: ignoring unreadable LSA model; refitting", "path", path, "err", err)
		m = nil
	case m.TokenizerID() != fp:
		e.log.Warn("engine: LSA model was fitted with another analyzer; refitting")
		m = nil
	}
	n := len(texts)
	if (m == nil && n >= e.cfg.MinFitDocs) || (m != nil && n >= 2*m.NumDocs() && n >= e.cfg.MinFitDocs) {
		fitted, err := lsa.FitTexts(ctx, texts, e.an.Terms, lsa.Options{Dimension: e.cfg.LSADimension,
			TokenizerID: fp, Snapshot: e.ix.Version(), Logger: e.log, Workers: 1})
		if err != nil {
			if m == nil {
				e.log.Warn("engine: LSA fit failed; dense retrieval disabled", "err", err)
				return nil, nil
			}
			e.log.Warn("engine: LSA refit failed; keeping the previous model", "err", err)
		} else {
			if err := fitted.Save(path); err != nil {
				return nil, fmt.Errorf("engine: saving LSA model: %w", err)
			}
			e.log.Info("engine: fitted LSA encoder", "docs", n, "dimension", fitted.Dimension(), "identity", fitted.Identity())
			m = fitted
		}
	}
	if m == nil {
		e.log.Info("engine: dense retrieval unavailable until the corpus reaches MinFitDocs and rcpd restarts",
			"docs", n, "minFitDocs", e.cfg.MinFitDocs)
	}
	return m, nil
}

// textSum fingerprints the text a stored vector was embedded from.
func textSum(text string) []byte {
	h := sha256.Sum256([]byte(text))
	return h[:8]
}

// loadVectors returns the stored vectors of ids when they were produced
// under the encoder's identity from the same text. A different stored
// identity drops every stored vector (they are re-embedded); vectors of
// units no longer in the dense text log, or embedded from another text,
// are deleted.
func (d *denseIndex) loadVectors(ids, texts []string) (map[string][]float32, error) {
	id := d.model.Identity()
	dim := d.model.Dimension()
	live := make(map[string][]byte, len(ids))
	for i, x := range ids {
		live[x] = textSum(texts[i])
	}
	out := map[string][]float32{}
	err := d.e.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketVectorMeta)
		if err != nil {
			return err
		}
		if old := string(meta.Get(keyIdentity)); old != id {
			if tx.Bucket(bucketVectors) != nil {
				if err := tx.DeleteBucket(bucketVectors); err != nil {
					return err
				}
			}
			if old != "" {
				d.e.log.Warn("engine: dense encoder identity changed; dropping stored vectors and re-embedding the corpus",
					"stored", old, "identity", id)
			}
			if err := meta.Put(keyIdentity, []byte(id)); err != nil {
				return err
			}
		}
		b, err := tx.CreateBucketIfNotExists(bucketVectors)
		if err != nil {
			return err
		}
		var dead [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			sum, ok := live[string(k)]
			if !ok || len(v) != 8+4*dim || !bytes.Equal(v[:8], sum) {
				dead = append(dead, bytes.Clone(k))
				return nil
			}
			vec := make([]float32, dim)
			for i := range vec {
				vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(v[8+4*i:]))
			}
			out[string(k)] = vec
			return nil
		}); err != nil {
			return err
		}
		for _, k := range dead {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: stored vectors: %w", err)
	}
	return out, nil
}

// storedVectors returns the stored vectors of docs embedded from the same
// texts.
func (d *denseIndex) storedVectors(docs []index.Document, texts []string) (map[string][]float32, error) {
	dim := d.model.Dimension()
	out := map[string][]float32{}
	err := d.e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors)
		for i := range docs {
			v := b.Get([]byte(docs[i].ID))
			if len(v) != 8+4*dim || !bytes.Equal(v[:8], textSum(texts[i])) {
				continue
			}
			vec := make([]float32, dim)
			for j := range vec {
				vec[j] = math.Float32frombits(binary.LittleEndian.Uint32(v[8+4*j:]))
			}
			out[docs[i].ID] = vec
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: stored vectors: %w", err)
	}
	return out, nil
}

// storeVectors writes vectors of an external encoder (see loadVectors).
func (d *denseIndex) storeVectors(docs []index.Document, texts []string, vecs [][]float32) error {
	if err := d.e.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors)
		for i := range docs {
			// bolt keeps the value until the commit: one buffer per unit.
			buf := make([]byte, 0, 8+4*len(vecs[i]))
			buf = append(buf, textSum(texts[i])...)
			for _, x := range vecs[i] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
			if err := b.Put([]byte(docs[i].ID), buf); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("engine: storing vectors: %w", err)
	}
	return nil
}

// add embeds and indexes docs (caller holds e.rmu).
func (d *denseIndex) add(ctx context.Context, docs []index.Document) error {
	texts := make([]string, len(docs))
	for i := range docs {
		texts[i] = denseText(&docs[i])
	}
	return d.addTexts(ctx, docs, texts)
}

func (d *denseIndex) addTexts(ctx context.Context, docs []index.Document, texts []string) error {
	if len(docs) == 0 {
		return nil
	}
	if d.persist {
		// Units re-added with an unchanged text keep their stored vector:
		// an external encoder is not called again for them.
		stored, err := d.storedVectors(docs, texts)
		if err != nil {
			return err
		}
		if len(stored) > 0 {
			var hd, md []index.Document
			var hv [][]float32
			var mt []string
			for i := range docs {
				if v, ok := stored[docs[i].ID]; ok {
					hd, hv = append(hd, docs[i]), append(hv, v)
				} else {
					md, mt = append(md, docs[i]), append(mt, texts[i])
				}
			}
			if err := d.insert(hd, hv); err != nil {
				return err
			}
			if docs, texts = md, mt; len(docs) == 0 {
				return nil
			}
		}
	}
	vecs, err := embed.EmbedAll(ctx, d.model, texts, embed.KindDocument)
	if err != nil {
		return fmt.Errorf("engine: embedding: %w", err)
	}
	if len(vecs) != len(docs) {
		return fmt.Errorf("engine: embedding: %d vectors for %d texts", len(vecs), len(docs))
	}
	for i, v := range vecs {
		if len(v) != d.model.Dimension() {
			return fmt.Errorf("engine: embedding: vector %d has dimension %d, want %d (%s)", i, len(v), d.model.Dimension(), d.model.Identity())
		}
	}
	if d.persist {
		if err := d.storeVectors(docs, texts, vecs); err != nil {
			return err
		}
	}
	return d.insert(docs, vecs)
}

// insert adds embedded units to the vector index.
func (d *denseIndex) insert(docs []index.Document, vecs [][]float32) error {
	if len(docs) == 0 {
		return nil
	}
	keys := make([]uint64, 0, len(docs))
	keep := make([][]float32, 0, len(docs))
	for i, doc := range docs {
		k, ok := d.keys[doc.ID]
		if !ok {
			d.next++
			k = d.next
			d.keys[doc.ID], d.ids[k] = k, doc.ID
			if doc.Chunk != nil && doc.Chunk.DocID != "" {
				d.kids[doc.Chunk.DocID] = append(d.kids[doc.Chunk.DocID], doc.ID)
			}
		}
		if zero(vecs[i]) {
			d.ann.Delete(k) // no vocabulary term: nothing to match
			continue
		}
		keys, keep = append(keys, k), append(keep, vecs[i])
	}
	if err := d.ann.AddBatch(keys, keep); err != nil {
		return fmt.Errorf("engine: dense index: %w", err)
	}
	return nil
}

func zero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func (d *denseIndex) drop(id string) {
	if k, ok := d.keys[id]; ok {
		d.ann.Delete(k)
		delete(d.keys, id)
		delete(d.ids, k)
	}
}

// remove drops id (unless keepSelf) and its chunks (caller holds e.rmu).
func (d *denseIndex) remove(id string, keepSelf bool) {
	if !keepSelf {
		d.drop(id)
	}
	for _, c := range d.kids[id] {
		d.drop(c)
	}
	delete(d.kids, id)
}

// trim drops chunks n, n+1, ... of parent (caller holds e.rmu).
func (d *denseIndex) trim(parent string, n int) {
	kept := d.kids[parent][:0]
	for _, c := range d.kids[parent] {
		i := strings.LastIndex(c, "#c")
		var idx int
		if _, err := fmt.Sscanf(c[i+2:], "%d", &idx); err == nil && idx >= n {
			d.drop(c)
			continue
		}
		kept = append(kept, c)
	}
	d.kids[parent] = kept
}

// denseBackend adapts denseIndex to pipeline.Dense for one request.
type denseBackend struct {
	d  *denseIndex
	ix *index.Index
}

func (b denseBackend) Recall(ctx context.Context, query string, k int, keep func(*index.Document) bool) ([]*pipeline.Candidate, error) {
	qv, err := b.d.model.Embed(ctx, []string{query}, embed.KindQuery)
	if err != nil {
		return nil, fmt.Errorf("engine: embedding query: %w", err)
	}
	if zero(qv[0]) {
		return nil, nil
	}
	docs := map[uint64]*index.Document{}
	resolve := func(key uint64) *index.Document {
		doc, ok := docs[key]
		if !ok {
			doc, _ = b.ix.Get(ctx, b.d.ids[key])
			docs[key] = doc
		}
		return doc
	}
	var opts ann.SearchOptions
	if keep != nil {
		// ann evaluates the filter inside its walk; the Get cache above is
		// single-goroutine because Search runs the filter on the caller's
		// goroutine.
		opts.Filter = func(key uint64) bool {
			doc := resolve(key)
			return doc != nil && keep(doc)
		}
	}
	// Without a filter only the results are resolved against the index (a
	// unit the index lacks after a crash is dropped).
	res, err := b.d.ann.Search(qv[0], k, opts)
	if err != nil {
		return nil, fmt.Errorf("engine: dense search: %w", err)
	}
	for _, r := range res {
		resolve(r.ID)
	}
	out := make([]*pipeline.Candidate, 0, len(res))
	for _, r := range res {
		if r.Score <= 0 {
			continue
		}
		doc := docs[r.ID]
		if doc == nil {
			continue
		}
		out = append(out, &pipeline.Candidate{ID: doc.ID, Doc: doc, Dense: float64(r.Score), HasDense: true, Score: float64(r.Score)})
	}
	slices.SortStableFunc(out, func(a, c *pipeline.Candidate) int {
		if x := cmp.Compare(c.Dense, a.Dense); x != 0 {
			return x
		}
		return strings.Compare(a.ID, c.ID)
	})
	return out, nil
}

func (b denseBackend) Vectors(ctx context.Context, ids []string) ([][]float32, error) {
	out := make([][]float32, len(ids))
	for i, id := range ids {
		if k, ok := b.d.keys[id]; ok {
			if v, ok := b.d.ann.Vector(k); ok {
				out[i] = v
			}
		}
		if out[i] == nil {
			out[i] = make([]float32, b.d.model.Dimension())
		}
	}
	return out, nil
}

func (e *Engine) embed(ctx context.Context, p *rcp.EmbedParams) (*rcp.EmbedResult, error) {
	limit := maxEmbedInputs
	if lim := e.dense.model.BatchLimit(); lim > 0 {
		limit = lim
	}
	texts, kind, err := e.embedInputs(ctx, p, limit)
	if err != nil {
		return nil, err
	}
	enc := p.Encoding
	switch enc {
	case "", rcp.EncodingJSON:
		enc = rcp.EncodingJSON
	case rcp.EncodingF32Base64:
	default:
		if p.Strict == nil || *p.Strict {
			return nil, rcp.OptionUnsupported(enc, "encoding %q is not advertised", enc)
		}
		enc = rcp.EncodingJSON
	}
	vecs, err := e.dense.model.Embed(ctx, texts, kind)
	if err != nil {
		return nil, fmt.Errorf("engine: embed: %w", err)
	}
	res := &rcp.EmbedResult{}
	if err := vector.EncodeResult(res, vecs, enc); err != nil {
		return nil, fmt.Errorf("engine: embed: %w", err)
	}
	res.Dimension = e.dense.model.Dimension()
	return res, nil
}
