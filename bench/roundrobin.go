package bench

import (
	"context"
	"encoding/json"
	"sync/atomic"
)

// RoundRobin spreads calls over several callers in turn: one target made
// of several stateless replicas of a server (rcp bench -target
// name=addr1,addr2).
func RoundRobin(cs ...Caller) Caller {
	if len(cs) == 1 {
		return cs[0]
	}
	var next atomic.Uint64
	return CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
		return cs[(next.Add(1)-1)%uint64(len(cs))].Call(ctx, method, params)
	})
}
