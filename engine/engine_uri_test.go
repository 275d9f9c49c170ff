package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

func TestURIPolicyCheck(t *testing.T) {
	def := URIPolicy{}.withDefaults()
	hosts := URIPolicy{Hosts: []string{"docs.example.com", ".wiki.example"}}.withDefaults()
	cases := []struct {
		name   string
		policy URIPolicy
		uri    string
		ok     bool
	}{
		{"public https", def, "https://example.com/a.txt", true},
		{"public http", def, "http://example.com/a.txt", true},
		{"file", def, "file:///etc/passwd", false},
		{"file listed but unfetchable", URIPolicy{Schemes: []string{"file"}}.withDefaults(), "file:///etc/passwd", false},
		{"ftp", def, "ftp://example.com/x", false},
		{"relative", def, "/etc/passwd", false},
		{"loopback v4", def, "http://127.0.0.1:8080/x", false},
		{"loopback v6", def, "http://[::1]/x", false},
		{"localhost", def, "http://localhost/x", false},
		{"private 10/8", def, "http://10.1.2.3/x", false},
		{"private 192.168", def, "http://192.168.0.1/x", false},
		{"link-local metadata", def, "http://169.254.169.254/latest/meta-data", false},
		{"cgnat", def, "http://100.64.0.1/x", false},
		{"unspecified", def, "http://0.0.0.0/x", false},
		{"mapped loopback", def, "http://[::ffff:127.0.0.1]/x", false},
		{"private allowed", URIPolicy{AllowPrivate: true}.withDefaults(), "http://127.0.0.1/x", true},
		{"host allowed", hosts, "https://docs.example.com/x", true},
		{"subdomain allowed", hosts, "https://a.wiki.example/x", true},
		{"domain itself", hosts, "https://wiki.example/x", true},
		{"host not allowed", hosts, "https://evil.example.com/x", false},
		{"disabled", URIPolicy{Disabled: true}.withDefaults(), "https://example.com/x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.policy.check(tc.uri)
			if (err == nil) != tc.ok {
				t.Fatalf("check(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
			}
		})
	}
}

// TestContentURI: a text block carrying a uri is fetched when the policy
// allows it and the body is text/*, else -32602 with field query[i].uri;
// non-text blocks are -32005 (text-only server).
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
	// The dial-time check refuses private addresses whatever the name
	// resolved to (DNS cannot smuggle them past the policy).
	resp, err := strict.uriClient.Get(srv.URL + "/q.txt")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, errPrivateAddress) {
		t.Fatalf("dialling loopback: %v", err)
	}
}
