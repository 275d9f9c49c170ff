package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

var sessionFlood = flag.Int("session-flood", 0, "TestSessionFloodRSS: retrieves, each with a new sessionId (0 skips the test)")

// TestSessionFloodRSS sends -session-flood retrieves to rcpd --demo, each
// with a distinct sessionId, and checks the process's resident set grows
// by less than 96 MiB (the session store keeps at most 10 000 sessions and
// 500 000 remembered hits; docs/rcpd.md). Run:
//
//	go test ./cmd/rcpd -run TestSessionFloodRSS -session-flood 100000 -v
func TestSessionFloodRSS(t *testing.T) {
	if *sessionFlood == 0 {
		t.Skip("long: run with -session-flood N")
	}
	const bound = 96 << 20
	s := startRcpd(t, "--data", t.TempDir(), "--demo", "--log-level", "error")
	s.call("initialize", `{"protocolVersion":1}`)
	queries := []string{"bm25 saturation", "dense retrieval", "inverted index", "reciprocal rank fusion", "query rewriting"}
	send := func(i int) {
		s.call("retrieve", fmt.Sprintf(`{"query":%q,"k":10,"sessionId":"flood-%08d-a-client-chosen-trajectory-id"}`, queries[i%len(queries)], i))
	}
	for i := range 2000 { // warm up: caches, pools, the transform vocabulary
		send(i)
	}
	runtime.GC()
	before := rss(t)
	for i := 2000; i < 2000+*sessionFlood; i++ {
		send(i)
	}
	runtime.GC()
	after := rss(t)
	t.Logf("%d sessions: VmRSS %.1f MiB → %.1f MiB (+%.1f MiB)", *sessionFlood, mib(before), mib(after), mib(after-before))
	if after-before > bound {
		t.Fatalf("RSS grew by %.1f MiB, over the %d MiB bound", mib(after-before), bound>>20)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// rss reads VmRSS of this process (rcpd runs in-process in these tests).
func rss(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}
