package mcpcmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
	"github.com/rcpgo/rcpgo/rcp"
)

// startHTTPMain runs Main with args over HTTP against a test engine until
// the test ends and returns its stderr once it logged the MCP URL.
func startHTTPMain(t *testing.T, args ...string) *syncbuf.Buffer {
	t.Helper()
	eng, err := openTestEngine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}).HTTPHandler(nil)
	srv := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"--connect", srv.URL + "/rcp", "--http", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = h.Close()
		srv.Close()
		_ = eng.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "serving streamable HTTP") {
		if time.Now().After(deadline) {
			t.Fatalf("rcpd mcp did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &stderr
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The MCP face serves /metrics (Go runtime and process metrics: the
// goroutine count and RSS an operator watches under attack), behind the
// token when there is one, or without auth on --metrics-addr only.
func TestHTTPMetrics(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tok, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	urlOf := func(log *syncbuf.Buffer, suffix string) string {
		re := regexp.MustCompile(`url=(http://\S+)` + suffix)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if m := re.FindStringSubmatch(log.String()); m != nil {
				return m[1]
			}
		}
		t.Fatalf("no %s URL logged:\n%s", suffix, log.String())
		return ""
	}
	base := urlOf(startHTTPMain(t, "--token-file", tok), "/mcp")
	if code, _ := get(t, base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: HTTP %d", code)
	}
	if code, body := get(t, base+"/metrics", "s3cret"); code != 200 || !strings.Contains(body, "\ngo_goroutines ") || !strings.Contains(body, "process_resident_memory_bytes") {
		t.Errorf("/metrics with the token: HTTP %d %.200s", code, body)
	}

	log := startHTTPMain(t, "--token-file", tok, "--metrics-addr", "127.0.0.1:0")
	if code, body := get(t, urlOf(log, "/metrics")+"/metrics", ""); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("--metrics-addr /metrics: HTTP %d", code)
	}
	if code, _ := get(t, urlOf(log, "/mcp")+"/metrics", "s3cret"); code != http.StatusNotFound {
		t.Errorf("/metrics on --http beside --metrics-addr: HTTP %d, want 404", code)
	}

	for _, args := range [][]string{{"--data", "x", "--metrics-addr", "127.0.0.1:0"}, {"--data", "x", "--http", "127.0.0.1:0", "--path", "/metrics"}} {
		var stderr bytes.Buffer
		if code := Main(context.Background(), args, strings.NewReader(""), io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "metrics") {
			t.Errorf("%q: exit %d, %s", args, code, stderr.String())
		}
	}
}
