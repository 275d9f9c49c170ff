package federation

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// SelectorOptions configure a Selector. The zero value (or nil) is usable.
type SelectorOptions struct {
	// Client options used to dial registry engines (nil: defaults).
	Client *rcp.ClientOptions
	// PingTimeout bounds the liveness probe of an already connected engine
	// and each dial (default 5 s).
	PingTimeout time.Duration
}

// Selector picks ONE engine out of several (§16): by id, by required
// capability, or the highest-priority engine that is alive, falling back to
// the next one. Engines are dialled lazily, only when selected, and a
// selected engine whose transport died is redialled on the next selection.
type Selector struct {
	engines []*Engine // registry order
	ranked  []*Engine // priority descending, registry order among equals
	opts    SelectorOptions
}

// NewSelector returns a Selector over the registry's engines.
func NewSelector(reg *Registry, opts *SelectorOptions) *Selector {
	var o SelectorOptions
	if opts != nil {
		o = *opts
	}
	engines := make([]*Engine, len(reg.Engines))
	for i, spec := range reg.Engines {
		engines[i] = NewEngine(spec, o.Client)
	}
	return NewSelectorEngines(engines, &o)
}

// NewSelectorEngines returns a Selector over prepared engine handles.
func NewSelectorEngines(engines []*Engine, opts *SelectorOptions) *Selector {
	s := &Selector{engines: slices.Clone(engines)}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.PingTimeout <= 0 {
		s.opts.PingTimeout = 5 * time.Second
	}
	s.ranked = byPriority(s.engines)
	return s
}

func byPriority(engines []*Engine) []*Engine {
	r := slices.Clone(engines)
	slices.SortStableFunc(r, func(a, b *Engine) int { return cmp.Compare(b.spec.Priority, a.spec.Priority) })
	return r
}

// Engines returns the engines in registry order.
func (s *Selector) Engines() []*Engine { return slices.Clone(s.engines) }

// Engine returns the handle with id.
func (s *Selector) Engine(id string) (*Engine, bool) {
	for _, e := range s.engines {
		if e.ID() == id {
			return e, true
		}
	}
	return nil, false
}

// Select returns the engine with id, connected and alive.
func (s *Selector) Select(ctx context.Context, id string) (*Engine, error) {
	e, ok := s.Engine(id)
	if !ok {
		return nil, rcp.InvalidParams("id", "no engine with id %q", id)
	}
	if err := s.alive(ctx, e); err != nil {
		return nil, err
	}
	return e, nil
}

// SelectPrimary returns the highest-priority engine that is alive: each
// candidate is dialled (or, when already connected, pinged) in priority
// order and the first that answers wins. When none answers the error is
// -32010 listing every failure.
func (s *Selector) SelectPrimary(ctx context.Context) (*Engine, error) {
	return s.first(ctx, "")
}

// SelectCapable returns the highest-priority live engine that advertises
// capability (a §6 key such as "rerank", or an x-vendor key).
func (s *Selector) SelectCapable(ctx context.Context, capability string) (*Engine, error) {
	return s.first(ctx, capability)
}

func (s *Selector) first(ctx context.Context, capability string) (*Engine, error) {
	if len(s.engines) == 0 {
		return nil, rcp.NewError(rcp.CodeBackendUnavailable, "no engines configured")
	}
	var errs []error
	lacking := 0
	for _, e := range s.ranked {
		// An engine known to lack the capability is not dialled at all.
		if init, ok := e.Known(); ok && capability != "" && !init.Capabilities.Has(capability) {
			lacking++
			continue
		}
		if err := s.alive(ctx, e); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		if init, _ := e.Known(); capability != "" && !init.Capabilities.Has(capability) {
			lacking++
			continue
		}
		return e, nil
	}
	if len(errs) == 0 && lacking > 0 {
		return nil, rcp.NewError(rcp.CodeCapabilityMissing, "no engine advertises %q", capability)
	}
	return nil, &rcp.Error{Code: rcp.CodeBackendUnavailable, Message: "no engine is reachable",
		Data: &rcp.ErrorData{Retryable: ptrTo(true), Detail: errors.Join(errs...).Error()}}
}

// alive dials e when it has no connection, or pings it when it has one; a
// dead connection is redialled once.
func (s *Selector) alive(ctx context.Context, e *Engine) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.PingTimeout)
	defer cancel()
	if e.Connected() {
		if err := e.Ping(ctx); err == nil {
			return nil
		}
		// Ping dropped the connection; dial afresh below.
	}
	if _, err := e.Client(ctx); err != nil {
		return engineError(e.ID(), err)
	}
	return nil
}

// Close closes every engine connection.
func (s *Selector) Close() error {
	var errs []error
	for _, e := range s.engines {
		if err := e.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func ptrTo[T any](v T) *T { return &v }
