package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// Group commit (docs/architecture.md, "Writes").
//
// Every add (index/add, a preload) is planned outside any lock and then
// queued. The write at the head of the queue is the leader: it takes the
// write lock and commits, in one catalog + dense-log transaction and one
// index commit, itself and the writes queued behind it up to the first one
// that touches an id or idempotency key already in the group (that one
// leads the next group, so writes to one id commit in arrival order). Each
// write of the group gets its own result or error. A commit costs two
// fsyncs whatever its size, so under concurrent adds a write waits for at
// most the commit in progress plus its own group's, instead of for every
// add queued before it, and ingest throughput grows with the offered load
// instead of capping at one add per commit.

// maxGroupDocs bounds the documents a leader takes into one group (the
// head write always goes, whatever its size), so a commit stays short.
const maxGroupDocs = 10000 // engine.DefaultMaxAddDocs

// writeReq is one queued write and, once done, its outcome.
type writeReq struct {
	ctx     context.Context
	plan    *writePlan
	key     string // idempotency key ("": none)
	chunked bool   // index/add's chunk option: the result counts chunks

	done    bool                // set by the leader that committed it
	err     error               // the write failed (nothing of it was stored)
	replay  *rcp.IndexAddResult // key already stored: its original result
	version string              // the index version the commit published
}

// result is index/add's answer for a committed write.
func (w *writeReq) result() *rcp.IndexAddResult {
	res := &rcp.IndexAddResult{IDs: w.plan.ids, IndexVersion: w.version}
	if w.chunked {
		n := w.plan.nchunks
		res.Chunks = &n
	}
	return res
}

// writeQueue is the group commit queue. Its mutex is never held across
// I/O.
type writeQueue struct {
	mu      sync.Mutex
	pending []*writeReq   // in arrival order; the head leads
	wake    chan struct{} // closed and replaced when a group completes
}

func newWriteQueue() *writeQueue { return &writeQueue{wake: make(chan struct{})} }

// commitWrite queues w and returns once it is committed (or failed). The
// caller reads w.err, w.replay and w.version.
func (wr *Writer) commitWrite(w *writeReq) error {
	if wr.unchangedWrite(w) {
		return nil
	}
	wr.gate.Queue(1)
	defer wr.gate.Queue(-1)
	q := wr.writes
	q.mu.Lock()
	q.pending = append(q.pending, w)
	for !w.done && q.pending[0] != w {
		wake := q.wake
		q.mu.Unlock()
		<-wake
		q.mu.Lock()
	}
	if w.done {
		q.mu.Unlock()
		return w.err
	}
	q.mu.Unlock()

	// w leads: the group is taken once the write lock is ours, so that
	// writes arriving meanwhile join it.
	wr.gate.LockWrites()
	q.mu.Lock()
	group := takeGroup(q.pending)
	q.mu.Unlock()
	wr.commitGroup(group)
	wr.gate.UnlockWrites()

	q.mu.Lock()
	for _, g := range group {
		g.done = true
	}
	clear(q.pending[:len(group)])
	q.pending = q.pending[len(group):]
	close(q.wake)
	q.wake = make(chan struct{})
	q.mu.Unlock()
	return w.err
}

// unchangedWrite answers w without a commit when it changes nothing: an
// identical re-add, every document stored exactly as given, none chunked
// and no idempotency key to record. Such a commit would write no document,
// yet cost two fsynced transactions in the write queue, a dense re-embed
// and a graph re-extraction of every document. The answer is decided
// where no write to w's ids is queued or committing and the index has not
// published a version since the documents were compared, so it is the one
// a commit in arrival order would give (w.version is set).
func (wr *Writer) unchangedWrite(w *writeReq) bool {
	un, ok := wr.ix.(search.Preparer)
	if !ok || w.plan.batch == nil || w.key != "" || w.plan.nchunks > 0 || len(w.plan.idocs) == 0 || wr.writable() != nil {
		return false
	}
	v := wr.ix.Version()
	if same, err := un.Unchanged(w.plan.batch); err != nil || !same {
		return false
	}
	ids := make(map[string]bool, len(w.plan.docs))
	for _, d := range w.plan.docs {
		ids[d.id] = true
	}
	q := wr.writes
	q.mu.Lock()
	defer q.mu.Unlock()
	if wr.ix.Version() != v {
		return false // something was committed meanwhile: take the queue
	}
	for _, p := range q.pending {
		if sharesID(p.plan, ids) {
			return false // an earlier write to one of its ids goes first
		}
	}
	w.version = v
	return true
}

// takeGroup returns the writes at the head of pending that commit
// together: up to the first one that shares a document id or an
// idempotency key with an earlier one, within maxGroupDocs documents.
func takeGroup(pending []*writeReq) []*writeReq {
	ids := map[string]bool{}
	keys := map[string]bool{}
	docs := 0
	n := 0
	for _, w := range pending {
		if n > 0 && (docs+len(w.plan.idocs) > maxGroupDocs || w.key != "" && keys[w.key] || sharesID(w.plan, ids)) {
			break
		}
		for _, d := range w.plan.docs {
			ids[d.id] = true
		}
		if w.key != "" {
			keys[w.key] = true
		}
		docs += len(w.plan.idocs)
		n++
	}
	return pending[:n]
}

func sharesID(p *writePlan, ids map[string]bool) bool {
	for _, d := range p.docs {
		if ids[d.id] {
			return true
		}
	}
	return false
}

// commitGroup commits the writes of a group (caller holds wmu) and sets
// each one's outcome. A write whose request has ended, whose idempotency
// key is already stored or whose shape check fails is settled alone; the
// others are committed at once, and fail together if the commit fails.
func (wr *Writer) commitGroup(group []*writeReq) {
	if err := wr.writable(); err != nil {
		for _, w := range group {
			w.err = err
		}
		return
	}
	var live []*writeReq
	var shapes []writeShape
	for _, w := range group {
		if err := w.ctx.Err(); err != nil {
			w.err = err // not begun: nothing is written
			continue
		}
		if w.key != "" {
			if res := wr.storedResult(w.key); res != nil {
				w.replay = res
				continue
			}
		}
		sh, err := wr.shapeOf(w.ctx, w.plan)
		if err != nil {
			w.err = err
			continue
		}
		live, shapes = append(live, w), append(shapes, sh)
	}
	if len(live) == 0 {
		return
	}
	// The group commits with no deadline of its own: a write that has begun
	// is finished for every member, whichever request leads it.
	ctx := context.WithoutCancel(live[0].ctx)
	pr, _ := wr.ix.(search.Preparer)
	err := wr.commitLocked(ctx, mergePlans(pr, live), mergeShapes(shapes))
	if err == nil {
		err = wr.writable() // written into a deleted directory: not durable
	}
	version := wr.ix.Version()
	for _, w := range live {
		w.err, w.version = err, version
	}
	if err == nil {
		wr.storeResults(live)
	}
}

// storedResult is the result stored under an idempotency key, or nil.
func (wr *Writer) storedResult(key string) *rcp.IndexAddResult {
	var stored []byte
	_ = wr.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketIdem).Get([]byte(key)); v != nil {
			stored = bytes.Clone(v)
		}
		return nil
	})
	if stored == nil {
		return nil
	}
	var res rcp.IndexAddResult
	if json.Unmarshal(stored, &res) != nil {
		return nil
	}
	return &res
}

// storeResults stores the results of the committed writes that carry an
// idempotency key, in one transaction; if it fails, those writes report
// the error (their documents are stored: a retry finds them unchanged).
func (wr *Writer) storeResults(ws []*writeReq) {
	var keyed []*writeReq
	for _, w := range ws {
		if w.key != "" {
			keyed = append(keyed, w)
		}
	}
	if len(keyed) == 0 {
		return
	}
	err := wr.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdem)
		for _, w := range keyed {
			enc, _ := json.Marshal(w.result())
			if err := b.Put([]byte(w.key), enc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, w := range keyed {
			w.err = fmt.Errorf("engine: storing idempotency key: %w", err)
		}
	}
}

// mergePlans joins the plans of a group (their ids are disjoint) into one;
// pr joins their prepared batches.
func mergePlans(pr search.Preparer, ws []*writeReq) *writePlan {
	if len(ws) == 1 {
		return ws[0].plan
	}
	out := &writePlan{catalog: map[string]*catalog.Record{}}
	var batches []search.Batch
	for _, w := range ws {
		p := w.plan
		out.docs = append(out.docs, p.docs...)
		out.idocs = append(out.idocs, p.idocs...)
		out.dense = append(out.dense, p.dense...)
		for id, rec := range p.catalog {
			out.catalog[id] = rec
		}
		if p.batch != nil {
			batches = append(batches, p.batch)
		}
	}
	if len(batches) == len(ws) {
		out.batch = pr.JoinBatches(batches...)
	}
	return out
}

// mergeShapes joins the shape changes of disjoint plans.
func mergeShapes(shs []writeShape) writeShape {
	if len(shs) == 1 {
		return shs[0]
	}
	out := writeShape{chunkSets: map[string]int{}, plain: map[string]bool{}}
	for _, sh := range shs {
		out.transitions = append(out.transitions, sh.transitions...)
		for k, v := range sh.chunkSets {
			out.chunkSets[k] = v
		}
		for k := range sh.plain {
			out.plain[k] = true
		}
	}
	return out
}
