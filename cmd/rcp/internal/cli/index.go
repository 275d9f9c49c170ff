package cli

import (
	"context"
	"fmt"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/internal/progress"
	"github.com/rcpgo/rcpgo/rcp"
)

func runIndex(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErr("index add PATH… | index delete ID…")
	}
	switch args[0] {
	case "add":
		return runIndexAdd(ctx, env, args[1:])
	case "delete":
		return runIndexDelete(ctx, env, args[1:])
	default:
		return usageErr("unknown index subcommand %q (want add or delete)", args[0])
	}
}

func runIndexAdd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("index add", env, "PATH… [flags] [target]")
	var t target
	t.register(fs)
	batch := fs.Int("batch", 256, "documents per index/add request")
	chunk := fs.Bool("chunk", false, "ask the server to chunk documents (needs index.chunking)")
	contextual := fs.Bool("contextual", false, "ask for contextual chunk indexing (needs index.contextual)")
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
	files, err := ingest.Collect(pos)
	if err != nil {
		return err
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if !c.Capabilities().Allows(rcp.MethodIndexAdd) {
		return fmt.Errorf("the server does not advertise a writable index")
	}
	// Read every file first so the bar knows the document total.
	var docs []rcp.Document
	skipped := 0
	for _, f := range files {
		ds, err := ingest.ReadFile(ctx, f)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skip %s: %v\n", f, err)
			skipped++
			continue
		}
		docs = append(docs, ds...)
	}
	bar := progress.New(env.Stderr, "indexing", int64(len(docs)), progress.WithUnit("docs"))
	chunks := 0
	for start := 0; start < len(docs); start += *batch {
		end := min(start+*batch, len(docs))
		p := &rcp.IndexAddParams{Documents: docs[start:end]}
		if *chunk {
			p.Chunk = chunk
		}
		if *contextual {
			p.Contextual = contextual
		}
		res, err := c.IndexAdd(ctx, p)
		if err != nil {
			bar.Finish()
			return fmt.Errorf("documents %d–%d: %w", start, end-1, err)
		}
		if res.Chunks != nil {
			chunks += *res.Chunks
		}
		bar.Add(int64(end - start))
	}
	bar.Finish()
	msg := fmt.Sprintf("indexed %d documents from %d files", len(docs), len(files)-skipped)
	if chunks > 0 {
		msg += fmt.Sprintf(" (%d chunks)", chunks)
	}
	if skipped > 0 {
		msg += fmt.Sprintf(", skipped %d files", skipped)
	}
	fmt.Fprintln(env.Stdout, msg)
	return nil
}

func runIndexDelete(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("index delete", env, "ID… [flags] [target]")
	var t target
	t.register(fs)
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("at least one ID is required")
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.IndexDelete(ctx, &rcp.IndexDeleteParams{IDs: pos})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "deleted %d of %d\n", res.Deleted, len(pos))
	return nil
}
