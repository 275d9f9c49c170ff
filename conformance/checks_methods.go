package conformance

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// ---------------------------------------------------------------- §8 filters

type filterField struct{ name, typ string }

func (s *suite) filterFields() []filterField {
	v, _ := s.capValue("filter.fields")
	var out []filterField
	switch f := v.(type) {
	case map[string]any:
		for k, t := range f {
			ts, _ := t.(string)
			out = append(out, filterField{k, ts})
		}
	case []any:
		for _, k := range f {
			if ks, ok := k.(string); ok {
				out = append(out, filterField{ks, ""})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (s *suite) filterOpAllowed(op string) bool {
	ops := s.capStrings("filter.operators")
	if _, advertised := s.capValue("filter.operators"); !advertised {
		return true
	}
	return slices.Contains(ops, op)
}

func sampleValue(typ string) any {
	switch typ {
	case "int":
		return 2020
	case "float":
		return 0.5
	case "bool":
		return true
	case "date":
		return "2020-01-01T00:00:00Z"
	}
	return "rcp-conformance"
}

// validClause builds a clause that any server advertising the field must accept.
func (s *suite) validClause() (map[string]any, string) {
	fields := s.filterFields()
	if len(fields) == 0 {
		return nil, "no filter fields advertised"
	}
	f := fields[0]
	for _, ff := range fields {
		if ff.typ == "keyword" || ff.typ == "int" {
			f = ff
			break
		}
	}
	if s.filterOpAllowed("eq") && f.typ != "geo" {
		return map[string]any{"field": f.name, "op": "eq", "value": sampleValue(f.typ)}, ""
	}
	if s.filterOpAllowed("exists") {
		return map[string]any{"field": f.name, "op": "exists", "value": true}, ""
	}
	return nil, "neither eq nor exists is advertised"
}

func filterChecks() []Check {
	need := []string{"filter", "retrieve"}
	filtered := func(ctx context.Context, s *suite, filter any) *response {
		return s.call(ctx, "retrieve", map[string]any{"query": s.probeQuery(ctx), "k": 3, "filter": filter})
	}
	return []Check{
		{ID: "filter.valid", Name: "a filter on an advertised field is accepted", Level: L1, Section: "§8", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				c, why := s.validClause()
				if c == nil {
					return skip("%s", why)
				}
				r := filtered(ctx, s, c)
				return check(r.ok(), "filter %s: %s", mustJSON(c), r)
			}},
		{ID: "filter.combinators", Name: "and/or/not combinators nest", Level: L1, Section: "§8", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				c, why := s.validClause()
				if c == nil {
					return skip("%s", why)
				}
				tree := map[string]any{"and": []any{c, map[string]any{"or": []any{c, map[string]any{"not": c}}}}}
				r := filtered(ctx, s, tree)
				return check(r.ok(), "filter %s: %s", truncate(string(mustJSON(tree)), 160), r)
			}},
		{ID: "filter.unknown-field", Name: "a filter on an unadvertised field is rejected with -32602", Level: L1, Section: "§8, §15.4", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				op := "eq"
				if !s.filterOpAllowed("eq") {
					op = "exists"
				}
				r := filtered(ctx, s, map[string]any{"field": "rcp_conformance_no_such_field", "op": op, "value": "x"})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "filter.unknown-field-data", Name: "the -32602 for an unadvertised filter field names it in error.data.field", Level: L1, Section: "§8, §12.1", Requirement: Should, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				r := filtered(ctx, s, map[string]any{"field": "rcp_conformance_no_such_field", "op": "eq", "value": "x"})
				if r.code() != -32602 && r.code() != -32005 {
					return skip("not rejected with -32602 (see filter.unknown-field)")
				}
				return check(r.errData("field") != "", "error.data.field missing: %s", r)
			}},
		{ID: "filter.type-mismatch", Name: "a value of the wrong JSON type is -32602 with error.data.field", Level: L1, Section: "§8", Requirement: Must, Needs: []string{"filter", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				var f *filterField
				for _, ff := range s.filterFields() {
					if ff.typ == "int" || ff.typ == "float" || ff.typ == "bool" || ff.typ == "keyword" {
						ff := ff
						f = &ff
						if ff.typ != "keyword" {
							break
						}
					}
				}
				if f == nil {
					return skip("no typed int/float/bool/keyword field advertised")
				}
				if !s.filterOpAllowed("eq") {
					return skip("eq not advertised")
				}
				var bad any = "not-a-number"
				if f.typ == "keyword" {
					bad = map[string]any{"not": "scalar"}
				} else if f.typ == "bool" {
					bad = "true"
				}
				r := filtered(ctx, s, map[string]any{"field": f.name, "op": "eq", "value": bad})
				if r.code() != -32602 {
					return fail("%s field %q with value %s: want -32602, got %s", f.typ, f.name, mustJSON(bad), r)
				}
				return check(r.errData("field") != "", "error.data.field missing: %s", r)
			}},
		{ID: "filter.op-not-for-type", Name: "an ordered comparison on a keyword field is rejected with -32602", Level: L1, Section: "§8", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				if !s.filterOpAllowed("gt") {
					return skip("gt not advertised")
				}
				for _, f := range s.filterFields() {
					if f.typ == "keyword" || f.typ == "bool" {
						r := filtered(ctx, s, map[string]any{"field": f.name, "op": "gt", "value": 1})
						return check(r.code() == -32602, "gt on %s field %q: want -32602, got %s", f.typ, f.name, r)
					}
				}
				return skip("no typed keyword/bool field advertised")
			}},
		{ID: "filter.op-unsupported", Name: "an operator outside filter.operators is rejected with -32005", Level: L1, Section: "§8, §12", Requirement: Must, Needs: []string{"filter.operators", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome {
				op := missing(s.capStrings("filter.operators"), "contains", "nin", "ne", "exists", "in", "lt", "lte", "gt", "gte", "eq")
				if op == "" {
					return skip("every operator is advertised")
				}
				fields := s.filterFields()
				if len(fields) == 0 {
					return skip("no filter fields advertised")
				}
				var val any = sampleValue(fields[0].typ)
				switch op {
				case "in", "nin":
					val = []any{val}
				case "exists":
					val = true
				}
				r := filtered(ctx, s, map[string]any{"field": fields[0].name, "op": op, "value": val})
				return check(r.code() == -32005, "op %q: want -32005, got %s", op, r)
			}},
		{ID: "filter.empty-combinator", Name: "an empty and/or array is rejected with -32602", Level: L1, Section: "§8", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				for _, comb := range []string{"and", "or"} {
					r := filtered(ctx, s, map[string]any{comb: []any{}})
					if r.code() != -32602 {
						return fail("{%q: []}: want -32602, got %s", comb, r)
					}
				}
				return pass()
			}},
		{ID: "filter.malformed", Name: "a malformed clause (no op) is rejected with -32602", Level: L1, Section: "§8, §15.4", Requirement: Must, Needs: need,
			run: func(ctx context.Context, s *suite) outcome {
				fields := s.filterFields()
				if len(fields) == 0 {
					return skip("no filter fields advertised")
				}
				r := filtered(ctx, s, map[string]any{"field": fields[0].name, "value": "x"})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
	}
}

// ---------------------------------------------------------------- §7.3–§7.17 methods

func decodeVectors(result json.RawMessage) (vecs []json.RawMessage, encoding string, dim int, err error) {
	var w struct {
		Vectors   []json.RawMessage `json:"vectors"`
		Encoding  string            `json:"encoding"`
		Dimension int               `json:"dimension"`
	}
	if err := json.Unmarshal(result, &w); err != nil {
		return nil, "", 0, err
	}
	if w.Encoding == "" {
		w.Encoding = "json"
	}
	return w.Vectors, w.Encoding, w.Dimension, nil
}

func floatsOf(raw json.RawMessage) ([]float64, bool) {
	var f []float64
	return f, json.Unmarshal(raw, &f) == nil
}

func methodChecks() []Check {
	embedNeed := []string{"embed"}
	return []Check{
		{ID: "embed.basic", Name: "embed returns one vector of embed.dimension per input, in order", Level: L1, Section: "§7.3", Requirement: Must, Needs: embedNeed,
			run: func(ctx context.Context, s *suite) outcome {
				inputs := s.embedTexts("alpha retrieval", "beta passage", "gamma")
				r := s.call(ctx, "embed", map[string]any{"inputs": inputs})
				if !r.ok() {
					return fail("embed: %s", r)
				}
				if err := s.validateResult("embed", r.Result); err != nil {
					return fail("%v", err)
				}
				vecs, enc, _, err := decodeVectors(r.Result)
				if err != nil || enc != "json" {
					return fail("encoding %q without being asked (%v)", enc, err)
				}
				if len(vecs) != len(inputs) {
					return fail("%d inputs, %d vectors", len(inputs), len(vecs))
				}
				dim, _ := s.capInt("embed.dimension")
				for i, v := range vecs {
					f, ok := floatsOf(v)
					if !ok {
						return fail("vector %d is not a number array", i)
					}
					if dim > 0 && len(f) != dim {
						return fail("vector %d has %d components, embed.dimension=%d", i, len(f), dim)
					}
				}
				rev := s.call(ctx, "embed", map[string]any{"inputs": []string{inputs[2], inputs[1], inputs[0]}})
				rv, _, _, _ := decodeVectors(rev.Result)
				if len(rv) == 3 {
					a, _ := floatsOf(vecs[0])
					b, _ := floatsOf(rv[2])
					if !closeVec(a, b, 1e-4) {
						return fail("vectors are not returned in input order (input 0 differs when sent last)")
					}
				}
				return pass()
			}},
		{ID: "embed.legacy-texts", Name: "embed accepts the legacy texts field", Level: L1, Section: "§7.3", Requirement: Must, Needs: embedNeed,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "embed", map[string]any{"texts": s.embedTexts("legacy one", "legacy two")})
				if !r.ok() {
					return fail("embed {texts}: %s", r)
				}
				vecs, _, _, _ := decodeVectors(r.Result)
				return check(len(vecs) == 2, "2 texts, %d vectors", len(vecs))
			}},
		{ID: "embed.json-explicit", Name: `embed with encoding "json" is always supported`, Level: L1, Section: "§7.3.1", Requirement: Must, Needs: embedNeed,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "embed", map[string]any{"inputs": s.embedTexts("x"), "encoding": "json"})
				if !r.ok() {
					return fail("%s", r)
				}
				vecs, enc, _, _ := decodeVectors(r.Result)
				_, isArr := floatsOf(vecs[0])
				return check(enc == "json" && len(vecs) == 1 && isArr, "encoding %q, %d vectors", enc, len(vecs))
			}},
		{ID: "embed.missing-inputs", Name: "embed without inputs is rejected with -32602", Level: L0, Section: "§12, §14.1", Requirement: Must, Needs: embedNeed,
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "embed", map[string]any{"kind": "query"})
				if r.code() != -32602 {
					return fail("no inputs: want -32602, got %s", r)
				}
				r = s.call(ctx, "embed", map[string]any{"inputs": "not-an-array"})
				return check(r.code() == -32602, "inputs as a string: want -32602, got %s", r)
			}},
		{ID: "embed.f32-base64", Name: "f32-base64: encoding echoed, dimension present, each blob exactly dimension×4 bytes", Level: L1, Section: "§7.3.1", Requirement: Must, Needs: []string{"embed.encodings"},
			run: func(ctx context.Context, s *suite) outcome {
				if !slices.Contains(s.capStrings("embed.encodings"), "f32-base64") {
					return skip("f32-base64 not advertised")
				}
				r := s.call(ctx, "embed", map[string]any{"inputs": s.embedTexts("one", "two"), "encoding": "f32-base64"})
				if !r.ok() {
					return fail("%s", r)
				}
				if err := s.validateResult("embed", r.Result); err != nil {
					return fail("%v", err)
				}
				vecs, enc, dim, _ := decodeVectors(r.Result)
				if enc != "f32-base64" {
					return fail("result encoding %q", enc)
				}
				if dim <= 0 {
					return fail("dimension missing")
				}
				for i, v := range vecs {
					var str string
					if json.Unmarshal(v, &str) != nil {
						return fail("vector %d is not a string", i)
					}
					b, err := base64.StdEncoding.DecodeString(str)
					if err != nil {
						return fail("vector %d is not padded standard base64: %v", i, err)
					}
					if len(b) != dim*4 {
						return fail("vector %d decodes to %d bytes, want dimension×4 = %d", i, len(b), dim*4)
					}
				}
				return check(len(vecs) == 2, "2 inputs, %d vectors", len(vecs))
			}},
		{ID: "embed.f32-matches-json", Name: "f32-base64 decodes (little-endian) to the same vector as json", Level: L1, Section: "§7.3.1", Requirement: Must, Needs: []string{"embed.encodings"},
			run: func(ctx context.Context, s *suite) outcome {
				if !slices.Contains(s.capStrings("embed.encodings"), "f32-base64") {
					return skip("f32-base64 not advertised")
				}
				same := s.embedTexts("same text")
				rj := s.call(ctx, "embed", map[string]any{"inputs": same})
				rb := s.call(ctx, "embed", map[string]any{"inputs": same, "encoding": "f32-base64"})
				if !rj.ok() || !rb.ok() {
					return fail("json: %s; f32-base64: %s", rj, rb)
				}
				vj, _, _, _ := decodeVectors(rj.Result)
				vb, _, _, _ := decodeVectors(rb.Result)
				if len(vj) != 1 || len(vb) != 1 {
					return fail("want one vector each")
				}
				fj, _ := floatsOf(vj[0])
				var str string
				_ = json.Unmarshal(vb[0], &str)
				b, err := base64.StdEncoding.DecodeString(str)
				if err != nil || len(b)%4 != 0 {
					return fail("bad blob")
				}
				fb := make([]float64, len(b)/4)
				for i := range fb {
					fb[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
				}
				return check(closeVec(fj, fb, 1e-5), "decoded blob differs from the json vector (byte order?)")
			}},
		{ID: "sparse.basic", Name: "embed/sparse returns one {indices, values} per text with matching lengths", Level: L2, Section: "§7.4", Requirement: Must, Needs: []string{"sparseEmbed"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "embed/sparse", map[string]any{"texts": []string{"sparse lexical", "splade terms weights"}})
				if !r.ok() {
					return fail("%s", r)
				}
				if err := s.validateResult("embed/sparse", r.Result); err != nil {
					return fail("%v", err)
				}
				var w struct {
					Sparse []struct {
						Indices []json.Number `json:"indices"`
						Values  []float64     `json:"values"`
					} `json:"sparse"`
				}
				if err := json.Unmarshal(r.Result, &w); err != nil {
					return fail("%v", err)
				}
				if len(w.Sparse) != 2 {
					return fail("2 texts, %d sparse vectors", len(w.Sparse))
				}
				for i, sv := range w.Sparse {
					if len(sv.Indices) != len(sv.Values) {
						return fail("entry %d: %d indices, %d values", i, len(sv.Indices), len(sv.Values))
					}
					for _, ix := range sv.Indices {
						if _, err := ix.Int64(); err != nil {
							return fail("entry %d: index %s is not an integer", i, ix)
						}
					}
				}
				return pass()
			}},
		{ID: "multi.basic", Name: "embed/multi returns one matrix per input with rows of the advertised dimension", Level: L2, Section: "§7.5", Requirement: Must, Needs: []string{"multiVector"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "embed/multi", map[string]any{"inputs": []string{"late interaction", "colbert maxsim"}})
				if !r.ok() {
					return fail("%s", r)
				}
				if err := s.validateResult("embed/multi", r.Result); err != nil {
					return fail("%v", err)
				}
				var w struct {
					Matrices  [][][]float64 `json:"matrices"`
					Dimension int           `json:"dimension"`
				}
				if err := json.Unmarshal(r.Result, &w); err != nil {
					return fail("%v", err)
				}
				if len(w.Matrices) != 2 {
					return fail("2 inputs, %d matrices", len(w.Matrices))
				}
				dim, _ := s.capInt("multiVector.dimension")
				if w.Dimension > 0 {
					dim = w.Dimension
				}
				for i, m := range w.Matrices {
					if len(m) == 0 {
						return fail("matrix %d is empty", i)
					}
					for _, row := range m {
						if dim > 0 && len(row) != dim {
							return fail("matrix %d has a row of %d, dimension %d", i, len(row), dim)
						}
					}
				}
				return pass()
			}},
		{ID: "rerank.basic", Name: "rerank returns one score per passage", Level: L2, Section: "§7.6", Requirement: Must, Needs: []string{"rerank"},
			run: func(ctx context.Context, s *suite) outcome {
				passages := []string{"the eiffel tower is in paris", "photosynthesis in plants", "a b c"}
				r := s.call(ctx, "rerank", map[string]any{"query": "where is the eiffel tower", "passages": passages})
				if !r.ok() {
					return fail("%s", r)
				}
				if err := s.validateResult("rerank", r.Result); err != nil {
					return fail("%v", err)
				}
				var w struct {
					Scores []float64 `json:"scores"`
				}
				_ = json.Unmarshal(r.Result, &w)
				return check(len(w.Scores) == len(passages), "%d passages, %d scores", len(passages), len(w.Scores))
			}},
		{ID: "rerank.order", Name: "rerank order (when present) lists valid indices best-first", Level: L2, Section: "§7.6", Requirement: Must, Needs: []string{"rerank"},
			run: func(ctx context.Context, s *suite) outcome {
				passages := []string{"x y z", "paris tower", "eiffel tower paris france", "plants"}
				r := s.call(ctx, "rerank", map[string]any{"query": "eiffel tower paris", "passages": passages, "topN": 2})
				if !r.ok() {
					return fail("%s", r)
				}
				var w struct {
					Scores []float64 `json:"scores"`
					Order  []int     `json:"order"`
				}
				_ = json.Unmarshal(r.Result, &w)
				if w.Order == nil {
					return passf("no order returned")
				}
				seen := map[int]bool{}
				for i, ix := range w.Order {
					if ix < 0 || ix >= len(passages) || seen[ix] {
						return fail("order %v has an invalid or repeated index", w.Order)
					}
					seen[ix] = true
					if i > 0 && len(w.Scores) == len(passages) && w.Scores[ix] > w.Scores[w.Order[i-1]] {
						return fail("order %v is not best-first for scores %v", w.Order, w.Scores)
					}
				}
				return pass()
			}},
		{ID: "rerank.methods", Name: "every advertised rerank method answers", Level: L2, Section: "§7.6", Requirement: Must, Needs: []string{"rerank.methods"},
			run: func(ctx context.Context, s *suite) outcome {
				for _, m := range s.capStrings("rerank.methods") {
					r := s.call(ctx, "rerank", map[string]any{"query": "q", "passages": []string{"a", "b"}, "method": m})
					if !r.ok() {
						return fail("method %q: %s", m, r)
					}
				}
				return pass()
			}},
		{ID: "rerank.missing-passages", Name: "rerank without passages is rejected with -32602", Level: L0, Section: "§12, §14.1", Requirement: Must, Needs: []string{"rerank"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "rerank", map[string]any{"query": "q"})
				return check(r.code() == -32602, "want -32602, got %s", r)
			}},
		{ID: "transform.methods", Name: "every advertised transform method returns queries", Level: L2, Section: "§7.8", Requirement: Must, Needs: []string{"transform"},
			run: func(ctx context.Context, s *suite) outcome {
				for _, m := range s.capStrings("transform.methods") {
					r := s.call(ctx, "query/transform", map[string]any{"query": "effects of attention on transformers", "method": m, "n": 2})
					if !r.ok() {
						return fail("method %q: %s", m, r)
					}
					if err := s.validateResult("query/transform", r.Result); err != nil {
						return fail("method %q: %v", m, err)
					}
				}
				return pass()
			}},
		{ID: "transform.unsupported", Name: "an un-advertised transform method is rejected with -32005", Level: L2, Section: "§7.8, §12", Requirement: Must, Needs: []string{"transform"},
			run: func(ctx context.Context, s *suite) outcome {
				m := missing(s.capStrings("transform.methods"), "step-back", "decompose", "multi-query", "hyde", "rewrite")
				if m == "" {
					return skip("every transform method is advertised")
				}
				r := s.call(ctx, "query/transform", map[string]any{"query": "q", "method": m})
				return check(r.code() == -32005, "method %q: want -32005, got %s", m, r)
			}},
		{ID: "graph.ops", Name: "every advertised graph op returns a schema-valid result", Level: L2, Section: "§7.9", Requirement: Must, Needs: []string{"graph"},
			run: func(ctx context.Context, s *suite) outcome {
				for _, op := range s.capStrings("graph.ops") {
					r := s.call(ctx, "graph", map[string]any{"op": op, "query": s.queryOr("paris"), "k": 3})
					if !r.ok() {
						return fail("op %q: %s", op, r)
					}
					if err := s.validateResult("graph", r.Result); err != nil {
						return fail("op %q: %v", op, err)
					}
				}
				return pass()
			}},
		{ID: "graph.op-unsupported", Name: "an un-advertised graph op is rejected with -32005", Level: L2, Section: "§7.9, §12", Requirement: Must, Needs: []string{"graph"},
			run: func(ctx context.Context, s *suite) outcome {
				op := missing(s.capStrings("graph.ops"), "drift", "communities", "neighbors", "global", "local")
				if op == "" {
					return skip("every graph op is advertised")
				}
				r := s.call(ctx, "graph", map[string]any{"op": op, "query": "q"})
				return check(r.code() == -32005, "op %q: want -32005, got %s", op, r)
			}},
		{ID: "catalog.list", Name: "catalog/list returns a schema-valid engines array", Level: L2, Section: "§7.13", Requirement: Must, Needs: []string{"catalog"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "catalog/list", map[string]any{})
				if !r.ok() {
					return fail("%s", r)
				}
				return check(s.validateResult("catalog/list", r.Result) == nil, "%v", s.validateResult("catalog/list", r.Result))
			}},
		{ID: "feedback.accepted", Name: "feedback returns accepted ≤ the number of signals", Level: L2, Section: "§7.16", Requirement: Must, Needs: []string{"feedback"},
			run: func(ctx context.Context, s *suite) outcome {
				r := s.call(ctx, "feedback", map[string]any{"query": "q", "signals": []any{map[string]any{"hitId": "rcp-conformance-hit", "used": true, "reward": 0.5}}})
				if !r.ok() {
					return fail("%s", r)
				}
				var w struct {
					Accepted *int `json:"accepted"`
				}
				_ = json.Unmarshal(r.Result, &w)
				return check(w.Accepted != nil && *w.Accepted >= 0 && *w.Accepted <= 1, "accepted=%v for 1 signal", w.Accepted)
			}},
		{ID: "memory.build-recall", Name: "memory/build returns a memoryId and memory/recall returns clues", Level: L2, Section: "§7.17", Requirement: Must, Needs: []string{"memory"},
			run: func(ctx context.Context, s *suite) outcome {
				b := s.call(ctx, "memory/build", map[string]any{"documents": []any{map[string]any{"text": "rcp conformance memory probe"}}})
				if !b.ok() {
					return fail("memory/build: %s", b)
				}
				if err := s.validateResult("memory/build", b.Result); err != nil {
					return fail("memory/build: %v", err)
				}
				var w struct {
					MemoryID string `json:"memoryId"`
				}
				_ = json.Unmarshal(b.Result, &w)
				r := s.call(ctx, "memory/recall", map[string]any{"query": "probe", "memoryId": w.MemoryID})
				if !r.ok() {
					return fail("memory/recall: %s", r)
				}
				return check(s.validateResult("memory/recall", r.Result) == nil, "memory/recall: %v", s.validateResult("memory/recall", r.Result))
			}},
	}
}

func (s *suite) queryOr(def string) string {
	if s.query != "" {
		return s.query
	}
	return def
}

func closeVec(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*math.Max(1, math.Abs(a[i])) {
			return false
		}
	}
	return true
}

var _ = fmt.Sprintf

// embedTexts returns as many probe texts as fallback has, made of the words
// of the query that returned hits when the run found one: an engine whose
// encoder learns its vocabulary from the corpus may refuse a text with no
// word it knows (-32602), which says nothing about its embed method. Without
// such a query the fallback texts are used.
func (s *suite) embedTexts(fallback ...string) []string {
	words := strings.Fields(s.query)
	if len(words) == 0 {
		return fallback
	}
	out := make([]string, len(fallback))
	for i := range out {
		out[i] = strings.Join(words[:1+i%len(words)], " ") // distinct while the query has the words
	}
	return out
}
