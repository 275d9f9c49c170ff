package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
)

// TestHeldDataDirRefused (issue 34, finding 3): a second rcpd serve on a
// data directory another rcpd holds refuses to start, before it serves or
// logs anything, naming the holder (PID, URL) and the choices (use it —
// also with rcpd mcp --connect —, --read-only for a snapshot, another
// --data); with --read-only it serves a snapshot and its write refusals
// say why. Before, it silently served a read-only snapshot (a WARN in the
// log), and with --on-locked fail it logged "serving HTTP" and "web
// console" first.
func TestHeldDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var firstErr syncbuf.Buffer
	first := make(chan int, 1)
	go func() {
		first <- dispatch(ctx, []string{"serve", "--http", "127.0.0.1:0", "--data", dir, "--dense", "none", "--no-ui"}, nil, nil, &firstErr)
	}()
	defer func() {
		cancel()
		select {
		case <-first:
		case <-time.After(20 * time.Second):
			t.Error("the first rcpd did not stop")
		}
	}()
	var holder engine.Holder
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if h, held := engine.HeldBy(dir); held {
			holder = h
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first rcpd never took %s: %s", dir, firstErr.String())
		}
	}
	if holder.PID != os.Getpid() || holder.What != "rcpd serve" || !strings.HasPrefix(holder.URL, "http://127.0.0.1:") || strings.HasSuffix(holder.URL, ":0/rcp") {
		t.Fatalf("holder %+v: want this PID, rcpd serve and the bound URL", holder)
	}

	for _, extra := range [][]string{nil, {"--on-locked", "fail"}} {
		var out, errb syncbuf.Buffer
		args := append([]string{"serve", "--http", "127.0.0.1:0", "--data", dir, "--dense", "none"}, extra...)
		code := dispatch(context.Background(), args, nil, &out, &errb)
		msg := errb.String()
		for _, want := range []string{
			"the data directory " + dir + " is in use by rcpd serve (PID " + fmt.Sprint(os.Getpid()) + ", " + holder.URL + ")",
			"rcp COMMAND --http " + holder.URL, "rcpd mcp --connect " + holder.URL, "--read-only", "--data DIR",
		} {
			if code != 1 || !strings.Contains(msg, want) {
				t.Errorf("%q: exit %d, want 1 and %q in:\n%s", extra, code, want, msg)
			}
		}
		for _, never := range []string{"serving HTTP", "web console", "level=INFO"} {
			if strings.Contains(msg, never) {
				t.Errorf("%q: %q logged before the refusal:\n%s", extra, never, msg)
			}
		}
	}

	s := startRcpd(t, "--data", dir, "--dense", "none", "--read-only")
	caps := s.capabilities()
	vendor, _ := caps["x-rcpgo"].(map[string]any)
	if ro, _ := vendor["readOnly"].(string); !strings.Contains(ro, "read-only snapshot of "+dir) || !strings.Contains(ro, holder.URL) {
		t.Errorf("--read-only on a held directory: x-rcpgo.readOnly %q, want the snapshot and its holder", ro)
	}
	_, rerr := s.try("index/add", `{"documents":[{"text":"x"}]}`)
	if msg, _ := rerr["message"].(string); !strings.Contains(msg, "read-only snapshot of "+dir) {
		t.Errorf("index/add on the snapshot: %v, want the reason", rerr)
	}
	s.call("shutdown", `{}`)

	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
}
