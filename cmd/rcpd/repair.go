package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/internal/wording"
)

func init() {
	commands["repair"] = command{summary: "move aside the damaged files of a data directory, salvaging the readable records of a damaged index store", run: runRepair}
}

// runRepair implements `rcpd repair --data DIR`: engine.Repair, then an
// Open to show the directory serves again. rcpd serve must not be running
// on DIR.
func runRepair(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcpd repair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "data directory to repair (required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *data == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: rcpd repair --data DIR")
		return 2
	}
	rep, err := engine.Repair(*data)
	if rep != nil {
		printRepair(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rcpd repair:", err)
		return 1
	}
	eng, err := engine.Open(ctx, engine.Config{Dir: *data, Dense: engine.DenseNone, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		fmt.Fprintln(stderr, "rcpd repair: the directory still does not open:", err)
		return 1
	}
	st := eng.Stats()
	_ = eng.Close()
	fmt.Fprintf(stdout, "%s opens: %s, index version %s\n", *data, wording.Plural(st.Docs, "document", "documents"), st.Version)
	return 0
}

// printRepair reports what engine.Repair moved and salvaged.
func printRepair(w io.Writer, rep *engine.RepairReport) {
	for _, m := range rep.Moved {
		fmt.Fprintf(w, "moved aside: %s\n", m)
	}
	if s := rep.Salvaged; s != nil {
		fmt.Fprintf(w, "salvaged %s: %s copied into a new file; the index rebuilds its segments from them at the next open\n", s.File, wording.Plural(s.Copied, "record", "records"))
		for _, l := range s.Lost {
			fmt.Fprintf(w, "unreadable: %s\n", l)
		}
	}
	if rep.Salvaged != nil || len(rep.LostDocuments) > 0 {
		fmt.Fprintf(w, "documents lost: %d\n", len(rep.LostDocuments))
		for _, id := range rep.LostDocuments {
			fmt.Fprintf(w, "lost: %s\n", id)
		}
	}
	if rep.ManifestRebuilt {
		fmt.Fprintln(w, "index manifest: lost with the damage, rebuilt from the records (new index epoch: earlier versions and cursors no longer resolve)")
	}
	if len(rep.Moved) == 0 && !rep.ManifestRebuilt {
		fmt.Fprintln(w, "nothing to move: no damaged database file and no orphaned segments")
	}
}
