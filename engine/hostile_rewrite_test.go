package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/transform"
	"github.com/rcpgo/rcpgo/rcp"
)

// Issue 33 item 2: retrieve's rewrite path skipped the 4 KiB cap of
// query/transform (a 64 KiB query kept a core busy for 85 s past the
// client). Every rewrite path now has the same cap: -32602 on query.
func TestRetrieveRewriteHasTheTransformCap(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.WordNetDir = WordNetNone })
	long := strings.Repeat("invertd postngs compresion ", transform.MaxQueryBytes/27+1)
	for _, m := range []string{"rewrite", "multi-query", "decompose", "step-back"} {
		start := time.Now()
		_, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": long, "k": 3, "rewrite": m})
		if rerr == nil || rerr.Code != rcp.CodeInvalidParams || rerr.Data == nil || rerr.Data.Field != "query" {
			t.Errorf("%s of %d bytes: %+v, want -32602 on query", m, len(long), rerr)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s of %d bytes took %v", m, len(long), d)
		}
	}
	// Within the cap the rewrite runs.
	if _, rerr := call(t, e, rcp.MethodRetrieve, map[string]any{"query": long[:transform.MaxQueryBytes], "k": 3, "rewrite": "rewrite"}); rerr != nil {
		t.Fatalf("a %d-byte rewrite: %v", transform.MaxQueryBytes, rerr)
	}
}
