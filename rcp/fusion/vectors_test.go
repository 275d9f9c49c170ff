package fusion

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
	"github.com/rcpgo/rcpgo/rcp/internal/jsonltest"
)

type fusionCase struct {
	Name        string                     `json:"name"`
	Method      string                     `json:"method"`
	Lists       map[string]json.RawMessage `json:"lists"`
	EngineOrder []string                   `json:"engine_order"`
	Params      struct {
		K          *int                `json:"k"`
		RRFK       *float64            `json:"rrfK"`
		Weights    map[string]*float64 `json:"weights"`
		Alpha      *float64            `json:"alpha"`
		ScoreFloor map[string]float64  `json:"scoreFloor"`
		Roles      map[string]string   `json:"roles"`
	} `json:"params"`
	Expect       json.RawMessage `json:"expect"`
	ExpectPython json.RawMessage `json:"expect_python"`
	ExpectNode   json.RawMessage `json:"expect_node"`
	Recommended  string          `json:"recommended"`
}

type fusedExpect struct {
	ID         json.RawMessage `json:"id"`
	Key        string          `json:"key"`
	FusedScore float64         `json:"fusedScore"`
	Engine     string          `json:"engine"`
	Hit        map[string]json.RawMessage
}

// fusionDivergences lists the vectors where this package deliberately
// differs from the agreed (or recommended) reference behaviour.
var fusionDivergences = map[string]struct{ section, reason string }{
	"rrf/meta-not-merged-across-duplicates": {"§16.3", "fused hit SHOULD merge meta: meta.b from the poorer duplicate is kept (references drop it)"},
	"weighted/string-score":                 {"§7.7, §4.6", "score MUST be a number: rcp.Hit rejects a string score at decode time (recommended: Python coerces)"},
	"weighted/bool-score":                   {"§7.7, §4.6", "score MUST be a number: rcp.Hit rejects a boolean score at decode time (recommended: Python coerces)"},
}

// fusionChoices records, for every Python/Node disagreement, the side this
// package takes (the line's "recommended" one) and why.
var fusionChoices = map[string]struct{ side, section, reason string }{
	"rrf/float-id-integral":       {"python", "§16.3, §7.7", "key is the id's JSON text: 1.0 and \"1\" are different documents"},
	"rrf/float-id-exponent":       {"python", "§16.3, §7.7", "key is the id's JSON text as received (1e-07)"},
	"rrf/large-int-id":            {"python", "§4.6, §16.3", "ids keep their exact decimal text beyond 2^53"},
	"rrf/astral-vs-bmp-id-order":  {"python", "§16.3, §8", "ids compare by bytes = code points"},
	"rrf/richness-astral-text":    {"python", "§16.3", "text length counts runes (code points)"},
	"rrf/integer-like-engine-ids": {"python", "§16.3", "engine order is the caller's slice order"},
	"rrf/weights-null-value":      {"node", "§4.6", "null weight is absent: default 1.0"},
	"rrf/hit-missing-id":          {"python", "§7.7", "Hit.id is required: ErrMissingID"},
	"weighted/null-score":         {"node", "§4.6", "null score is absent: excluded from min/max, raw 0"},
	"weighted/string-score":       {"reject", "§7.7, §4.6", "see fusionDivergences"},
	"weighted/bool-score":         {"reject", "§7.7, §4.6", "see fusionDivergences"},
}

func TestFusionChoicesCoverDisagreements(t *testing.T) {
	n := 0
	for _, c := range loadFusionCases(t) {
		if c.Expect != nil {
			continue
		}
		n++
		ch, ok := fusionChoices[c.Name]
		if !ok {
			t.Errorf("disagreement %s has no recorded choice", c.Name)
			continue
		}
		if ch.side != "reject" && ch.side != c.Recommended {
			t.Errorf("%s: choice %s but the test follows %s", c.Name, ch.side, c.Recommended)
		}
		t.Logf("%-34s %-7s %-12s %s", c.Name, ch.side, ch.section, ch.reason)
	}
	if n != len(fusionChoices) {
		t.Errorf("%d disagreements, %d recorded choices", n, len(fusionChoices))
	}
}

func loadFusionCases(t testing.TB) []fusionCase {
	// testdata/README.md: where it comes from
	return jsonltest.Load[fusionCase](t, filepath.Join("testdata", "fusion.jsonl"), json.Unmarshal)
}

// decodeHit decodes a wire hit, mapping an absent or null score to NaN
// (the package's "no score" convention).
func decodeHit(raw json.RawMessage) (rcp.Hit, error) {
	var h rcp.Hit
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return h, err
	}
	if s, ok := probe["score"]; !ok || string(s) == "null" {
		h.Score = math.NaN()
	}
	return h, nil
}

func (c *fusionCase) build() ([]List, Options, error) {
	var lists []List
	for _, eng := range c.EngineOrder {
		var raws []json.RawMessage
		if err := json.Unmarshal(c.Lists[eng], &raws); err != nil {
			return nil, Options{}, err
		}
		l := List{Engine: eng, Hits: make([]rcp.Hit, len(raws))}
		for i, r := range raws {
			h, err := decodeHit(r)
			if err != nil {
				return nil, Options{}, err
			}
			l.Hits[i] = h
		}
		if w, ok := c.Params.Weights[eng]; ok && w != nil { // null weight = default (§4.6)
			l.Weight = w
		}
		if f, ok := c.Params.ScoreFloor[eng]; ok {
			l.ScoreFloor = &f
		}
		for role, e := range c.Params.Roles {
			if e == eng {
				l.Role = Role(role)
			}
		}
		lists = append(lists, l)
	}
	return lists, Options{Method: c.Method, RRFK: c.Params.RRFK, Alpha: c.Params.Alpha, K: c.Params.K}, nil
}

func TestFusionVectors(t *testing.T) {
	cases := loadFusionCases(t)
	if len(cases) != 88 {
		t.Fatalf("fusion.jsonl has %d cases, want 88", len(cases))
	}
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			if len(c.EngineOrder) != len(c.Lists) {
				t.Fatalf("engine_order does not cover lists")
			}
			want := c.Expect
			if want == nil {
				switch c.Recommended {
				case "python":
					want = c.ExpectPython
				case "node":
					want = c.ExpectNode
				default:
					t.Fatalf("no expectation")
				}
			}
			_, diverges := fusionDivergences[c.Name]
			lists, opts, err := c.build()
			var got []Result
			if err == nil {
				got, err = Fuse(lists, opts)
			}
			if diverges && (c.Name == "weighted/string-score" || c.Name == "weighted/bool-score") {
				if err == nil {
					t.Fatalf("non-numeric score accepted")
				}
				return
			}
			if bytes.HasPrefix(bytes.TrimSpace(want), []byte("{")) { // {"ok": false, "exception": ...}
				if err == nil {
					t.Fatalf("fused %d hits, want an error", len(got))
				}
				if c.Name == "rrf/hit-missing-id" && !errors.Is(err, ErrMissingID) {
					t.Fatalf("err %v, want ErrMissingID", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var exp []fusedExpect
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(exp) {
				t.Fatalf("%d results, want %d", len(got), len(exp))
			}
			for i, e := range exp {
				g := got[i]
				if g.Key != e.Key || g.ID != e.Key {
					t.Fatalf("result %d: key %q, want %q", i, g.Key, e.Key)
				}
				if g.Score != e.FusedScore || g.Hit.Score != e.FusedScore {
					t.Fatalf("result %d (%s): fused score %v, want %v (exact)", i, e.Key, g.Score, e.FusedScore)
				}
				if g.Hit.Meta["engine"] != e.Engine { // meta.engine; upstream tags survive
					t.Fatalf("result %d (%s): meta.engine %v, want %q", i, e.Key, g.Hit.Meta["engine"], e.Engine)
				}
				if got, want := compact(t, []byte(g.Hit.ID.Raw())), compact(t, e.ID); got != want {
					t.Fatalf("result %d: id %s, want %s", i, got, want)
				}
				checkHit(t, c.Name, g, e.Hit, diverges)
			}
		})
	}
	for n := range fusionDivergences {
		if !names[n] {
			t.Errorf("divergence %q is not a vector", n)
		}
	}
}

func compact(t *testing.T, b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact %s: %v", b, err)
	}
	return buf.String()
}

func checkHit(t *testing.T, name string, g Result, want map[string]json.RawMessage, diverges bool) {
	t.Helper()
	// text and content: the kept body
	var wantText *string
	if raw, ok := want["text"]; ok {
		_ = json.Unmarshal(raw, &wantText)
	}
	if (wantText == nil) != (g.Hit.Text == nil) || (wantText != nil && *wantText != *g.Hit.Text) {
		t.Fatalf("%s: kept text %v, want %v", g.Key, g.Hit.Text, wantText)
	}
	gotContent, _ := json.Marshal(g.Hit.Content)
	wantContent := json.RawMessage("null")
	if raw, ok := want["content"]; ok {
		wantContent = raw
	}
	if compact(t, gotContent) != compact(t, wantContent) {
		t.Fatalf("%s: content %s, want %s", g.Key, gotContent, wantContent)
	}
	// original score survives as meta.engineScore
	if raw, ok := want["score"]; ok && string(raw) != "null" {
		var s float64
		_ = json.Unmarshal(raw, &s)
		if g.Hit.Meta["engineScore"] != s {
			t.Fatalf("%s: engineScore %v, want %v", g.Key, g.Hit.Meta["engineScore"], s)
		}
	} else if _, ok := g.Hit.Meta["engineScore"]; ok {
		t.Fatalf("%s: engineScore set for a score-less hit", g.Key)
	}
	if g.Hit.Meta["engineRank"] != g.Rank {
		t.Fatalf("%s: engineRank %v, rank %d", g.Key, g.Hit.Meta["engineRank"], g.Rank)
	}
	// meta: references' keys exactly, plus our MAY tags
	meta := map[string]any{}
	for k, v := range g.Hit.Meta {
		if k != "engineRank" && k != "engineScore" {
			meta[k] = v
		}
	}
	gotMeta, err := json.Marshal(meta)
	if err != nil {
		t.Fatalf("meta does not marshal: %v", err)
	}
	var a, b any
	_ = json.Unmarshal(gotMeta, &a)
	_ = json.Unmarshal(want["meta"], &b)
	if diverges && name == "rrf/meta-not-merged-across-duplicates" {
		b.(map[string]any)["b"] = 2.0 // §16.3 merge
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: meta %s, want %s", g.Key, gotMeta, want["meta"])
	}
	if _, err := json.Marshal(g.Hit); err != nil {
		t.Fatalf("fused hit does not marshal: %v", err)
	}
}
