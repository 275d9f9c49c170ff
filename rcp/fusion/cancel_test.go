package fusion

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// endsAfter is a context that ends after its Err has been asked n times:
// it shows where a loop checks cancellation without depending on timing.
type endsAfter struct {
	context.Context
	n, asked int
}

func (c *endsAfter) Err() error {
	if c.asked++; c.asked > c.n {
		return context.Canceled
	}
	return nil
}

// A fusion whose context ends stops with its error within checkEvery hits
// instead of running to the end (issue 19 item 1: long loops check
// cancellation).
func TestFuseContextStopsWhenCancelled(t *testing.T) {
	lists := make([]List, 8)
	for i := range lists {
		lists[i].Engine = "e" + strconv.Itoa(i)
		lists[i].Hits = make([]rcp.Hit, 10_000)
		for j := range lists[i].Hits {
			lists[i].Hits[j] = rcp.Hit{ID: rcp.StringID(strconv.Itoa(i*10_000 + j)), Score: float64(j)}
		}
	}
	ctx := &endsAfter{Context: context.Background(), n: 3}
	if _, err := FuseContext(ctx, lists, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if ctx.asked != 4 {
		t.Errorf("the context was asked %d times, want 4: stopped at the first check after it ended", ctx.asked)
	}
	if _, err := FuseContext(&endsAfter{Context: context.Background(), n: 1 << 30}, lists, Options{}); err != nil {
		t.Errorf("a live context: %v", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := FuseContext(cancelled, lists[:1], Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("an already cancelled fusion of one short list: %v", err)
	}
}
