package cli

import (
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// rcp info names the index options in one order every time (it ranged
// over a map, so TestEverydayPolish failed about every other run).
func TestIndexLineIsStable(t *testing.T) {
	c := &rcp.Capabilities{Index: &rcp.IndexCap{Writable: true, Chunking: true, Contextual: true}}
	const want = "writable, chunking, contextual"
	for i := 0; i < 20; i++ {
		if got := indexLine(c, nil); got != want {
			t.Fatalf("run %d: indexLine = %q, want %q", i, got, want)
		}
	}
}
