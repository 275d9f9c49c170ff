package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/term"

	"github.com/rcpgo/rcpgo/internal/didyoumean"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

func runQuery(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("query", env, `"QUERY TEXT" [flags] [target]`)
	var t target
	t.register(fs)
	k := fs.Int("k", 10, "number of hits")
	mode := fs.String("mode", "", "dense | sparse | hybrid (default: the server's)")
	unit := fs.String("unit", "", "a unit of retrieve.units (chunk, document, page, tree-node, ...; rcp info lists them)")
	level := fs.Int("level", -1, "abstraction level of a hierarchical unit (tree-node, community; 0 = leaves/finest; default: the server's)")
	candK := fs.Int("candidate-k", 0, "recall-stage candidates (0: server default)")
	rerank := fs.String("rerank", "", "rerank method inside retrieve (cross-encoder | colbert | llm)")
	mmr := fs.Float64("mmr", -1, "MMR lambda in [0,1] (default off)")
	budget := fs.Int("token-budget", 0, "pack hits up to this many tokens")
	minScore := fs.Float64("min-score", 0, "drop hits scoring below this (server scale)")
	fusion := fs.String("fusion", "", "fusion method for hybrid (rrf | weighted | convex)")
	rewrite := fs.String("rewrite", "", "rewrite the query inside the server first (rewrite | multi-query | decompose | step-back)")
	session := fs.String("session", "", "sessionId: hits returned earlier in this session are skipped (servers with session.dedup)")
	jsonOut := fs.Bool("json", false, "print the raw retrieve result as JSON")
	var filters multiFlag
	fs.Var(&filters, "filter", "metadata filter KEY=VALUE (also != >= <= > <); repeatable, AND-ed")
	filterJSON := fs.String("filter-json", "", "a raw §8 filter tree (JSON)")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	query := strings.Join(pos, " ")
	if strings.TrimSpace(query) == "" {
		return usageErr("a query text is required")
	}
	if *k < 1 {
		return usageErr("--k must be ≥ 1")
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()

	p := &rcp.RetrieveParams{Query: rcp.TextQuery(query), K: *k, Mode: *mode, Unit: *unit}
	if *candK > 0 {
		p.CandidateK = candK
	}
	if *level >= 0 {
		p.Level = level
	}
	if *rerank != "" {
		p.Rerank = &rcp.RerankOptions{Method: *rerank}
	}
	if *mmr >= 0 {
		p.MMR = &rcp.MMROptions{Lambda: mmr}
	}
	if *budget > 0 {
		p.TokenBudget = budget
	}
	if fs.Lookup("min-score").Value.String() != "0" {
		p.MinScore = minScore
	}
	if *fusion != "" {
		p.Fusion = &rcp.FusionOptions{Method: *fusion}
	}
	if *rewrite != "" {
		rw := rcp.Rewrite(*rewrite)
		p.Rewrite = &rw
	}
	p.SessionID = *session
	switch {
	case *filterJSON != "" && len(filters) > 0:
		return usageErr("use --filter or --filter-json, not both")
	case *filterJSON != "":
		if !json.Valid([]byte(*filterJSON)) {
			return usageErr("--filter-json is not valid JSON")
		}
		p.Filter = json.RawMessage(*filterJSON)
	case len(filters) > 0:
		f, err := buildFilter(filters, c.Capabilities().Filter.FieldTypes())
		if err != nil {
			return err
		}
		p.Filter = f
	}
	if maxK := c.Capabilities().Retrieve.MaxK; maxK > 0 && *k > maxK {
		fmt.Fprintf(env.Stderr, "note: --k %d is above the server's maxK; asking for %d\n", *k, maxK)
		p.K = maxK
	}
	res, err := c.Retrieve(ctx, p)
	if err != nil {
		return withOptionHint(err, c.InitializeResult().Meta)
	}
	if *jsonOut {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printHits(env.Stdout, query, res, colorOn(env, env.Stdout))
	return nil
}

// withOptionHint adds to a -32005 the way to enable the option on rcpd;
// meta is the session's initialize _meta, whose readiness names the real
// reason when dense is configured but not built yet.
func withOptionHint(err error, meta rcp.Meta) error {
	e, ok := rcp.AsError(err)
	if !ok || e == nil || e.Code != rcp.CodeOptionUnsupported || e.Data == nil {
		return err
	}
	hints := map[string]string{
		"filter": "rcpd infers filter fields from the metadata of the documents it stores (keys with one type of value; new sessions see new ones), or declare them: rcpd serve --field NAME=TYPE (keyword, text, int, float, bool, date); 'rcp info' shows what the server advertises",
		"mode":   denseHint(meta),
		"unit":   "'rcp info' lists the units the server advertises (retrieve.units)",
		"mmr":    "'rcp info' shows whether the server advertises retrieve.mmr",
	}
	if h, ok := hints[e.Data.Option]; ok {
		return fmt.Errorf("%w\nhint: %s", err, h)
	}
	return err
}

// denseHint says why dense and hybrid are not offered: the server's
// readiness of its dense index when it reports one (waiting: why;
// building: how far), else that it needs an encoder.
func denseHint(meta rcp.Meta) string {
	r, _ := rcp.ReadReadiness(meta)
	s, ok := r["dense"]
	switch {
	case ok && s.State == rcp.StateWaiting:
		return "dense and hybrid are not available yet: " + s.Detail
	case ok && s.State == rcp.StateBuilding:
		return "the dense index is being built" + progressNote(s) + "; a new session is offered dense and hybrid once it is ready ('rcp index status --wait')"
	case ok:
		return "the dense index is " + s.State + "; 'rcp info' lists the modes this session was offered (a new session sees the current ones)"
	}
	return "'rcp info' lists the modes the server advertises (dense needs an encoder: rcpd serve --dense lsa|openai|onnx)"
}

// progressNote is " (phase: done/total unit)" of a build, or "".
func progressNote(s rcp.DerivedState) string {
	switch {
	case s.Phase != "" && s.Total > 0:
		return fmt.Sprintf(" (%s: %d/%d %s)", s.Phase, s.Done, s.Total, s.Unit)
	case s.Phase != "":
		return " (" + s.Phase + ")"
	}
	return ""
}

// buildFilter turns KEY=VALUE expressions into a §8 "and" tree, typing each
// value by the field type the server advertised.
func buildFilter(exprs []string, types map[string]string) (json.RawMessage, error) {
	ops := []struct{ sym, op string }{{"!=", "ne"}, {">=", "gte"}, {"<=", "lte"}, {"==", "eq"}, {"=", "eq"}, {">", "gt"}, {"<", "lt"}}
	var leaves []map[string]any
	for _, e := range exprs {
		var leaf map[string]any
		for _, o := range ops {
			if i := strings.Index(e, o.sym); i > 0 {
				field, raw := strings.TrimSpace(e[:i]), strings.TrimSpace(e[i+len(o.sym):])
				if err := knownField(field, types); err != nil {
					return nil, usageErr("--filter %q: %v", e, err)
				}
				leaf = map[string]any{"field": field, "op": o.op, "value": typedValue(raw, types[field])}
				break
			}
		}
		if leaf == nil {
			return nil, usageErr("--filter %q: want KEY=VALUE (or != >= <= > <)", e)
		}
		leaves = append(leaves, leaf)
	}
	var tree any = leaves[0]
	if len(leaves) > 1 {
		tree = map[string]any{"and": leaves}
	}
	return json.Marshal(tree)
}

// knownField checks a filter field against the advertised ones (§8: the
// server refuses others), suggesting the one a typo was meant to be. A
// server that advertises no fields is left to answer for itself.
func knownField(field string, types map[string]string) error {
	if len(types) == 0 {
		return nil
	}
	if _, ok := types[field]; ok {
		return nil
	}
	if near := didyoumean.Nearest(field, maps.Keys(types)); near != "" {
		return fmt.Errorf("the server has no filter field %q; did you mean %q?", field, near)
	}
	return fmt.Errorf("the server has no filter field %q (it advertises %s)", field, strings.Join(slices.Sorted(maps.Keys(types)), ", "))
}

func typedValue(raw, typ string) any {
	switch typ {
	case "int":
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
	case "float":
		if f, err := strconv.ParseFloat(raw, 64); err == nil {
			return f
		}
	case "bool":
		if b, err := strconv.ParseBool(raw); err == nil {
			return b
		}
	case "date":
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
	}
	return raw
}

func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printHits renders rank, score, title, a highlighted snippet and the citation.
func printHits(w io.Writer, query string, res *rcp.RetrieveResult, color bool) {
	if len(res.Hits) == 0 {
		fmt.Fprintln(w, wording.NoHits)
	}
	if res.RewrittenQuery != "" {
		fmt.Fprintf(w, "rewritten: %s\n", res.RewrittenQuery)
		query += " " + res.RewrittenQuery // highlight the rewritten words too
	}
	terms := queryTerms(query)
	bold, dim, reset := "", "", ""
	if color {
		bold, dim, reset = "\x1b[1m", "\x1b[2m", "\x1b[0m"
	}
	for i, h := range res.Hits {
		title := ""
		if h.Citation != nil && h.Citation.Title != "" {
			title = h.Citation.Title
		} else if s, ok := h.Meta["title"].(string); ok {
			title = s
		}
		fmt.Fprintf(w, "%s%2d.%s %-8.4f %s%s%s  %s[%s]%s\n", bold, i+1, reset, h.Score, bold, title, reset, dim, h.ID.String(), reset)
		if text := h.TextOf(); text != "" {
			fmt.Fprintf(w, "    %s\n", highlight(snippet(text, terms, 220), terms, bold, reset))
		}
		if c := h.Citation; c != nil {
			loc := c.URI
			if loc == "" {
				loc = c.Source
			}
			if c.Start != nil && c.End != nil {
				loc += fmt.Sprintf(" @%d-%d", *c.Start, *c.End)
			}
			if c.Page != nil {
				loc += fmt.Sprintf(" p.%d", *c.Page)
			}
			if loc != "" {
				fmt.Fprintf(w, "    %s↳ %s%s\n", dim, loc, reset)
			}
		}
		if h.Trust != nil && h.Trust.InjectionSuspected != nil && *h.Trust.InjectionSuspected {
			fmt.Fprintf(w, "    %s! possible prompt injection in this passage%s\n", bold, reset)
		}
	}
	if res.Usage != nil && len(res.Usage.Notes) > 0 {
		fmt.Fprintf(w, "%snotes: %s%s\n", dim, strings.Join(res.Usage.Notes, "; "), reset)
	}
}

// queryTerms lower-cases the query's words of two or more letters.
func queryTerms(q string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(f)) >= 2 {
			out = append(out, f)
		}
	}
	return out
}

// matches reports whether word (lower-cased) looks like a form of a query
// term: equal, or sharing a prefix of at least five letters (a cheap stand-in
// for the server's stemmer, good enough to highlight "indexes" for "index").
func matches(word string, terms []string) bool {
	for _, t := range terms {
		if word == t {
			return true
		}
		n := min(len(t), 5)
		if len(t) >= 4 && len(word) >= n && word[:n] == t[:n] {
			return true
		}
	}
	return false
}

// snippet returns about width bytes of text around the densest run of terms.
func snippet(text string, terms []string, width int) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= width {
		return text
	}
	words := strings.Fields(text)
	best, bestAt, offs := -1, 0, make([]int, len(words))
	pos := 0
	for i, w := range words {
		offs[i] = strings.Index(text[pos:], w) + pos
		pos = offs[i] + len(w)
	}
	for i := range words {
		score := 0
		for j := i; j < len(words) && offs[j]-offs[i] < width; j++ {
			if matches(strings.ToLower(strings.Trim(words[j], ".,;:!?()\"'")), terms) {
				score++
			}
		}
		if score > best {
			best, bestAt = score, i
		}
	}
	start := offs[bestAt]
	end := min(len(text), start+width)
	for end < len(text) && text[end] != ' ' {
		end++
	}
	out := text[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}

// highlight marks matching words with on/off (ANSI bold on a terminal,
// ** otherwise).
func highlight(s string, terms []string, on, off string) string {
	if on == "" {
		on, off = "**", "**"
	}
	words := strings.Split(s, " ")
	for i, w := range words {
		core := strings.Trim(w, ".,;:!?()\"'…")
		if core != "" && matches(strings.ToLower(core), terms) {
			words[i] = strings.Replace(w, core, on+core+off, 1)
		}
	}
	return strings.Join(words, " ")
}
