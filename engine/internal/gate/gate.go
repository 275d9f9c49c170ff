// Package gate coordinates the engine's writes and reads: which retrieves
// run their pipeline (admission), the order of commits (the write lock),
// retrieves against commits (the query gate) and readers that need the
// document catalog and the index at one version (the catalog lock).
package gate

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate is the engine's coordination of writes and reads. Safe for
// concurrent use.
type Gate struct {
	adm *admission
	// writes serialises commits, deletes and dense log backfill batches.
	writes sync.Mutex
	// catalog lets readers see the catalog and the index at one version:
	// commits hold it throughout (BeginCommit).
	catalog sync.RWMutex
	// queries is held by retrieves while they run over the embedded index
	// (ReadIndex) and by a commit only before it changes the index
	// (HoldQueries); shut, when set, holds arriving retrieves back while a
	// commit runs (it is closed when the gate opens again).
	queries sync.RWMutex
	shut    atomic.Pointer[chan struct{}]
	runlock func() // queries.RUnlock, bound once
	// queued counts the adds waiting in the group commit queue.
	queued atomic.Int64
}

// New admits concurrency retrieves at once (0: 2 × cores), and
// max(1, cores − 1) while writes come in (admission).
func New(concurrency, cores int) *Gate {
	g := &Gate{adm: newAdmission(concurrency, cores)}
	g.runlock = g.queries.RUnlock
	return g
}

// Admit takes a pipeline slot for a retrieve (local: waiting on no other
// process) until ctx ends; Release gives back what it took.
func (g *Gate) Admit(ctx context.Context, local bool) (narrowed bool, err error) {
	return g.adm.admit(ctx, local)
}

// Release gives back the slots Admit took.
func (g *Gate) Release(narrowed bool) { g.adm.release(narrowed) }

// BeginWrite marks a write request in flight until EndWrite: local
// retrieves are narrowed meanwhile, and for a while after.
func (g *Gate) BeginWrite() { g.adm.beginWrite() }

// EndWrite ends what BeginWrite began.
func (g *Gate) EndWrite() { g.adm.endWrite() }

// WritesComing reports whether local retrieves are narrowed now: a write
// is in flight or ended within the linger.
func (g *Gate) WritesComing() bool { return g.adm.writesComing() }

// Queue counts an add into the commit queue (+1) or out of it (−1).
func (g *Gate) Queue(delta int64) { g.queued.Add(delta) }

// Queued is the number of adds waiting to commit: writes that have
// arrived but not committed are not a pause.
func (g *Gate) Queued() int64 { return g.queued.Load() }

// LockWrites serialises a writer with every other (commits, deletes,
// backfill batches).
func (g *Gate) LockWrites() { g.writes.Lock() }

// UnlockWrites ends LockWrites.
func (g *Gate) UnlockWrites() { g.writes.Unlock() }

// BeginCommit starts a commit (the caller holds LockWrites): readers of the
// catalog wait for its end, and retrieves that arrive wait at the query
// gate, so that the commit, not the query pipelines, gets the CPU.
// Retrieves already running go on until HoldQueries.
func (g *Gate) BeginCommit() {
	g.catalog.Lock()
	ch := make(chan struct{})
	g.shut.Store(&ch)
}

// HoldQueries waits for the retrieves running over the index to finish,
// and holds new ones back, until EndCommit: a commit calls it right before
// it changes the index.
func (g *Gate) HoldQueries() { g.queries.Lock() }

// EndCommit ends BeginCommit; held reports that HoldQueries was called.
func (g *Gate) EndCommit(held bool) {
	if held {
		g.queries.Unlock()
	}
	if ch := g.shut.Swap(nil); ch != nil {
		close(*ch)
	}
	g.catalog.Unlock()
}

// ReadIndex lets a retrieve over the embedded index run: it waits while a
// commit is in progress (the query gate), so that a commit, not the query
// pipelines, gets the CPU — retrieves arriving during one queue here,
// holding their query slot — and then holds the index at one version
// until unlock. A commit does not wait for the retrieves already running
// when it begins: they finish while it writes engine.db (retrieves read
// nothing there that a commit writes).
func (g *Gate) ReadIndex(ctx context.Context) (unlock func(), err error) {
	if ch := g.shut.Load(); ch != nil {
		select {
		case <-*ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	g.queries.RLock()
	return g.runlock, nil
}

// RLockCatalog holds the catalog and the index at one version for a
// reader (x-rcpgo/get, the graph builder) until RUnlockCatalog.
func (g *Gate) RLockCatalog() { g.catalog.RLock() }

// RUnlockCatalog ends RLockCatalog.
func (g *Gate) RUnlockCatalog() { g.catalog.RUnlock() }
