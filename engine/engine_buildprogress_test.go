package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/embed"
)

// gateProvider embeds like hashProvider, but every call after the first
// waits for release: a build stays in its embed phase until the test lets
// it go.
type gateProvider struct {
	hashProvider
	release chan struct{}
}

func (g *gateProvider) Embed(ctx context.Context, texts []string, kind embed.Kind) ([][]float32, error) {
	if g.calls.Load() > 0 {
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.hashProvider.Embed(ctx, texts, kind)
}

// TestDenseBuildProgress: while a dense generation is built (here a
// rebuild for a new encoder identity over a stored corpus), DenseBuild
// reports it — phase, units covered, none done while the first batch is
// held; once it is published, none.
func TestDenseBuildProgress(t *testing.T) {
	dir := t.TempDir()
	first := quietEngine(t, Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: &hashProvider{id: "hash", dim: 16},
		Fields: demoFields, Preload: demoPreload(t)})
	settle(t, first)
	units := first.Stats().Docs
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	p := &gateProvider{hashProvider: hashProvider{id: "hash-2", dim: 16}, release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(p.release) })
	t.Cleanup(release) // before the engine's Close (cleanups run last first)
	e := quietEngine(t, Config{Dir: dir, Dense: DenseOpenAI, DenseProvider: p, Fields: demoFields})
	var b DenseBuild
	for deadline := time.Now().Add(time.Minute); ; {
		var ok bool
		if b, ok = e.DenseBuild(); ok && p.calls.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no dense build reported within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b.Phase != "embed" || b.Total != units || b.Done != 0 || b.Generation == 0 || b.Started.IsZero() {
		t.Fatalf("build in progress = %+v, want phase embed, 0 of %d units done", b, units)
	}
	release()
	settle(t, e)
	if e.DenseIdentity() != "hash-2" {
		t.Fatalf("dense identity %q after the build, want hash-2", e.DenseIdentity())
	}
	if b, ok := e.DenseBuild(); ok {
		t.Fatalf("a build is still reported after publishing: %+v", b)
	}
}
