package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/store"
	"github.com/rcpgo/rcpgo/internal/outcome"
	"github.com/rcpgo/rcpgo/rcp"
)

// What Open checks, and what it leaves to the background (docs/rcpd.md,
// "What is checked when"). Open checks what reading the files safely
// needs, in time independent of the corpus: bbolt's meta pages, each bbolt
// file's length, root and freelist pages (store.CheckFile), each segment's
// footer, section table and tables and its footer CRC against the
// manifest's; and it replays the writes acknowledged after the last flush.
// What grows with the corpus — the walk over every page of engine.db and
// index/store.db, and each segment's CRC-32C over all its bytes — runs in
// verify once Open has returned, the way Lucene and Pebble check footers at
// open and whole-file checksums later. Searches and merges wait for the
// segment checksums (index.Options.VerifyAfterOpen), so a damaged segment
// is never searched; bbolt values that requests read carry their own
// checksums or fail to decode, and a damaged bbolt page that a request
// reads before the walk reaches it fails that request (a panic or fault
// becomes -32603) instead of the process. Once a check fails, every request
// is refused with -32010 naming the file (damagedError) and Health reports
// it; rcpd then stops with that error, as it would have at Open.

// integrity is the state of the checks verify runs after Open.
type integrity struct {
	checks *outcome.Outcome // the damage found, or why verify stopped (nil: passed)
	cancel context.CancelFunc
}

// startVerify starts verify; Close stops it.
func (e *Engine) startVerify() {
	ctx, cancel := context.WithCancel(context.Background())
	e.integrity = &integrity{checks: outcome.New(), cancel: cancel}
	go e.verify(ctx)
}

// verify walks engine.db's pages and waits for the index's deferred
// checks (its segments' checksums, the walk over store.db).
func (e *Engine) verify(ctx context.Context) {
	in := e.integrity
	start := time.Now()
	err := store.VerifyPages(ctx, e.db)
	if ix, ok := e.ix.(*index.Index); ok && err == nil {
		err = ix.WaitVerified(ctx)
	}
	switch {
	case err == nil:
		e.log.Info("engine: data directory verified", "took", time.Since(start).Round(time.Millisecond))
	case ctx.Err() != nil: // Close
	default:
		err = fmt.Errorf("engine: %w%s", err, repairHint(err))
		e.log.Error("engine: the data directory is damaged; every request is refused", "err", err)
	}
	in.checks.Finish(err)
}

// stopVerify ends verify (Close) and waits for it.
func (e *Engine) stopVerify() {
	if e.integrity != nil {
		e.integrity.cancel()
		<-e.integrity.checks.Done()
	}
}

// Verified waits for the integrity checks that Open leaves to the
// background and returns the damage they found (nil: none), or ctx's error
// if it ends first. rcpd stops with that damage, as with a failed Open.
func (e *Engine) Verified(ctx context.Context) error {
	return e.integrity.checks.Wait(ctx)
}

// damage is what the finished checks found: nil while they run, when they
// passed, or when Close stopped them.
func (e *Engine) damage() error {
	if e.integrity == nil {
		return nil
	}
	if err, finished := e.integrity.checks.Result(); finished && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// damagedError refuses a request once the checks have found damage.
func damagedError(err error) error {
	return &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "storage damaged",
		Data: &rcp.ErrorData{Retryable: ptrBool(false), Detail: err.Error()}}
}
