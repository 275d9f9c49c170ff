package agentic

// Feedback and sessions are bound to callers (issue 33 items 5 and 9;
// §15.3): a sessionId names a trajectory within its caller's scope, and
// feedback counts by caller, where the caller is what the transport
// authenticated (rcp.CallerOf), never something the client put in params.

import (
	"context"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// SessionKey is the session store's key of the client's sessionId id: the
// id within its caller's scope (rcp.Caller.Scope: the token, else the
// client address, narrowed to the RCP session), so two callers using the
// same id never see or affect each other's trajectory.
func SessionKey(ctx context.Context, id string) string {
	return rcp.CallerOf(ctx).Scope() + "\x00" + id
}

// feedbackCaller names the reporter of a feedback call: its caller, or,
// for a trusted relay (a stream peer or a configured TrustedRelays caller)
// that names the caller it relays in _meta (rcp.MetaRCPGoCaller), that
// caller behind the relay ("token:gateway > addr:10.0.0.7"), so reports
// through a gateway still count per client.
func (a *Agentic) feedbackCaller(ctx context.Context, meta rcp.Meta) string {
	c := rcp.CallerOf(ctx)
	id := c.ID()
	var relayed string
	if !meta.Get(rcp.MetaRCPGoCaller, &relayed) || relayed == "" || len(relayed) > maxRelayedCaller {
		return id
	}
	if c.Transport == rcp.TransportStream || slices.Contains(a.opts.Feedback.TrustedRelays, id) {
		return id + " > " + relayed
	}
	return id
}

// maxRelayedCaller bounds the caller name a relay passes on.
const maxRelayedCaller = 256

// handleQuarantine serves the operator's view of feedback quarantines:
// x-rcpgo/quarantine/list and x-rcpgo/quarantine/lift (rcpd gives them to
// tokens with the admin scope only; lifts are logged with the caller).
func (a *Agentic) handleQuarantine(r *rcp.Router) {
	rcp.Handle(r, rcp.MethodRCPGoQuarantineList, func(context.Context, *rcp.QuarantineListParams) (*rcp.QuarantineListResult, error) {
		res := &rcp.QuarantineListResult{Units: []rcp.Quarantine{}}
		for _, q := range a.fb.List() {
			res.Units = append(res.Units, rcp.Quarantine{ID: q.ID, Injection: q.Injection, Reporters: q.Reporters,
				Since: q.Since.Format(time.RFC3339), Until: q.Until.Format(time.RFC3339)})
		}
		return res, nil
	})
	rcp.Handle(r, rcp.MethodRCPGoQuarantineLift, func(ctx context.Context, p *rcp.QuarantineLiftParams) (*rcp.QuarantineLiftResult, error) {
		if len(p.IDs) == 0 {
			return nil, rcp.InvalidParams("ids", "ids is required: the units whose quarantine to lift")
		}
		if len(p.IDs) > maxLiftIDs {
			return nil, rcp.InvalidParams("ids", "%d ids; at most %d per call", len(p.IDs), maxLiftIDs)
		}
		by := rcp.CallerOf(ctx).ID()
		if by == "" {
			by = "local"
		}
		lifted, err := a.fb.Lift(p.IDs, by)
		if err != nil {
			return nil, err
		}
		if lifted == nil {
			lifted = []string{}
		}
		return &rcp.QuarantineLiftResult{Lifted: lifted}, nil
	})
}

// maxLiftIDs bounds one x-rcpgo/quarantine/lift call.
const maxLiftIDs = 1000
