package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

// openingEngine is the rcp.Handler rcpd serves from the moment it listens,
// while engine.Open still runs (recovering writes after the last flush,
// opening and checking the index and engine.db): the server answers ping
// itself at once; initialize, info and every request wait for the engine,
// bounded by their session's or their own deadline, and are then served by
// it exactly as if rcpd had opened it before listening — a session is never
// given a provisional capability set, and a request never a partial answer.
// /healthz reports 503 "starting" until then.
type openingEngine struct {
	ready chan struct{}
	// Set before ready is closed: the open engine, or why it failed.
	eng *engine.Engine
	err error
}

// errStarting is the health of an engine still opening.
var errStarting = errors.New("starting: the data directory is being opened")

// openEngine starts engine.Open(ctx, cfg) in the background.
func openEngine(ctx context.Context, cfg engine.Config, log *slog.Logger) *openingEngine {
	o := &openingEngine{ready: make(chan struct{})}
	go func() {
		defer close(o.ready)
		if o.eng, o.err = engine.Open(ctx, cfg); o.err != nil {
			return
		}
		docs, _ := o.eng.Documents()
		st := o.eng.Stats()
		log.Info("rcpd: engine open", "data", cfg.Dir, "documents", docs, "units", st.Docs, "version", st.Version,
			"dense", o.eng.DenseIdentity(), "conformance", o.eng.Describe(ctx).Conformance)
	}()
	return o
}

// wait returns the open engine, or why there is none: the open failed or
// ctx ended first.
func (o *openingEngine) wait(ctx context.Context) (*engine.Engine, error) {
	select {
	case <-o.ready: // the common case, without asking ctx for its Done channel
		return o.eng, o.err
	default:
	}
	select {
	case <-o.ready:
		return o.eng, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// failed delivers the open's error, if any, once it has finished, or
// else the damage found by the integrity checks the engine runs after
// opening (engine.Verified): rcpd stops with it as with a failed open.
func (o *openingEngine) failed(errc chan<- error) {
	<-o.ready
	if o.err != nil {
		errc <- o.err
		return
	}
	if err := o.eng.Verified(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		errc <- err
	}
}

// openErr waits for the open to finish and returns why it failed, unless
// it failed because rcpd is stopping: a stdio session that ended before the
// open did (stdin at EOF at once) must not hide a configuration error.
func (o *openingEngine) openErr() error {
	<-o.ready
	if o.err != nil && !errors.Is(o.err, context.Canceled) {
		return o.err
	}
	return nil
}

// close closes the engine once its open has finished.
func (o *openingEngine) close() error {
	<-o.ready
	if o.eng == nil {
		return nil
	}
	return o.eng.Close()
}

// Describe implements rcp.Handler. It is called when a session starts; when
// the session's context ends first (its transport is gone, rcpd is
// stopping) the description is never delivered.
func (o *openingEngine) Describe(ctx context.Context) rcp.Description {
	eng, err := o.wait(ctx)
	if err != nil {
		return rcp.Description{}
	}
	return eng.Describe(ctx)
}

// Call implements rcp.Handler.
func (o *openingEngine) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	eng, err := o.wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("rcpd: engine not open: %w", err)
	}
	return eng.Call(ctx, method, params)
}

// LiveMeta implements rcp.LiveMeta: the open engine's readiness (nothing
// while it opens).
func (o *openingEngine) LiveMeta(ctx context.Context) rcp.Meta {
	if eng, ok := o.opened(); ok {
		return eng.LiveMeta(ctx)
	}
	return nil
}

// Readiness implements engineState (nil until the engine is open).
func (o *openingEngine) Readiness() rcp.Readiness {
	if eng, ok := o.opened(); ok {
		return eng.Readiness()
	}
	return nil
}

// Handles reports whether the open engine serves method (metrics labels).
func (o *openingEngine) Handles(method string) bool {
	eng, ok := o.opened()
	return ok && eng.Handles(method)
}

// Health implements engineState: errStarting until the engine is open.
func (o *openingEngine) Health() error {
	select {
	case <-o.ready:
		if o.err != nil {
			return o.err
		}
		return o.eng.Health()
	default:
		return errStarting
	}
}

// Stats implements engineState (zero until the engine is open).
func (o *openingEngine) Stats() search.Stats {
	if eng, ok := o.opened(); ok {
		return eng.Stats()
	}
	return search.Stats{}
}

// DenseBuild implements engineState (none until the engine is open).
func (o *openingEngine) DenseBuild() (engine.DenseBuild, bool) {
	if eng, ok := o.opened(); ok {
		return eng.DenseBuild()
	}
	return engine.DenseBuild{}, false
}

// Documents implements engineState.
func (o *openingEngine) Documents() (int, error) {
	if eng, ok := o.opened(); ok {
		return eng.Documents()
	}
	return 0, errStarting
}

// opened returns the engine if it is open, without waiting.
func (o *openingEngine) opened() (*engine.Engine, bool) {
	select {
	case <-o.ready:
		return o.eng, o.eng != nil
	default:
		return nil, false
	}
}
