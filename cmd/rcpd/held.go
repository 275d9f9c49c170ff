package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/rcp"
)

// checkHeld decides, before rcpd listens or logs anything, what to do when
// another process holds cfg.Dir: with onLocked "fail" (the default) and
// without --read-only, rcpd refuses to start and says who holds the
// directory and what to do instead; with --read-only (or onLocked
// "snapshot") it serves a read-only snapshot copy, and says so. Whoever
// holds the directory, cfg.Holder tells the next process about this one.
func checkHeld(cfg *engine.Config, onLocked string) error {
	switch onLocked {
	case "fail":
	case "snapshot":
		cfg.SnapshotIfLocked = true
	default:
		return fmt.Errorf("--on-locked: want fail or snapshot, got %q", onLocked)
	}
	if cfg.ReadOnly {
		cfg.SnapshotIfLocked = true // an explicit snapshot
	}
	h, held := engine.HeldBy(cfg.Dir)
	if !held || cfg.SnapshotIfLocked {
		return nil
	}
	return heldError(cfg.Dir, h)
}

// heldError says who holds dir and the choices: use that server, serve a
// snapshot, or another directory.
func heldError(dir string, h engine.Holder) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the data directory %s is in use by %s\n", dir, h)
	if h.URL != "" {
		fmt.Fprintf(&b, "  - use that server: rcp COMMAND --http %s; MCP clients: rcpd mcp --connect %s\n", h.URL, h.URL)
	} else {
		b.WriteString("  - use that server (rcpd mcp --connect URL reaches an rcpd serving HTTP)\n")
	}
	b.WriteString("  - serve a read-only snapshot of the directory as it is now: add --read-only\n")
	b.WriteString("  - use another directory: --data DIR")
	if h.PID > 0 {
		fmt.Fprintf(&b, "; or stop PID %d first", h.PID)
	}
	return errors.New(b.String())
}

// endpointURL is the RCP endpoint of an HTTP listen address ("" for none),
// as a local client reaches it: a wildcard host is asked at loopback.
func endpointURL(addr string) string {
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/rcp"
}

// maxRequestBytes is --max-request-bytes ($RCPD_MAX_REQUEST_BYTES, the
// config file's maxRequestBytes), or rcp's default.
func maxRequestBytes(flagValue string, config int) (int, error) {
	s := pick(flagValue, os.Getenv("RCPD_MAX_REQUEST_BYTES"))
	if s == "" {
		if config > 0 {
			return config, nil
		}
		return rcp.DefaultMaxFrameBytes, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1<<20 {
		return 0, fmt.Errorf("--max-request-bytes %q: want a byte count of at least 1048576", s)
	}
	return n, nil
}

// claimDataAndAddress settles, before anything is served or logged, what a
// second rcpd would stumble on: a data directory another process holds
// (checkHeld), and the HTTP address, bound here so that the lock names the
// address that answers (":0" included). It also sets the request limit the
// engine advertises. ln is nil without HTTP (--stdio alone).
func claimDataAndAddress(cfg *engine.Config, f serveFlags, fc *fileConfig) (ln net.Listener, err error) {
	max, err := maxRequestBytes(f.maxRequest, fc.MaxRequestBytes)
	if err != nil {
		return nil, err
	}
	cfg.MaxRequestBytes = int64(max)
	// The demo's data is the fixed sample corpus, so a second demo process
	// (a fresh stdio session of rcp conformance, rcp query -- rcpd serve
	// --stdio --demo beside rcpd serve --demo) serves a read-only snapshot
	// of it rather than refusing: there is nothing of the user's to lose.
	defaultOnLocked := "fail"
	if f.demo {
		defaultOnLocked = "snapshot"
	}
	if err := checkHeld(cfg, pick(f.onLocked, os.Getenv("RCPD_ON_LOCKED"), defaultOnLocked)); err != nil {
		return nil, err
	}
	cfg.Holder = engine.Holder{What: "rcpd serve"}
	addr := pick(f.httpAddr, os.Getenv("RCPD_HTTP"))
	if addr == "" && !f.stdio {
		addr = pick(fc.HTTP, "127.0.0.1:7700")
	}
	if addr == "" {
		return nil, nil
	}
	if ln, err = net.Listen("tcp", addr); err != nil {
		return nil, err
	}
	cfg.Holder.URL = endpointURL(ln.Addr().String())
	return ln, nil
}
