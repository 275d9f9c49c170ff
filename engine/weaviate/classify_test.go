package weaviate

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rcpgo/rcpgo/engine/search"
)

// A search that fails because the caller's own deadline passed reports the
// deadline (-32014 upstream), not an outage: gRPC surfaces it as a
// cancelled stream, which rcp conformance's deadline.tiny check caught
// being answered -32010.
func TestClassifyOwnDeadline(t *testing.T) {
	cancelled := status.Error(codes.Unavailable, "stream terminated by RST_STREAM with error code: CANCEL")
	expired, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if err := classify(expired, "search", cancelled); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired context: got %v, want context.DeadlineExceeded", err)
	}
	// Deadline passed, timer not yet fired: ctx.Err() is still nil.
	if err := classify(pastDeadline{context.Background()}, "search", cancelled); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline passed before the timer fired: got %v, want context.DeadlineExceeded", err)
	}
	if err := classify(context.Background(), "search", cancelled); !errors.Is(err, search.ErrUnavailable) {
		t.Fatalf("live context: got %v, want -32010", err)
	}
}

// pastDeadline is a context whose deadline has passed while its Err is still
// nil: what a request sees between its deadline and the timer that ends it.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
