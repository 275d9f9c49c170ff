package integrity

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// The engine's background work (the deriver asks Writable before each
// backfill step) reads a Dir's health while Open is still starting the
// checks after Open: Health, Checking and Damage are safe to call at any
// time from any goroutine (go test -race fails before).
func TestHealthWhileChecksStart(t *testing.T) {
	d := &Dir{Path: t.TempDir()}
	damaged := errors.New("page 7 of engine.db: bad checksum")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = d.Health()
				_ = d.Checking()
			}
		}
	}()
	d.StartChecks(slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) error { return damaged })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Verified(ctx); !errors.Is(err, damaged) {
		t.Errorf("Verified = %v, want the damage found", err)
	}
	close(stop)
	wg.Wait()
	if err := d.Damage(); !errors.Is(err, damaged) {
		t.Errorf("Damage = %v, want the damage found", err)
	}
	d.StopChecks()
}
