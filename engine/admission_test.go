package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/rcp"
)

// An index/add marks a write in flight for the engine's admission until
// it is answered.
func TestIndexAddNarrowsAdmission(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Dense = DenseNone })
	if e.gate.WritesComing() {
		t.Fatal("writes coming before any write")
	}
	add := []byte(`{"documents":[{"id":"w1","text":"a zeppelin over the eiffel tower"}]}`)
	if _, err := e.Call(context.Background(), rcp.MethodIndexAdd, add); err != nil {
		t.Fatal(err)
	}
	if !e.gate.WritesComing() {
		t.Fatal("no write coming right after an add")
	}
}

// While writes come in and the write-time slots are taken, a retrieve that
// waits on another process — a rerank stage (a model call), or any
// retrieve over a Config.Backend (a network search; before, those were
// narrowed like local ones) — is still admitted; a plain local one waits.
func TestRemoteRetrievesAdmittedWide(t *testing.T) {
	remote, err := index.Open(context.Background(), filepath.Join(t.TempDir(), "remote"), index.Options{NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	for _, tc := range []struct {
		name     string
		cfg      func(*Config)
		wide     string // a retrieve admitted while writing
		narrowed string // one that waits for a write-time slot ("": none)
	}{
		{"rerank stage", func(c *Config) { c.Dense = DenseNone; c.Reranker = lengthScorer{&calls} },
			`{"query":"eiffel tower","k":3,"rerank":{"method":"cross-encoder","topN":5}}`,
			`{"query":"eiffel tower","k":3,"rerank":false}`},
		{"remote backend", func(c *Config) { c.Backend, c.Dense = remote, "" },
			`{"query":"eiffel tower","k":3}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.cfg)
			// A write in flight, and its write-time slots taken by local
			// retrieves in their pipeline.
			e.gate.BeginWrite()
			defer e.gate.EndWrite()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				narrowed, err := e.gate.Admit(ctx, true)
				cancel()
				if err != nil {
					break // every write-time slot is taken
				}
				if !narrowed {
					t.Fatal("a local retrieve was admitted wide while writing")
				}
				defer e.gate.Release(narrowed)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := e.Call(ctx, rcp.MethodRetrieve, []byte(tc.wide)); err != nil {
				t.Fatalf("a retrieve calling out while the write-time slots are taken: %v", err)
			}
			if tc.narrowed == "" {
				return
			}
			short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancelShort()
			if _, err := e.Call(short, rcp.MethodRetrieve, []byte(tc.narrowed)); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a plain retrieve with no write-time slot: err = %v, want the deadline", err)
			}
		})
	}
}
