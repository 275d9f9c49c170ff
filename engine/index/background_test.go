package index

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

// TestBackgroundStepAtClose: Close marks the index closed before it stops
// the background loop, so a step running in between meets ErrClosed with a
// live context. That is a shutdown and must not be logged as a failure
// (rcpd printed "background store compaction failed … index: closed" on
// every stop).
func TestBackgroundStepAtClose(t *testing.T) {
	var logs bytes.Buffer
	ix := openTest(t, "", Options{NoBackground: true,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	mustAdd(t, ix, search.Document{ID: "a", Text: "shock waves in a tube"})
	ix.closed.Store(true)
	ix.backgroundStep(context.Background())
	ix.closed.Store(false)
	if bytes.Contains(logs.Bytes(), []byte("level=ERROR")) {
		t.Fatalf("a step at close logged an error:\n%s", logs.Bytes())
	}
}
