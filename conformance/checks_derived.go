package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ---------------------------------------------------------------- lifecycle of writes and derived state

// Checks of what a client relies on across writes (issue 31 of rcpgo):
// an acknowledged write is found in every advertised mode, in the writing
// session and in a new one; every advertised mode and unit pages; pages
// stay one list across writes when snapshots are advertised; and an index
// rebuilding after a write never answers an empty success where it
// answered before (-32010 while it cannot answer, §13.2, §16.2). The
// writes run only with -allow-writes (Needs index.writable); every probe
// document is deleted afterwards.

func derivedChecks() []Check {
	w := []string{"index.writable", "retrieve"}
	return []Check{
		{ID: "derived.read-your-writes", Name: "an acknowledged index/add is found in every advertised mode, in the same session and a new one", Level: L2, Section: "§7.10, §13.2", Requirement: Should, Needs: w,
			run: func(ctx context.Context, s *suite) outcome { return s.readYourWrites(ctx) }},
		{ID: "derived.pages-every-mode", Name: "every advertised mode and unit pages: each cursor is accepted, no hit twice", Level: L2, Section: "§10, §6.1", Requirement: Must, Needs: []string{"pagination", "retrieve"},
			run: func(ctx context.Context, s *suite) outcome { return s.pagesEveryMode(ctx) }},
		{ID: "derived.pages-under-writes", Name: "with snapshots, the pages of every mode stay one list across a write", Level: L2, Section: "§10, §7.7.1", Requirement: Should,
			Needs: []string{"pagination", "retrieve.snapshots", "index.writable"},
			run:   func(ctx context.Context, s *suite) outcome { return s.pagesUnderWrites(ctx) }},
		{ID: "derived.no-empty-while-building", Name: "right after a write, graph ops and units never answer an empty success where they answered before", Level: L2, Section: "§13.2, §16.2", Requirement: Should, Needs: []string{"index.writable"},
			run: func(ctx context.Context, s *suite) outcome { return s.noEmptyWhileBuilding(ctx) }},
	}
}

// modesOf is the modes to probe: the advertised ones, or the server's
// default when it advertises none.
func modesOf(modes []string) []any {
	if len(modes) == 0 {
		return []any{nil}
	}
	out := make([]any, len(modes))
	for i, m := range modes {
		out[i] = m
	}
	return out
}

// twinDoc is a new document and a query that ranks it at the top in every
// mode: the text of the probe query's best hit and a token of its own, and
// that text as the query (a dense encoder embeds both alike; the token
// singles it out in sparse recall).
func (s *suite) twinDoc(ctx context.Context, tag string) (doc map[string]any, query string, o *outcome) {
	q := s.probeQuery(ctx)
	v, _, oo := s.retrieve(ctx, map[string]any{"query": q, "k": 1, "includeText": true})
	if oo != nil {
		return nil, "", oo
	}
	if len(v.hits) == 0 {
		x := skip("the probe query %q finds nothing to copy", q)
		return nil, "", &x
	}
	var text string
	_ = json.Unmarshal(v.hits[0].raw["text"], &text)
	if text == "" {
		text = q
	}
	id := s.uniq(tag)
	twin := text + " " + strings.ReplaceAll(id, "-", "")
	return map[string]any{"id": id, "text": twin}, twin, nil
}

func (s *suite) readYourWrites(ctx context.Context) outcome {
	doc, q, o := s.twinDoc(ctx, "ryw")
	if o != nil {
		return *o
	}
	id := doc["id"].(string)
	if _, r := s.addDocs(ctx, []map[string]any{doc}, nil); !r.ok() {
		return fail("index/add: %s", r)
	}
	find := func(call func(map[string]any) *response, modes []any, where string) string {
		for _, m := range modes {
			p := map[string]any{"query": q, "k": 10}
			if m != nil {
				p["mode"] = m
			}
			r := call(p)
			if !r.ok() {
				return fmt.Sprintf("%s, mode %v: %s", where, m, r)
			}
			v, err := decodeRetrieve(r.Result)
			if err != nil {
				return fmt.Sprintf("%s, mode %v: %v", where, m, err)
			}
			if !slices.Contains(v.ids(), "s:"+id) {
				return fmt.Sprintf("%s, mode %v: the document written just before is not among the top 10 (%v)", where, m, v.ids())
			}
		}
		return ""
	}
	if why := find(func(p map[string]any) *response { return s.call(ctx, "retrieve", p) }, modesOf(s.capStrings("retrieve.modes")), "same session"); why != "" {
		return fail("%s", why)
	}
	return s.withFresh(ctx, func(sess *session) outcome {
		r := s.freshCall(ctx, sess, "initialize", s.initParams())
		if o := s.httpGlobalSession(r); o != nil {
			return *o
		}
		if !r.ok() {
			return fail("initialize of a new session: %s", r)
		}
		var ir initResult
		_ = json.Unmarshal(r.Result, &ir)
		var caps struct {
			Retrieve struct {
				Modes []string `json:"modes"`
			} `json:"retrieve"`
		}
		_ = json.Unmarshal(ir.Capabilities, &caps)
		why := find(func(p map[string]any) *response { return s.freshCall(ctx, sess, "retrieve", p) }, modesOf(caps.Retrieve.Modes), "new session")
		return check(why == "", "%s", why)
	})
}

// pageList follows nextCursor from p with pages of k, at most 20 pages;
// it returns the hit ids in order, the first page's indexVersion and
// between, when set, runs after each page.
func (s *suite) pageList(ctx context.Context, p map[string]any, between func()) (ids []string, version string, why string) {
	const k = 2
	p["k"] = k
	for page := 0; page < 20; page++ {
		r := s.call(ctx, "retrieve", p)
		if !r.ok() {
			return ids, version, fmt.Sprintf("page %d: %s", page, r)
		}
		v, err := decodeRetrieve(r.Result)
		if err != nil {
			return ids, version, fmt.Sprintf("page %d: %v", page, err)
		}
		if page == 0 {
			version = v.indexVersion
		}
		ids = append(ids, v.ids()...)
		if v.nextCursor == "" {
			return ids, version, ""
		}
		p["cursor"] = v.nextCursor
		if between != nil {
			between()
		}
	}
	return ids, version, ""
}

// listParams are the request of one mode and unit (nil: the default).
func (s *suite) listParams(ctx context.Context, mode, unit any) map[string]any {
	p := map[string]any{"query": s.probeQuery(ctx)}
	if mode != nil {
		p["mode"] = mode
	}
	if unit != nil {
		p["unit"] = unit
	}
	return p
}

func (s *suite) pagesEveryMode(ctx context.Context) outcome {
	type combo struct{ mode, unit any }
	var combos []combo
	for _, m := range modesOf(s.capStrings("retrieve.modes")) {
		combos = append(combos, combo{m, nil})
	}
	for _, u := range s.capStrings("retrieve.units") {
		combos = append(combos, combo{nil, u})
	}
	paged := 0
	for _, c := range combos {
		ids, _, why := s.pageList(ctx, s.listParams(ctx, c.mode, c.unit), nil)
		if why != "" {
			return fail("mode %v, unit %v: %s", c.mode, c.unit, why)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				return fail("mode %v, unit %v: %s on two pages (%v)", c.mode, c.unit, id, ids)
			}
			seen[id] = true
		}
		if len(ids) > 2 {
			paged++
		}
	}
	if paged == 0 {
		return skip("no mode or unit yields more than one page for the probe query")
	}
	return passf("%d of %d modes and units paged", paged, len(combos))
}

func (s *suite) pagesUnderWrites(ctx context.Context) outcome {
	doc, _, o := s.twinDoc(ctx, "pages")
	if o != nil {
		return *o
	}
	checked := 0
	for _, m := range modesOf(s.capStrings("retrieve.modes")) {
		ref, _, why := s.pageList(ctx, s.listParams(ctx, m, nil), nil)
		if why != "" {
			return fail("mode %v: %s", m, why)
		}
		if len(ref) <= 2 {
			continue
		}
		wrote := false
		got, _, why := s.pageList(ctx, s.listParams(ctx, m, nil), func() {
			if !wrote {
				d := map[string]any{"id": doc["id"].(string) + fmt.Sprint(m), "text": doc["text"]}
				_, r := s.addDocs(ctx, []map[string]any{d}, nil)
				wrote = r.ok()
			}
		})
		if why != "" {
			return fail("mode %v, after a write between pages: %s", m, why)
		}
		if !slices.Equal(got, ref) {
			return fail("mode %v: the pages across a write %v differ from the list before it %v", m, got, ref)
		}
		checked++
	}
	if checked == 0 {
		return skip("no mode yields more than one page for the probe query")
	}
	return pass()
}

// probes are the graph ops and units the server advertises, as requests of
// the probe query.
func (s *suite) derivedProbes(ctx context.Context) map[string][2]any {
	q := s.probeQuery(ctx)
	out := map[string][2]any{}
	for _, op := range s.capStrings("graph.ops") {
		p := map[string]any{"op": op, "k": 5}
		if op != "communities" {
			p["query"] = q
		}
		out["graph "+op] = [2]any{"graph", p}
	}
	for _, u := range s.capStrings("retrieve.units") {
		if slices.Contains(graphUnits, u) {
			out["unit "+u] = [2]any{"retrieve", map[string]any{"query": q, "k": 5, "unit": u}}
		}
	}
	return out
}

// answered says whether a result carries something: a non-empty list of
// hits, communities, nodes or clues.
func answered(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, k := range []string{"hits", "communities", "nodes", "clues"} {
		var l []json.RawMessage
		if json.Unmarshal(m[k], &l) == nil && len(l) > 0 {
			return true
		}
	}
	return false
}

func (s *suite) noEmptyWhileBuilding(ctx context.Context) outcome {
	probes := s.derivedProbes(ctx)
	before := map[string]bool{}
	for name, pr := range probes {
		if r := s.call(ctx, pr[0].(string), pr[1]); r.ok() && answered(r.Result) {
			before[name] = true
		}
	}
	if len(before) == 0 {
		return skip("no graph op or graph unit answers the probe query")
	}
	doc, _, o := s.twinDoc(ctx, "rebuild")
	if o != nil {
		return *o
	}
	var docs []map[string]any
	for i := range 30 {
		docs = append(docs, map[string]any{"id": fmt.Sprintf("%s-%d", doc["id"], i), "text": doc["text"]})
	}
	if _, r := s.addDocs(ctx, docs, nil); !r.ok() {
		return fail("index/add: %s", r)
	}
	for name := range before {
		pr := probes[name]
		r := s.call(ctx, pr[0].(string), pr[1])
		switch {
		case r.code() == -32010:
			continue // cannot answer yet, and says so (§13.2)
		case !r.ok():
			return fail("%s right after a write: %s", name, r)
		case !answered(r.Result):
			return fail("%s answered before the write and is an empty success right after it: %s", name, truncate(string(r.Result), 200))
		}
	}
	return passf("%d graph ops and units answered right after a write", len(before))
}
