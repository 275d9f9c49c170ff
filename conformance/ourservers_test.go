package conformance

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/childproc"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/internal/testutil/shared"
)

// TestOurServersCertify is the CI gate of issue 4: the suite runs against
// this repository's own servers — the example server, rcpd and its gateway
// (over toy engines) — over stdio and HTTP, and each must certify at
// exactly the level it declares with no MUST failing.
func TestOurServersCertify(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real servers; skipped with -short")
	}
	bin := t.TempDir()
	memserver := gobuild.Binary(t, bin, "github.com/rcpgo/rcpgo/examples/memserver")
	rcpd := gobuild.Binary(t, bin, "github.com/rcpgo/rcpgo/cmd/rcpd")
	gateway := gobuild.Binary(t, bin, "github.com/rcpgo/rcpgo/cmd/rcpd/internal/gwdemo") // rcpd gateway over three toy engines

	servers := []struct {
		name  string
		stdio []string
		http  func(addr string) []string
	}{
		{"memserver", []string{memserver}, func(addr string) []string { return []string{memserver, "-http", addr} }},
		{"rcpd", []string{rcpd, "serve", "--stdio", "--demo", "--data", filepath.Join(bin, "stdio-data")},
			func(addr string) []string {
				return []string{rcpd, "serve", "--demo", "--http", addr, "--data", filepath.Join(bin, "http-data")}
			}},
		{"gateway", []string{gateway, "--stdio"}, func(addr string) []string { return []string{gateway, "--http", addr} }},
	}
	for _, s := range servers {
		t.Run(s.name+"/stdio", func(t *testing.T) {
			certify(t, Target{Command: s.stdio})
		})
		t.Run(s.name+"/http", func(t *testing.T) {
			addr := freeAddr(t)
			stop := startHTTP(t, s.http(addr), addr)
			defer stop()
			certify(t, Target{URL: "http://" + addr + "/rcp"})
		})
	}
}

func certify(t *testing.T, target Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// The suite's embedded schema is all it needs; with the normative schema
	// in the shared data every frame must satisfy that one too, which holds
	// our schema to it on the real traffic of our servers.
	opts := Options{CallTimeout: 20 * time.Second, StartTimeout: 60 * time.Second}
	if p, ok := shared.Lookup("rcp", "rcp-1.0.schema.json"); ok {
		opts.SchemaPath = p
	}
	rep, err := Run(ctx, target, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Status == Fail && c.Requirement == Must {
			t.Errorf("MUST failed: %s (%s): %s", c.ID, c.Section, c.Detail)
		}
	}
	if rep.DeclaredLevel == nil || rep.CertifiedLevel == nil || *rep.DeclaredLevel != *rep.CertifiedLevel || !rep.DeclarationHonest {
		t.Errorf("declared %v, certified %v, honest %v: %v", lvl(rep.DeclaredLevel), lvl(rep.CertifiedLevel), rep.DeclarationHonest, rep.LevelNotes)
	}
	t.Logf("%s: %d checks: %d passed, %d failed, %d skipped; certified %s (schemas: ours%s)", target, len(rep.Checks),
		rep.Passed, rep.Failed, rep.Skipped, lvl(rep.CertifiedLevel), map[bool]string{true: " + " + opts.SchemaPath}[opts.SchemaPath != ""])
}

func lvl(l *Level) string {
	if l == nil {
		return "none"
	}
	return string(*l)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startHTTP runs argv until it accepts connections on addr.
func startHTTP(t *testing.T, argv []string, addr string) (stop func()) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var tail strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if tail.Len() < 8<<10 {
				fmt.Fprintln(&tail, sc.Text())
			}
		}
	}()
	stop = func() { childproc.Stop(cmd, os.Interrupt, 10*time.Second) }
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return stop
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	t.Fatalf("%s did not listen on %s:\n%s", argv[0], addr, tail.String())
	return nil
}
