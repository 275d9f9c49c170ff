package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/rcpgo/rcpgo/engine"
)

func init() {
	commands["repair"] = command{summary: "move aside the damaged files that stop a data directory from opening", run: runRepair}
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
	moved, err := engine.Repair(*data)
	for _, m := range moved {
		fmt.Fprintf(stdout, "moved aside: %s\n", m)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rcpd repair:", err)
		return 1
	}
	if len(moved) == 0 {
		fmt.Fprintln(stdout, "nothing to move: no damaged database file and no orphaned segments")
	}
	eng, err := engine.Open(ctx, engine.Config{Dir: *data, Dense: engine.DenseNone, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		fmt.Fprintln(stderr, "rcpd repair: the directory still does not open:", err)
		return 1
	}
	st := eng.Stats()
	_ = eng.Close()
	fmt.Fprintf(stdout, "%s opens: %d documents, index version %s\n", *data, st.Docs, st.Version)
	return 0
}
