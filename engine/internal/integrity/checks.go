package integrity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rcpgo/rcpgo/internal/outcome"
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
// is refused with -32010 naming the file (ErrDamaged) and Health reports
// it; rcpd then stops with that error, as it would have at Open.

// Checks are the checks that run after Open: they start with
// StartChecks and end when every check has passed, one has found damage,
// or Close stops them.
type checks struct {
	done   *outcome.Outcome // the damage found, or why they stopped (nil: passed)
	cancel context.CancelFunc
}

// StartChecks runs each check in turn in the background (the page walk
// over engine.db, the index's deferred checksums); Close stops them.
func (d *Dir) StartChecks(log *slog.Logger, each ...func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checks{done: outcome.New(), cancel: cancel}
	d.checks.Store(c)
	go func() {
		start := time.Now()
		var err error
		for _, check := range each {
			if err = check(ctx); err != nil {
				break
			}
		}
		switch {
		case err == nil:
			log.Info("engine: data directory verified", "took", time.Since(start).Round(time.Millisecond))
		case ctx.Err() != nil: // Close
		default:
			err = fmt.Errorf("engine: %w%s", err, RepairHint(err))
			log.Error("engine: the data directory is damaged; every request is refused", "err", err)
		}
		c.done.Finish(err)
	}()
}

// StopChecks ends the checks and waits for them.
func (d *Dir) StopChecks() {
	if c := d.checks.Load(); c != nil {
		c.cancel()
		<-c.done.Done()
	}
}

// Checking reports whether the checks after Open have not passed yet
// (they run, or found damage): until they pass, a request may read a
// damaged page.
func (d *Dir) Checking() bool {
	c := d.checks.Load()
	return c != nil && !c.done.Passed()
}

// Verified waits for the checks that Open leaves to the background and
// returns the damage they found (nil: none), or ctx's error if it ends
// first.
func (d *Dir) Verified(ctx context.Context) error { return d.checks.Load().done.Wait(ctx) }

// Damage is what the finished checks found: nil while they run, when they
// passed, or when Close stopped them.
func (d *Dir) Damage() error {
	c := d.checks.Load()
	if c == nil {
		return nil
	}
	if err, finished := c.done.Result(); finished && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
