package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

const indexSynopsis = `index add PATH… [--prune] | index sync DIR… | index list | index delete ID… | index delete --source PATH… | index status`

func runIndex(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErr("%s", indexSynopsis)
	}
	switch args[0] {
	case "add":
		return runIndexAdd(ctx, env, "index add", args[1:], false)
	case "sync":
		return runIndexAdd(ctx, env, "index sync", args[1:], true)
	case "list", "ls":
		return runIndexList(ctx, env, args[1:])
	case "delete", "rm":
		return runIndexDelete(ctx, env, args[1:])
	case "status":
		return runIndexStatus(ctx, env, args[1:])
	case "-h", "--help", "help":
		printSubcommands(env.Stderr, indexSynopsis, "rcp index SUBCOMMAND",
			[2]string{"add PATH…", "index files and folders; an edited file replaces its document, an unchanged one is skipped"},
			[2]string{"sync DIR…", "add, then delete the documents of files no longer in DIR (same as add --prune)"},
			[2]string{"list", "list the stored documents (id = source, chunks, size, title), a page at a time"},
			[2]string{"delete ID…", "delete documents by id; --source PATH deletes a file's document (or a folder's)"},
			[2]string{"status", "whether the index takes writes (and why not), its documents, version, limits and derived structures"})
		return nil
	default:
		return usageErr("unknown index subcommand %q (want add, sync, list, delete or status)", args[0])
	}
}

func runIndexAdd(ctx context.Context, env *Env, name string, args []string, sync bool) error {
	fs := newFlags(name, env, "PATH… [flags] [target]")
	var t target
	t.register(fs)
	batch := fs.Int("batch", 256, "documents per index/add request")
	chunk := fs.Bool("chunk", false, "ask the server to chunk documents (needs index.chunking)")
	contextual := fs.Bool("contextual", false, "ask for contextual chunk indexing (needs index.contextual)")
	prune := fs.Bool("prune", sync, "delete the documents of files no longer found under the given folders")
	code := fs.Bool("code", false, "also index source code (.go, .py, .ts, …) as plain text")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	wait := fs.Bool("wait", false, "return once the server has derived everything from the new documents (dense index, graph, tree: a progress bar on stderr meanwhile)")
	waitFor := fs.Duration("wait-timeout", time.Hour, "--wait: give up after this long")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("at least one PATH is required")
	}
	if *batch < 1 {
		return usageErr("--batch must be ≥ 1")
	}
	plan := addPlan{paths: pos, opt: ingest.Options{Code: *code}, batch: *batch, chunk: *chunk, contextual: *contextual,
		prune: *prune, verbose: t.verbose, json: *jsonOut, wait: *wait, waitFor: *waitFor}
	return plan.run(ctx, env, &t)
}

// prune deletes the stored file documents under the folders among paths
// whose ids are not in present.
func prune(ctx context.Context, c *rcp.Client, paths []string, present map[string]bool) (int, error) {
	var stale []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			continue
		}
		root, err := ingest.SourceID(p)
		if err != nil {
			return 0, err
		}
		err = listAll(ctx, c, strings.TrimSuffix(root, "/")+"/", func(d rcp.DocumentRef) {
			if !present[d.ID] {
				stale = append(stale, d.ID)
			}
		})
		if err != nil {
			return 0, err
		}
	}
	return deleteIDs(ctx, c, stale)
}

func deleteIDs(ctx context.Context, c *rcp.Client, ids []string) (int, error) {
	n := 0
	for chunk := range slices.Chunk(ids, 500) {
		res, err := c.IndexDelete(ctx, &rcp.IndexDeleteParams{IDs: chunk})
		if err != nil {
			return n, err
		}
		n += res.Deleted
	}
	return n, nil
}

// listAll pages through x-rcpgo/list under prefix.
func listAll(ctx context.Context, c *rcp.Client, prefix string, fn func(rcp.DocumentRef)) error {
	cursor := ""
	for {
		var res rcp.ListDocumentsResult
		if err := c.Call(ctx, rcp.MethodRCPGoList, rcp.ListDocumentsParams{Prefix: prefix, Cursor: cursor, Limit: 1000}, &res); err != nil {
			return fmt.Errorf("listing documents: %w", err)
		}
		for _, d := range res.Documents {
			fn(d)
		}
		if res.NextCursor == "" {
			return nil
		}
		cursor = res.NextCursor
	}
}

// skipSummary counts the skipped files by reason, most frequent first.
func skipSummary(skipped []ingest.Skip) string {
	counts := map[string]int{}
	for _, s := range skipped {
		counts[s.Reason]++
	}
	reasons := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return strings.Join(parts, "; ")
}

func runIndexList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("index list", env, "[--source PATH | --prefix P] [--limit N] [--cursor C | --all] [flags] [target]")
	var t target
	t.register(fs)
	prefix := fs.String("prefix", "", "only ids starting with this prefix")
	source := fs.String("source", "", "only the documents of this file or folder")
	limit := fs.Int("limit", 50, "documents per page")
	cursor := fs.String("cursor", "", "continue a listing (the cursor a previous page printed)")
	all := fs.Bool("all", false, "list every page")
	jsonOut := fs.Bool("json", false, "print the page as JSON (documents, nextCursor)")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageErr("unexpected arguments %q", pos)
	case *limit < 1:
		return usageErr("--limit must be ≥ 1")
	case *prefix != "" && *source != "":
		return usageErr("use --prefix or --source, not both")
	}
	if *source != "" {
		if *prefix, err = ingest.SourceID(*source); err != nil {
			return err
		}
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if vendor, _ := rcp.ReadRCPGoCap(c.Capabilities()); !vendor.Has(rcp.MethodRCPGoList) {
		return fmt.Errorf("the server does not list its documents (no %s capability)", rcp.MethodRCPGoList)
	}
	page := rcp.ListDocumentsResult{Documents: []rcp.DocumentRef{}}
	next := *cursor
	for {
		var res rcp.ListDocumentsResult
		if err := c.Call(ctx, rcp.MethodRCPGoList, rcp.ListDocumentsParams{Prefix: *prefix, Cursor: next, Limit: *limit}, &res); err != nil {
			return err
		}
		page.Documents = append(page.Documents, res.Documents...)
		page.NextCursor, next = res.NextCursor, res.NextCursor
		if !*all || next == "" {
			break
		}
	}
	if *jsonOut {
		return writeJSON(env.Stdout, page)
	}
	printDocuments(env.Stdout, page)
	return nil
}

func printDocuments(w io.Writer, page rcp.ListDocumentsResult) {
	if len(page.Documents) == 0 {
		fmt.Fprintln(w, "no documents")
	} else {
		fmt.Fprintf(w, "%-6s %9s  %-30s %s\n", "CHUNKS", "SIZE", "TITLE", "ID (SOURCE)")
	}
	for _, d := range page.Documents {
		chunks := "-"
		if d.Chunks > 0 {
			chunks = fmt.Sprint(d.Chunks)
		}
		title := d.Title
		if len([]rune(title)) > 30 {
			title = string([]rune(title)[:29]) + "…"
		}
		fmt.Fprintf(w, "%-6s %9s  %-30s %s\n", chunks, humanBytes(d.Size), title, d.ID)
	}
	if page.NextCursor != "" {
		fmt.Fprintf(w, "more: rcp index list --cursor %s (or --all)\n", page.NextCursor)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func runIndexDelete(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("index delete", env, "ID… | --source PATH… [flags] [target]")
	var t target
	t.register(fs)
	var sources multiFlag
	fs.Var(&sources, "source", "delete the document of this file, or every document under this folder; repeatable")
	jsonOut := fs.Bool("json", false, "print {deleted, requested} as JSON")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 && len(sources) == 0 {
		return usageErr("give document ids, or --source PATH")
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	ids := slices.Clone(pos)
	for _, s := range sources {
		more, err := sourceIDs(ctx, c, s)
		if err != nil {
			return err
		}
		ids = append(ids, more...)
	}
	n, err := deleteIDs(ctx, c, ids)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, map[string]int{"deleted": n, "requested": len(ids)})
	}
	fmt.Fprintf(env.Stdout, "deleted %d of %d\n", n, len(ids))
	if n < len(ids) {
		for _, id := range pos {
			if _, err := os.Stat(id); err == nil {
				fmt.Fprintf(env.Stderr, "hint: %q is a path; a file's document is deleted with --source %s\n", id, id)
			}
		}
	}
	return nil
}

// sourceIDs returns the ids of the documents read from path: its own id and,
// when the server lists documents, every id under it (a folder, or a file
// since deleted from disk that was one).
func sourceIDs(ctx context.Context, c *rcp.Client, path string) ([]string, error) {
	id, err := ingest.SourceID(path)
	if err != nil {
		return nil, err
	}
	ids := []string{id}
	if vendor, _ := rcp.ReadRCPGoCap(c.Capabilities()); vendor.Has(rcp.MethodRCPGoList) {
		err = listAll(ctx, c, strings.TrimSuffix(id, "/")+"/", func(d rcp.DocumentRef) { ids = append(ids, d.ID) })
	}
	return ids, err
}
