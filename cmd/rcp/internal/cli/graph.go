package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

func init() {
	commands["graph"] = command{"knowledge-graph retrieval: graph local|global|drift|communities|neighbors", runGraph}
	commands["memory"] = command{"retrieval memory: memory build [PATH…] | memory recall QUERY", runMemory}
}

// graphOps are the ops of §7.9, in the order help lists them.
var graphOps = []string{"local", "global", "drift", "communities", "neighbors"}

const graphSynopsis = `graph local|global|drift|communities|neighbors ["QUERY TEXT"] [flags] [target]`

func runGraph(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErr("%s", graphSynopsis)
	}
	op := args[0]
	switch {
	case op == "-h" || op == "--help" || op == "help":
		printSubcommands(env.Stderr, graphSynopsis, "rcp graph OP",
			[2]string{"local QUERY", "units ranked by personalised PageRank from the query's entities (and --seed)"},
			[2]string{"global QUERY", "community summaries ranked for the query, and a combined summary"},
			[2]string{"drift QUERY", "local hits plus follow-up queries drawn from the neighbourhood"},
			[2]string{"communities", "the communities of --level, with their summaries"},
			[2]string{"neighbors QUERY", "nodes within --hops of the query's entities (or --seed), and the edges among them"})
		return nil
	case !slices.Contains(graphOps, op):
		return usageErr("unknown graph op %q (want %s)", op, strings.Join(graphOps, ", "))
	}
	pl, t, err := parseGraph(env, op, args[1:])
	if err != nil {
		return err
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.Capabilities().Graph == nil {
		return errors.New("the server does not advertise graph (rcpd: serve --graph)")
	}
	res, err := c.Graph(ctx, &pl.params)
	if err != nil {
		return withOptionHint(err, c.InitializeResult().Meta)
	}
	if pl.json {
		return writeJSON(env.Stdout, res)
	}
	printGraph(env.Stdout, pl.params, res, colorOn(env, env.Stdout))
	return nil
}

// graphPlan is a parsed `rcp graph OP`.
type graphPlan struct {
	params rcp.GraphParams
	json   bool
}

func parseGraph(env *Env, op string, args []string) (*graphPlan, *target, error) {
	fs := newFlags("graph "+op, env, `["QUERY TEXT"] [flags] [target]`)
	var t target
	t.register(fs)
	k := fs.Int("k", 0, "number of hits, communities or nodes (0: the server's default)")
	hops := fs.Int("hops", 0, "how far to walk from the seeds (local, drift, neighbors; 0: the server's default)")
	level := fs.Int("level", -1, "community level (global, communities; 0 = finest; default: the server's)")
	session := fs.String("session", "", "sessionId for the server's session state")
	jsonOut := fs.Bool("json", false, "print the raw graph result as JSON")
	var seeds multiFlag
	fs.Var(&seeds, "seed", "seed node or unit id (local, drift, neighbors); repeatable")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return nil, nil, err
	}
	set := setFlags(fs)
	pl := &graphPlan{params: rcp.GraphParams{Op: op, Query: strings.Join(pos, " "), SeedIDs: seeds, SessionID: *session}, json: *jsonOut}
	switch {
	case op == "communities" && pl.params.Query != "":
		return nil, nil, usageErr("graph communities takes no query (got %q); use --level and --k", pl.params.Query)
	case op != "communities" && strings.TrimSpace(pl.params.Query) == "" && len(seeds) == 0:
		return nil, nil, usageErr("graph %s needs a query text or --seed", op)
	case set["k"] && *k < 1:
		return nil, nil, usageErr("--k must be ≥ 1")
	case set["hops"] && *hops < 1:
		return nil, nil, usageErr("--hops must be ≥ 1")
	case *level < -1:
		return nil, nil, usageErr("--level must be ≥ 0")
	}
	if *k > 0 {
		pl.params.K = k
	}
	if *hops > 0 {
		pl.params.Hops = hops
	}
	if *level >= 0 {
		pl.params.Level = level
	}
	return pl, &t, nil
}

// printGraph prints what the op returns: hits with the path that reached
// them, follow-ups, summaries with their communities, nodes and edges.
func printGraph(w io.Writer, p rcp.GraphParams, res *rcp.GraphResult, color bool) {
	if p.Op == "local" || p.Op == "drift" {
		printHits(w, p.Query, &rcp.RetrieveResult{Hits: res.Hits, Usage: res.Usage}, color)
		printPaths(w, res.Hits)
		if len(res.Followups) > 0 {
			fmt.Fprintln(w, "followups:")
			for _, f := range res.Followups {
				fmt.Fprintf(w, "  %s\n", f)
			}
		}
		return
	}
	if res.Summary != "" {
		fmt.Fprintf(w, "summary:\n  %s\n", strings.ReplaceAll(res.Summary, "\n", "\n  "))
	}
	for i, c := range res.Communities {
		score := ""
		if c.Score != nil {
			score = fmt.Sprintf("%-8.4f ", *c.Score)
		}
		level := ""
		if c.Level != nil {
			level = fmt.Sprintf(" level %d", *c.Level)
		}
		fmt.Fprintf(w, "%2d. %s[%s]%s\n    %s\n", i+1, score, c.ID.String(), level, c.Summary)
	}
	if p.Op == "neighbors" {
		fmt.Fprintf(w, "%s, %s\n", wording.Plural(len(res.Nodes), "node", "nodes"), wording.Plural(len(res.Edges), "edge", "edges"))
		for _, n := range res.Nodes {
			fmt.Fprintf(w, "  %-8.4f %s\n", deref(n.Score), n.ID.String())
		}
		for _, e := range res.Edges {
			fmt.Fprintf(w, "  %s — %s  %.3f\n", e.Src.String(), e.Dst.String(), deref(e.Weight))
		}
	}
	if len(res.Communities) == 0 && res.Summary == "" && p.Op != "neighbors" {
		fmt.Fprintln(w, "no communities")
	}
	if res.Usage != nil && len(res.Usage.Notes) > 0 {
		fmt.Fprintf(w, "notes: %s\n", strings.Join(res.Usage.Notes, "; "))
	}
}

// printPaths lists the graph path that reached each hit (provenance.path).
func printPaths(w io.Writer, hits []rcp.Hit) {
	header := false
	for i, h := range hits {
		if h.Provenance == nil || len(h.Provenance.Path) == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w, "paths:")
			header = true
		}
		fmt.Fprintf(w, "%2d. %s\n", i+1, strings.Join(h.Provenance.Path, " > "))
	}
}

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

const memorySynopsis = `memory build [PATH…] [flags] [target] | memory recall "QUERY TEXT" [flags] [target]`

func runMemory(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErr("%s", memorySynopsis)
	}
	switch args[0] {
	case "build":
		return runMemoryBuild(ctx, env, args[1:])
	case "recall":
		return runMemoryRecall(ctx, env, args[1:])
	case "-h", "--help", "help":
		printSubcommands(env.Stderr, memorySynopsis, "rcp memory SUBCOMMAND",
			[2]string{"build", "bring the memory over the live index up to date (memoryId \"global\" on rcpd)"},
			[2]string{"build PATH…", "build a memory of files and folders (read like 'rcp index add'); prints its memoryId"},
			[2]string{"recall QUERY", "clues (surrogate queries, seed ids for 'rcp graph local --seed') and draft hits"})
		return nil
	default:
		return usageErr("unknown memory subcommand %q (want build or recall)", args[0])
	}
}

func runMemoryBuild(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("memory build", env, "[PATH…] [flags] [target]")
	var t target
	t.register(fs)
	id := fs.String("memory", "", "memoryId to extend (default: a new memory; without PATH the live index's)")
	scope := fs.String("scope", "", "global | session (as advertised; default: the server's)")
	jsonOut := fs.Bool("json", false, "print the raw memory/build result as JSON")
	paths, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	p := &rcp.MemoryBuildParams{MemoryID: *id, Scope: *scope}
	if len(paths) > 0 {
		if p.Documents, err = readDocuments(ctx, env, paths); err != nil {
			return err
		}
	}
	c, err := connectMemory(ctx, env, &t)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.MemoryBuild(ctx, p)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, res)
	}
	tokens := ""
	if res.Tokens != nil {
		tokens = " (" + wording.Plural(*res.Tokens, "token", "tokens") + ")"
	}
	fmt.Fprintf(env.Stdout, "memory %s built from %s%s\n", res.MemoryID, describeSource(len(p.Documents)), tokens)
	return nil
}

func describeSource(docs int) string {
	if docs == 0 {
		return "the live index"
	}
	return wording.Plural(docs, "document", "documents")
}

// readDocuments reads files and folders as 'rcp index add' does; a path
// that yields no document is an error (the memory would silently miss it).
func readDocuments(ctx context.Context, env *Env, paths []string) ([]rcp.Document, error) {
	files, skipped, err := ingest.Collect(paths, ingest.Options{})
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		fmt.Fprintf(env.Stderr, "skipped %s: %s\n", s.Path, s.Reason)
	}
	var docs []rcp.Document
	for _, f := range files {
		ds, err := ingest.ReadFile(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		docs = append(docs, ds...)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no documents in %s", strings.Join(paths, ", "))
	}
	return docs, nil
}

func runMemoryRecall(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("memory recall", env, `"QUERY TEXT" [flags] [target]`)
	var t target
	t.register(fs)
	id := fs.String("memory", "", "memoryId to recall from (default: the memory over the live index)")
	session := fs.String("session", "", "sessionId of the trajectory")
	n := fs.Int("n", 0, "clues wanted (0: the server's default)")
	jsonOut := fs.Bool("json", false, "print the raw memory/recall result as JSON")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	query := strings.Join(pos, " ")
	if strings.TrimSpace(query) == "" {
		return usageErr("a query text is required")
	}
	if setFlags(fs)["n"] && *n < 1 {
		return usageErr("--n must be ≥ 1")
	}
	p := &rcp.MemoryRecallParams{Query: query, MemoryID: *id, SessionID: *session}
	if *n > 0 {
		p.N = n
	}
	c, err := connectMemory(ctx, env, &t)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.MemoryRecall(ctx, p)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, res)
	}
	printClues(env.Stdout, query, res, colorOn(env, env.Stdout))
	return nil
}

func printClues(w io.Writer, query string, res *rcp.MemoryRecallResult, color bool) {
	if len(res.Clues) == 0 {
		fmt.Fprintln(w, "no clues")
	}
	for i, c := range res.Clues {
		fmt.Fprintf(w, "%2d. %-8.4f %s\n", i+1, deref(c.Weight), c.Query)
		if len(c.SeedIDs) > 0 {
			fmt.Fprintf(w, "    seeds: %s\n", strings.Join(c.SeedIDs, ", "))
		}
	}
	if len(res.Hits) > 0 {
		fmt.Fprintln(w, "draft hits:")
		printHits(w, query, &rcp.RetrieveResult{Hits: res.Hits}, color)
	}
}

// connectMemory connects to the target and checks it serves memory.
func connectMemory(ctx context.Context, env *Env, t *target) (*rcp.Client, error) {
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return nil, err
	}
	if c.Capabilities().Memory == nil {
		c.Close()
		return nil, errors.New("the server does not advertise memory (rcpd: serve --graph)")
	}
	return c, nil
}
