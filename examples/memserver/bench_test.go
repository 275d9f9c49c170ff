package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// benchStdio serves b.N pipelined frames through ServeStdio the way a
// pipelining client drives the memserver binary: up to window requests
// outstanding, a new one sent as each answer arrives. The client side is an
// in-memory reader/writer pair (no pipe or syscall), so this measures the
// server path (framing, decoding, dispatch, the handler, encoding, writing)
// plus a strconv per request.
func benchStdio(b *testing.B, method, params string) {
	srv := rcp.NewServer(newEngine().router(), &rcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	l := &loopback{credit: 256, total: b.N, prefix: `{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":`}
	l.cond = sync.NewCond(&l.mu)
	l.pending = []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if err := srv.ServeStdio(context.Background(), l, l); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// On a shared machine wall time per op mostly measures the neighbours;
	// the process's CPU time per op is the steadier figure.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if l.answered != b.N+1 || l.errors != 0 {
		b.Fatalf("%d answers (%d errors) to %d requests", l.answered, l.errors, b.N+1)
	}
}

// loopback is the benchmark's client: Read hands the server frames while
// there is credit, Write takes answers and returns credit.
type loopback struct {
	mu       sync.Mutex
	cond     *sync.Cond
	credit   int
	sent     int
	total    int
	answered int
	errors   int
	prefix   string
	pending  []byte
}

func (l *loopback) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.pending) == 0 {
		if l.sent == l.total {
			for l.answered < l.total+1 {
				l.cond.Wait()
			}
			return 0, io.EOF
		}
		for l.credit > 0 && l.sent < l.total && len(l.pending) < len(p) {
			l.sent++
			l.credit--
			l.pending = append(append(append(l.pending, l.prefix...), strconv.Itoa(l.sent)...), "}\n"...)
		}
		if len(l.pending) == 0 {
			l.cond.Wait()
		}
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	if len(l.pending) == 0 {
		l.pending = l.pending[:0:0]
	}
	return n, nil
}

func (l *loopback) Write(p []byte) (int, error) {
	n := bytes.Count(p, []byte("\n"))
	e := bytes.Count(p, []byte(`"error":{"code"`))
	l.mu.Lock()
	l.credit += n
	l.answered += n
	l.errors += e
	l.cond.Broadcast()
	l.mu.Unlock()
	return len(p), nil
}

// BenchmarkStdioPing: pipelined ping through the whole stdio server path.
func BenchmarkStdioPing(b *testing.B) {
	benchStdio(b, "ping", `{"nonce":7}`)
}

// BenchmarkStdioRetrieve: pipelined retrieve (the workload of the
// throughput goal) through the whole stdio server path.
func BenchmarkStdioRetrieve(b *testing.B) {
	benchStdio(b, "retrieve", `{"query":"eiffel tower paris","k":2}`)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
