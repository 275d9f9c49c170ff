package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rcpgo/rcpgo/engine/llm"
)

// Builder tuning.
const (
	batchDocs    = 256             // documents applied per write lock
	saveInterval = 2 * time.Second // longest a processed queue entry waits for its snapshot
	pollInterval = time.Second     // wake-up when no Notify arrives
	// communityQuiet is how long the queue must stay empty before the
	// communities are recomputed (Sync recomputes at once): a Louvain pass
	// per ingest batch would cost more than the ingest.
	communityQuiet = 3 * time.Second
)

// Source reads the live units of a top-level document from the index.
type Source interface {
	// Units returns the units (the document itself, or its chunks) of doc
	// as the index holds them now; none when doc is deleted. It must not
	// interleave with a write of doc (the engine reads under its read lock).
	Units(ctx context.Context, doc string) ([]SourceUnit, error)
}

// SourceUnit is one unit as the index holds it.
type SourceUnit struct {
	ID, Title, Text string
	Code            bool // source code (indexed with --code): identifier rules
}

// Builder keeps a Graph in step with an index in the background. Writers
// record the documents they touch in a durable queue (Enqueue, inside the
// transaction that records the write); the builder re-reads those
// documents, updates the graph, saves a snapshot and only then removes the
// entries. A crash at any point replays entries whose effect may not be in
// the snapshot: the graph after restart matches the acknowledged index.
// Queries never wait for it: they read whatever the graph holds.
type Builder struct {
	g      *Graph
	db     *bolt.DB
	bucket []byte
	src    Source
	path   string
	log    *slog.Logger
	chat   llm.Chat
	calls  int // model calls this step

	wake   chan struct{}
	syncs  chan chan error
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	pending []ackEntry // processed, waiting for the next snapshot
	saved   time.Time
	applied time.Time // when the last non-empty batch was applied
}

type ackEntry struct {
	key, seq []byte
}

// BuilderOptions configure OpenBuilder.
type BuilderOptions struct {
	DB       *bolt.DB // holds the queue bucket
	Bucket   string   // queue bucket name
	Snapshot string   // snapshot file path
	Source   Source
	Graph    *Graph
	Logger   *slog.Logger
	// Chat, when set, adds each unit's model-extracted triples (AskTriples)
	// to its offline ones, at most modelCallsPerRun calls per step.
	Chat llm.Chat
}

// OpenBuilder loads the snapshot (an unusable one is logged and the graph
// starts empty: Reconcile then re-queues every document) and creates the
// queue bucket. Start runs it.
func OpenBuilder(o BuilderOptions) (*Builder, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &Builder{g: o.Graph, db: o.DB, bucket: []byte(o.Bucket), src: o.Source, path: o.Snapshot, log: o.Logger, chat: o.Chat,
		wake: make(chan struct{}, 1), syncs: make(chan chan error), done: make(chan struct{}), saved: time.Now()}
	if err := o.DB.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(b.bucket)
		return err
	}); err != nil {
		return nil, fmt.Errorf("graph: queue: %w", err)
	}
	if err := b.g.Load(b.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.log.Warn("graph: snapshot unusable; rebuilding from the index", "err", err)
	}
	return b, nil
}

// Enqueue records docs (top-level document ids) as changed, inside the
// writer's transaction.
func Enqueue(tx *bolt.Tx, bucket string, docs ...string) error {
	q := tx.Bucket([]byte(bucket))
	if q == nil {
		return fmt.Errorf("graph: no queue bucket %q", bucket)
	}
	for _, d := range docs {
		seq, err := q.NextSequence()
		if err != nil {
			return err
		}
		if err := q.Put([]byte(d), binary.BigEndian.AppendUint64(nil, seq)); err != nil {
			return err
		}
	}
	return nil
}

// Reconcile queues every document the graph and the index disagree on:
// documents the index has that the graph lacks, and graph documents the
// index no longer has (e.g. a delete that crashed before its queue entry).
func (b *Builder) Reconcile(docs func(yield func(string) bool)) error {
	inGraph := map[string]bool{}
	b.g.mu.RLock()
	for p := range b.g.byParent {
		inGraph[p] = true
	}
	b.g.mu.RUnlock()
	var missing []string
	for d := range docs {
		if !inGraph[d] {
			missing = append(missing, d)
		}
		delete(inGraph, d)
	}
	for p := range inGraph {
		missing = append(missing, p)
	}
	if len(missing) == 0 {
		return nil
	}
	return b.db.Update(func(tx *bolt.Tx) error { return Enqueue(tx, string(b.bucket), missing...) })
}

// Start runs the builder until Close.
func (b *Builder) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.run(ctx)
}

// Notify wakes the builder (after a write committed).
func (b *Builder) Notify() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Sync waits until the queue is drained, the snapshot saved and the
// communities rebuilt for the current graph.
func (b *Builder) Sync(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case b.syncs <- ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		return errors.New("graph: builder closed")
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the builder and saves what it processed.
func (b *Builder) Close() error {
	if b.cancel == nil {
		return nil
	}
	b.cancel()
	<-b.done
	return b.flush()
}

func (b *Builder) run(ctx context.Context) {
	defer close(b.done)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var waiter chan error
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		case <-tick.C:
		case waiter = <-b.syncs:
		}
		err := b.step(ctx, waiter != nil)
		if err != nil && ctx.Err() == nil {
			b.log.Error("graph: build step failed", "err", err)
		}
		if waiter != nil {
			waiter <- err
		}
	}
}

// step drains the queue, saves when due (always when final), and rebuilds
// the communities once the queue is empty and the graph changed.
func (b *Builder) step(ctx context.Context, final bool) error {
	b.calls = 0
	for {
		n, err := b.applyBatch(ctx)
		if err != nil {
			return err
		}
		if time.Since(b.saved) >= saveInterval {
			if err := b.flush(); err != nil {
				return err
			}
		}
		if n > 0 {
			b.applied = time.Now()
		}
		if n < batchDocs {
			break
		}
	}
	if final {
		if err := b.flush(); err != nil {
			return err
		}
	}
	if !final && time.Since(b.applied) < communityQuiet {
		return nil
	}
	if h := b.g.Communities(); h == nil || h.Version != b.g.Version() {
		return b.g.Rebuild(ctx)
	}
	return nil
}

// applyBatch reads up to batchDocs queue entries not yet processed and
// applies them; it returns how many it read.
func (b *Builder) applyBatch(ctx context.Context) (int, error) {
	b.mu.Lock()
	seen := make(map[string][]byte, len(b.pending))
	for _, p := range b.pending {
		seen[string(p.key)] = p.seq
	}
	b.mu.Unlock()
	var batch []ackEntry
	if err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(b.bucket).Cursor()
		for k, v := c.First(); k != nil && len(batch) < batchDocs; k, v = c.Next() {
			if s, ok := seen[string(k)]; ok && bytes.Equal(s, v) {
				continue
			}
			batch = append(batch, ackEntry{key: bytes.Clone(k), seq: bytes.Clone(v)})
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("graph: queue: %w", err)
	}
	for _, e := range batch {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := b.apply(ctx, string(e.key)); err != nil {
			return 0, err
		}
	}
	b.mu.Lock()
	b.pending = append(b.pending, batch...)
	b.mu.Unlock()
	return len(batch), nil
}

// apply makes the graph hold exactly doc's live units.
func (b *Builder) apply(ctx context.Context, doc string) error {
	units, err := b.src.Units(ctx, doc)
	if err != nil {
		return fmt.Errorf("graph: reading %q: %w", doc, err)
	}
	live := make(map[string]bool, len(units))
	for _, u := range units {
		live[u.ID] = true
	}
	for _, id := range b.g.UnitsOf(doc) {
		if !live[id] {
			b.g.Remove(id)
		}
	}
	for i, ex := range ExtractDoc(units) {
		b.modelTriples(ctx, &ex, units[i].Text)
		b.g.Put(units[i].ID, doc, ex)
	}
	return nil
}

// modelTriples adds the model's evidence-backed triples of text to ex,
// within the step's budget; a failed call spends the budget (the model is
// down or refusing: the rest of the step keeps offline triples).
func (b *Builder) modelTriples(ctx context.Context, ex *Extraction, text string) {
	if b.chat == nil || b.calls >= modelCallsPerRun || strings.TrimSpace(text) == "" {
		return
	}
	b.calls++
	ts, err := AskTriples(ctx, b.chat, text)
	if err != nil {
		b.calls = modelCallsPerRun
		if ctx.Err() == nil {
			b.log.Warn("graph: model triples failed; offline triples only for the rest of this step", "err", err)
		}
		return
	}
	ex.AddModelTriples(text, ts)
}

// flush saves the snapshot and then removes the processed queue entries
// whose sequence did not change meanwhile (a newer write re-queued them).
func (b *Builder) flush() error {
	b.mu.Lock()
	done := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(done) == 0 {
		return nil
	}
	if err := b.g.Save(b.path); err != nil {
		b.mu.Lock()
		b.pending = append(done, b.pending...)
		b.mu.Unlock()
		return err
	}
	b.saved = time.Now()
	return b.db.Update(func(tx *bolt.Tx) error {
		q := tx.Bucket(b.bucket)
		for _, e := range done {
			if bytes.Equal(q.Get(e.key), e.seq) {
				if err := q.Delete(e.key); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Pending counts queued documents (processed or not) — 0 when the graph
// and its snapshot are current.
func (b *Builder) Pending() int {
	n := 0
	_ = b.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(b.bucket).Stats().KeyN
		return nil
	})
	return n
}
