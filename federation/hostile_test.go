package federation_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/rcp"
)

// hostileEngine answers retrieve with a hit carrying text and a vector
// whatever was asked, a hit of size bytes, or an uncorrelated id.
func hostileEngine(t *testing.T, mode func() string) string {
	return fedtest.FakeEngine(t, func(w http.ResponseWriter, id json.RawMessage, method string, _ []byte) {
		switch {
		case method == rcp.MethodInitialize:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"server":{"name":"hostile","version":"1"},"capabilities":{"retrieve":{"maxK":10}},"conformance":"L0"}}`, id)
		case method != rcp.MethodRetrieve:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
		case mode() == "other":
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"other","result":{"hits":[{"id":"forged","score":9}]}}`)
		case mode() == "huge":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"hits":[{"id":"huge","score":9,"text":"%s"}]}}`, id, strings.Repeat("x", federation.DefaultMaxEngineResponse+1))
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"hits":[{"id":"h","score":9,"text":"unasked text","vector":[1,2,3]}]}}`, id)
		}
	})
}

// The gateway strips what the caller did not ask for, refuses uncorrelated
// answers and oversized ones (item 6).
func TestGatewayDistrustsEngines(t *testing.T) {
	var mode atomic.Value
	mode.Store("")
	url := hostileEngine(t, func() string { return mode.Load().(string) })
	reg := &federation.Registry{Engines: []federation.EngineSpec{{ID: "hostile", Transport: federation.TransportHTTP, URL: url}}}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, s := gatewayOver(t, reg, nil)
	c := dial(t, s.URL, nil)
	no := false
	res, err := c.Retrieve(ctxT(t, 10*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery("q"), K: 3, IncludeText: &no})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Text != nil || res.Hits[0].Vector != nil {
		t.Fatalf("hits %+v: text and vector were not asked for", res.Hits)
	}
	for _, m := range []string{"other", "huge"} {
		mode.Store(m)
		res, err := c.Retrieve(ctxT(t, 20*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery("q"), K: 3})
		if err == nil {
			for _, h := range res.Hits {
				if id := h.ID.String(); id == "forged" || id == "huge" {
					t.Errorf("%s: the gateway fused hit %s", m, id)
				}
			}
		}
	}
	mode.Store("")
	if _, err := c.Retrieve(ctxT(t, 10*time.Second), &rcp.RetrieveParams{Query: rcp.TextQuery(strings.Repeat("q ", federation.MaxQueryBytes)), K: 3}); codeOf(err) != rcp.CodeInvalidParams {
		t.Errorf("an oversized query: %v, want -32602", err)
	}
}
