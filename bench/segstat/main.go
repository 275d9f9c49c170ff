// Command segstat reports the on-disk size of an engine/index directory's
// segments by part — documents, term dictionary, postings, positions,
// metadata keywords, numeric columns, framing — for the disk model of
// docs/benchmarks.md (issue 15, acceptance 4). With -merge it first merges
// every segment into one, in place: run it on a copy (cp -a), with no rcpd
// using the directory.
//
//	segstat -index DATA/index [-merge]
//
// It prints one JSON object per state (before, and after the merge).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/search"
)

func main() {
	dir := flag.String("index", "", "engine/index directory (DATA/index of an rcpd data dir)")
	merge := flag.Bool("merge", false, "merge all segments into one first (modifies the directory)")
	flag.Parse()
	if err := run(*dir, *merge); err != nil {
		fmt.Fprintln(os.Stderr, "segstat:", err)
		os.Exit(1)
	}
}

func run(dir string, merge bool) error {
	if dir == "" {
		return fmt.Errorf("give -index")
	}
	ctx := context.Background()
	ix, err := index.Open(ctx, dir, index.Options{NoBackground: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	report("open", ix.Stats(), 0)
	if merge {
		t0 := time.Now()
		if err := ix.ForceMerge(ctx); err != nil {
			ix.Close()
			return err
		}
		report("merged", ix.Stats(), time.Since(t0))
	}
	return ix.Close()
}

func report(state string, st search.Stats, took time.Duration) {
	out := map[string]any{
		"state": state, "docs": st.Docs, "segments": st.Segments, "segmentBytes": st.SegmentBytes,
		"parts": st.SegmentParts, "terms": st.Terms,
	}
	if took > 0 {
		out["mergeSeconds"] = took.Seconds()
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
