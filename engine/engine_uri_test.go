package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

func TestContentURI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/q.txt":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, "BM25 term frequency saturation")
		case "/q.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G'})
		case "/big.txt":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(strings.Repeat("a", 2048)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	strict := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	open := newEngine(t, func(c *Config) {
		c.Dense = DenseNone
		c.URIPolicy = URIPolicy{AllowPrivate: true, MaxBytes: 1024} // the test server is on loopback
	})
	q := func(block string) string { return `{"query":[` + block + `],"k":3}` }
	cases := []struct {
		name   string
		e      *Engine
		params string
		code   rcp.Code
		field  string
	}{
		{"loopback refused by default", strict, q(`{"type":"text","uri":"` + srv.URL + `/q.txt"}`), rcp.CodeInvalidParams, "query[0].uri"},
		{"file refused", open, q(`{"type":"text","uri":"file:///etc/passwd"}`), rcp.CodeInvalidParams, "query[0].uri"},
		{"fetched", open, q(`{"type":"text","uri":"` + srv.URL + `/q.txt"}`), 0, ""},
		{"not text/*", open, q(`{"type":"text","uri":"` + srv.URL + `/q.png"}`), rcp.CodeInvalidParams, "query[0].uri"},
		{"too large", open, q(`{"type":"text","uri":"` + srv.URL + `/big.txt"}`), rcp.CodeInvalidParams, "query[0].uri"},
		{"404", open, q(`{"type":"text","uri":"` + srv.URL + `/nope"}`), rcp.CodeInvalidParams, "query[0].uri"},
		{"text and uri", open, q(`{"type":"text","text":"x","uri":"` + srv.URL + `/q.txt"}`), rcp.CodeInvalidParams, "query[0].uri"},
		{"image block", open, q(`{"type":"image","mimeType":"image/png","uri":"` + srv.URL + `/q.png"}`), rcp.CodeOptionUnsupported, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, rerr := call(t, tc.e, rcp.MethodRetrieve, tc.params)
			if tc.code == 0 {
				if rerr != nil {
					t.Fatalf("error %v", rerr)
				}
				var r rcp.RetrieveResult
				if err := json.Unmarshal(res, &r); err != nil {
					t.Fatal(err)
				}
				if len(r.Hits) == 0 || r.Hits[0].ID.String() != "bm25" {
					t.Fatalf("hits %s", res)
				}
				return
			}
			if rerr == nil || rerr.Code != tc.code {
				t.Fatalf("got %v, want code %d", rerr, tc.code)
			}
			if tc.field != "" && (rerr.Data == nil || rerr.Data.Field != tc.field) {
				t.Fatalf("error data %+v, want field %s", rerr.Data, tc.field)
			}
			if tc.code == rcp.CodeOptionUnsupported && (rerr.Data == nil || rerr.Data.Option != "image") {
				t.Fatalf("error data %+v, want option image", rerr.Data)
			}
		})
	}
}
