package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServeDemoRetrieve measures the full server path of `rcpd serve
// --stdio --demo` — line framing, JSON-RPC decoding, dispatch, metrics,
// the engine's retrieve and the response encoding — for a retrieve of k 3
// (the query rotates over the demo queries of docs/benchmarks.md) in the
// default sparse mode, and in dense and hybrid mode (whose first pages keep
// their ranked lists for the cursor; the warm-up waits out the demo's LSA
// fit, which a dense call awaits). The
// client side only writes pre-encoded request lines and counts response
// lines, 64 requests in flight. It reports the process CPU per request
// (cpu-µs/op, user+system from getrusage: the server's CPU plus the small
// client cost) beside the wall time.
func BenchmarkServeDemoRetrieve(b *testing.B) {
	for _, bc := range []struct {
		name, extra string
	}{
		{"text", ``},
		{"noText", `,"includeText":false`},
		{"ping", ``}, // the protocol stack alone, for reference
		{"dense", `,"mode":"dense"`},
		{"hybrid", `,"mode":"hybrid"`},
	} {
		b.Run(bc.name, func(b *testing.B) { benchServe(b, bc.name == "ping", bc.extra) })
	}
}

var benchQueries = []string{
	"eiffel tower inverted index",
	"photosynthesis light energy bm25 ranking",
	"great wall of china stop words",
	"capital of france dense retrieval",
	"wrought iron compressing posting lists",
	"river seine reciprocal rank fusion",
	"chemical element latent semantic analysis",
	"plant chloroplasts glucose cross-encoder reranking",
}

func benchServe(b *testing.B, ping bool, extra string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(context.Background(), serveFlags{stdio: true, demo: true, data: b.TempDir(), logLevel: "error"}, inR, outW, io.Discard)
		outW.Close()
	}()
	rd := bufio.NewReaderSize(outR, 1<<16)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`+"\n"); err != nil {
		b.Fatal(err)
	}
	if _, err := rd.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	reqs := make([][]byte, len(benchQueries))
	for i, q := range benchQueries {
		reqs[i] = fmt.Appendf(nil, `,"method":"retrieve","params":{"query":%q,"k":3%s}}`+"\n", q, extra)
		if ping {
			reqs[i] = []byte(`,"method":"ping","params":{}}` + "\n")
		}
	}
	const inFlight = 64
	var id int64
	run := func(n int) {
		sent := make(chan struct{}, inFlight)
		go func() {
			var buf []byte
			for i := 0; i < n; i++ {
				sent <- struct{}{}
				id++ // ids must be unique among requests in flight
				buf = strconv.AppendInt(append(buf[:0], `{"jsonrpc":"2.0","id":`...), id, 10)
				if _, err := inW.Write(append(buf, reqs[i%len(reqs)]...)); err != nil {
					return
				}
			}
		}()
		for i := 0; i < n; i++ {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 && !ping && !bytes.Contains(line, []byte(`"hits"`)) {
				b.Fatalf("not a retrieve result: %s", line)
			}
			<-sent
		}
	}
	run(200) // warm up
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	inW.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		b.Fatal("serve did not return")
	}
}
