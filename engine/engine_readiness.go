package engine

// Readiness of the derived structures (issue 31): the dense generation with
// its HNSW index, the knowledge graph, its communities, the summary tree
// and the global memory are each built in the background from the index.
// engine/readiness observes them through the probes below; /healthz, info
// (_meta "x-rcpgo/readiness", rcp.LiveMeta), the console and `rcp index
// status` show the states, and a call on a structure whose first build has
// not finished waits for it within its deadline (awaitDerived) instead of
// answering an empty success; an answer from a stale one says so in
// usage.notes.

import (
	"context"

	"github.com/rcpgo/rcpgo/rcp"
)

// Readiness reports every derived structure's state (nil: none).
func (e *Engine) Readiness() rcp.Readiness {
	if e.ready == nil {
		return nil
	}
	return e.ready.Readiness()
}

// LiveMeta implements rcp.LiveMeta: the readiness of the derived
// structures in every initialize and info answer.
func (e *Engine) LiveMeta(context.Context) rcp.Meta {
	r := e.Readiness()
	if len(r) == 0 {
		return nil
	}
	return rcp.Meta{}.Set(rcp.MetaRCPGoReadiness, r)
}
