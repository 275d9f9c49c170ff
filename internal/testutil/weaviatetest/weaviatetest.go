// Package weaviatetest runs Weaviate nodes on loopback for tests of the
// weaviate backend: the server binary comes from $RCPGO_WEAVIATE_BIN or
// the cache scripts/weaviate.sh builds into; every node gets free ports and
// a temporary data directory, and is stopped by t.Cleanup.
//
// Without a binary a test is skipped, except under CI=true, where it
// fails: .ci/run builds the binary first (scripts/weaviate.sh binary).
package weaviatetest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the Weaviate server version the tests and scripts use.
const Version = "v1.35.2"

// Binary returns the weaviate-server binary, or skips (fails under
// CI=true) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("RCPGO_WEAVIATE_BIN"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			t.Fatalf("RCPGO_WEAVIATE_BIN=%s: not a file (%v)", p, err)
		}
		return p
	}
	cache := os.Getenv("RCPGO_WEAVIATE_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "rcpgo", "weaviate")
	}
	p := filepath.Join(cache, Version, "weaviate-server")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	msg := fmt.Sprintf("weaviate-server %s not found (%s): build it with `bash scripts/weaviate.sh binary` or set RCPGO_WEAVIATE_BIN", Version, p)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Node is one running Weaviate server.
type Node struct {
	Name     string
	HTTPPort int
	GRPCPort int
	dir      string
	env      []string
	bin      string
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *bytes.Buffer
	logMu    *sync.Mutex
}

// URL is the node's REST endpoint.
func (n *Node) URL() string { return "http://127.0.0.1:" + strconv.Itoa(n.HTTPPort) }

// GRPC is the node's gRPC host:port.
func (n *Node) GRPC() string { return "127.0.0.1:" + strconv.Itoa(n.GRPCPort) }

// Cluster is a set of nodes started together.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
}

// Start runs n nodes (1 or 3) and waits until every one is ready. A node
// that cannot bind a port another process took after the probe makes the
// whole cluster start again on other ports.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	for attempt := 1; ; attempt++ {
		c, err := tryStart(t, bin, n)
		if err == nil {
			return c
		}
		c.Stop()
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("weaviatetest: a port was taken, starting again on others: %.200s", err)
	}
}

func tryStart(t testing.TB, bin string, n int) (*Cluster, error) {
	c := &Cluster{t: t}
	ports := freePorts(t, n)
	var join []string
	for i := range n {
		join = append(join, fmt.Sprintf("node%d:%d", i, ports[i].raft))
	}
	root := t.TempDir()
	for i := range n {
		p := ports[i]
		node := &Node{Name: fmt.Sprintf("node%d", i), HTTPPort: p.http, GRPCPort: p.grpc, dir: filepath.Join(root, fmt.Sprintf("node%d", i)), bin: bin}
		node.env = append(os.Environ(),
			"PERSISTENCE_DATA_PATH="+filepath.Join(node.dir, "data"),
			"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
			"DEFAULT_VECTORIZER_MODULE=none", "ENABLE_MODULES=",
			"DISABLE_TELEMETRY=true", "PROMETHEUS_MONITORING_ENABLED=false",
			"LIMIT_RESOURCES=true", "GOMAXPROCS=2",
			"CLUSTER_HOSTNAME="+node.Name, "CLUSTER_IN_LOCALHOST=true",
			"CLUSTER_ADVERTISE_ADDR=127.0.0.1", "CLUSTER_BIND_ADDR=127.0.0.1",
			"CLUSTER_GOSSIP_BIND_PORT="+strconv.Itoa(p.gossip), "CLUSTER_DATA_BIND_PORT="+strconv.Itoa(p.gossip+1),
			"RAFT_PORT="+strconv.Itoa(p.raft), "RAFT_INTERNAL_RPC_PORT="+strconv.Itoa(p.raft+1),
			"RAFT_JOIN="+strings.Join(join, ","), "RAFT_BOOTSTRAP_EXPECT="+strconv.Itoa(n),
			"GRPC_PORT="+strconv.Itoa(p.grpc),
		)
		if i > 0 {
			node.env = append(node.env, "CLUSTER_JOIN=127.0.0.1:"+strconv.Itoa(ports[0].gossip))
		}
		c.Nodes = append(c.Nodes, node)
	}
	t.Cleanup(c.Stop)
	// Node 0 first: the others join its gossip port once, at start.
	if err := c.Nodes[0].start(); err != nil {
		return c, err
	}
	if n > 1 {
		if err := waitListening(ports[0].gossip, time.Minute); err != nil {
			return c, fmt.Errorf("%w\n%s", err, c.Nodes[0].Log())
		}
	}
	for _, node := range c.Nodes[1:] {
		if err := node.start(); err != nil {
			return c, err
		}
	}
	for _, node := range c.Nodes {
		if err := node.WaitReady(3 * time.Minute); err != nil {
			return c, fmt.Errorf("%w\n%s", err, node.Log())
		}
	}
	return c, nil
}

func (n *Node) start() error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(n.bin, "--scheme", "http", "--host", "127.0.0.1", "--port", strconv.Itoa(n.HTTPPort),
		"--read-timeout=600s", "--write-timeout=600s")
	cmd.Env = n.env
	if n.log == nil {
		n.log, n.logMu = new(bytes.Buffer), new(sync.Mutex)
	}
	w := &lockedWriter{buf: n.log, mu: n.logMu}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", n.Name, err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(ch chan struct{}) { _ = cmd.Wait(); close(ch) }(n.exited)
	return nil
}

// WaitReady polls /v1/.well-known/ready.
func (n *Node) WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.URL()+"/v1/.well-known/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-n.exited:
			return fmt.Errorf("weaviate %s exited before it was ready", n.Name)
		case <-ctx.Done():
			return fmt.Errorf("weaviate %s not ready after %v", n.Name, timeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitListening waits until something accepts TCP connections on port.
func waitListening(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on 127.0.0.1:%d after %v", port, timeout)
}

// Kill sends SIGKILL to node i and waits for it to exit.
func (c *Cluster) Kill(i int) {
	n := c.Nodes[i]
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

// Restart starts node i again (after Kill) and waits until it is ready.
func (c *Cluster) Restart(i int) {
	n := c.Nodes[i]
	if err := n.start(); err != nil {
		c.t.Fatal(err)
	}
	if err := n.WaitReady(3 * time.Minute); err != nil {
		c.t.Fatalf("%v\n%s", err, n.Log())
	}
}

// Stop terminates every node (SIGTERM, then SIGKILL after 10 s).
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		if n.cmd == nil {
			continue
		}
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.exited
		}
		n.cmd = nil
	}
}

// Log returns the node's output so far (the last 8 KiB).
func (n *Node) Log() string {
	if n.log == nil {
		return ""
	}
	n.logMu.Lock()
	defer n.logMu.Unlock()
	b := n.log.Bytes()
	return string(b[max(0, len(b)-8<<10):])
}

type lockedWriter struct {
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() > 1<<20 { // keep memory bounded: the tail is what matters
		tail := append([]byte(nil), w.buf.Bytes()[w.buf.Len()-(256<<10):]...)
		w.buf.Reset()
		w.buf.Write(tail)
	}
	return w.buf.Write(p)
}

type nodePorts struct{ http, grpc, gossip, raft int }

// freePorts finds, for each node, a REST and a gRPC port and two pairs of
// consecutive ports (gossip/data and RAFT/RAFT-RPC: Weaviate expects
// data = gossip+1), all free on 127.0.0.1 when probed. They are drawn below
// the kernel's ephemeral range, where no outgoing connection of another
// test can take one between the probe and Weaviate's bind (or a restart's).
func freePorts(t testing.TB, n int) []nodePorts {
	t.Helper()
	low := ephemeralLow()
	for attempt := 0; attempt < 50; attempt++ {
		base := 10000 + rand.IntN((low-10000-10*n)/10)*10
		out := make([]nodePorts, n)
		ok := true
		for i := range n {
			b := base + i*10
			out[i] = nodePorts{http: b, grpc: b + 1, gossip: b + 2, raft: b + 4}
			for p := b; p < b+6 && ok; p++ {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
				if err != nil {
					ok = false
					break
				}
				l.Close()
			}
		}
		if ok {
			return out
		}
	}
	t.Fatal("weaviatetest: no free ports")
	return nil
}

// ephemeralLow is the first port the kernel hands to outgoing connections
// (32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < 12000 {
		return 32768
	}
	return low
}
