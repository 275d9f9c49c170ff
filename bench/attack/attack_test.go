// Package attack replays the hostile-input attacks of issue 19 (items 1–9)
// against the built rcpd, `rcpd gateway` and `rcpd mcp --http` on loopback,
// and checks that each answers with its documented code, that memory stays
// bounded, that CPU returns to idle within a second of each attack, that
// goroutines return to baseline and that a normal client is served
// throughout (docs/hostile-input.md).
package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/childproc"
	"github.com/rcpgo/rcpgo/internal/testutil/fedtest"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
)

// Bounds asserted after every attack (the processes start at 20–100 MB).
const (
	maxRSS      = 600 << 20 // bytes
	idleCPU     = 0.10      // cores, averaged over a 200 ms window
	idleWithin  = time.Second
	attackBound = 15 * time.Second // one attack's own duration, on a shared machine
	// chunkingIdleWithin replaces idleWithin after the chunking attack: its
	// 3 125 chunks take the document store past its first dictionary
	// threshold (store.DictMinDocs), and training the dictionary and
	// recompressing ≈ 3 k records is ≈ 2 s of CPU once, then idle.
	chunkingIdleWithin = 15 * time.Second
	// normalTimeout bounds each request of the normal client (generous:
	// CI machines are shared; an attack that locks clients out makes them
	// wait far longer, or refuses them).
	normalTimeout = 5 * time.Second
)

var rcpdBin string

// bearer, when set, is the token the normal client and the /metrics
// reads send (the issue 33 replays run rcpd with a token file).
var bearer string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("attack: builds rcpd and attacks it over the network; skipped with -short")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "rcpd-attack")
	if err != nil {
		panic(err)
	}
	rcpdBin = filepath.Join(dir, "rcpd")
	if err := gobuild.Build(rcpdBin, "github.com/rcpgo/rcpgo/cmd/rcpd"); err != nil {
		fmt.Fprintln(os.Stderr, "attack: building rcpd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one started rcpd process.
type proc struct {
	cmd  *exec.Cmd
	addr string
}

var addrRE = regexp.MustCompile(`(?:addr|url)=(?:http://)?(127\.0\.0\.1:\d+)`)

// start runs rcpd with args and waits for the log line carrying its
// address.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(rcpdBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { childproc.Stop(cmd, os.Interrupt, 10*time.Second) })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	select {
	case a := <-found:
		return &proc{cmd: cmd, addr: a}
	case <-time.After(20 * time.Second):
		t.Fatalf("rcpd %v did not report its address", args)
		return nil
	}
}

// rss and cpu read /proc (Linux; the CI runs there).
func (p *proc) rss(t *testing.T) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *proc) cpuTicks(t *testing.T) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}

// settle waits until the process is idle (a 200 ms window under idleCPU)
// and fails when that takes longer than idleWithin; it also checks RSS.
func (p *proc) settle(t *testing.T, attack string) {
	t.Helper()
	const hz = 100 // USER_HZ
	within := idleWithin
	if attack == chunkingAttack {
		within = chunkingIdleWithin
	}
	deadline := time.Now().Add(within)
	for {
		a := p.cpuTicks(t)
		time.Sleep(200 * time.Millisecond)
		used := float64(p.cpuTicks(t)-a) / hz / 0.2
		if used < idleCPU {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: still using %.2f CPU %v after the attack", attack, used, within)
			break
		}
	}
	if r := p.rss(t); r > maxRSS {
		t.Errorf("%s: RSS %d MB > %d MB", attack, r>>20, maxRSS>>20)
	}
}

// rpc posts one JSON-RPC request and returns the error code (0: success)
// and the HTTP status.
func rpc(ctx context.Context, base, method, params string, hdr map[string]string) (code, status int, err error) {
	status, b, err := post(ctx, base, method, params, hdr)
	return codeIn(b), status, err
}

// post sends one JSON-RPC request to base's /rcp/method and returns the
// HTTP status and the answer's body.
func post(ctx context.Context, base, method, params string, hdr map[string]string) (int, []byte, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rcp/"+method, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// codeIn is the error code of the JSON-RPC answer b (0: none).
func codeIn(b []byte) int {
	var w struct {
		Error *struct{ Code int } `json:"error"`
	}
	if json.Unmarshal(b, &w) == nil && w.Error != nil {
		return w.Error.Code
	}
	return 0
}

// normal is the well-behaved client: a retrieve every 100 ms on a fresh
// connection, each of which must succeed within normalTimeout.
func normal(t *testing.T, base string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tr := &http.Transport{DisableKeepAlives: true}
		c := &http.Client{Transport: tr, Timeout: normalTimeout}
		for ctx.Err() == nil {
			req, _ := http.NewRequest(http.MethodPost, base+"/rcp/retrieve", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"bm25","k":1}}`))
			req.Header.Set("Content-Type", "application/json")
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := c.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("a normal client was not served: %v", err)
				}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("a normal client got HTTP %d", resp.StatusCode)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// parallel runs n copies of f with at most c at a time.
func parallel(n, c int, f func(i int)) {
	sem := make(chan struct{}, c)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// hugeFilter is a retrieve with a 12 MB in-list of 1.5 M ints (built once,
// outside the timed attacks).
var hugeFilter = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString(`{"query":"bm25","k":5,"filter":{"field":"year","op":"in","value":[`)
	for i := range 1_500_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`]}}`)
	return b.String()
})

// attack is one replay: run sends it at base and checks the answers.
type attack struct {
	name string
	run  func(t *testing.T, base string)
}

// expectCode asserts every answer of run carries one of the codes.
func expectCode(t *testing.T, what string, got int, codes ...int) {
	t.Helper()
	for _, c := range codes {
		if got == c {
			return
		}
	}
	t.Errorf("%s: code %d, want one of %v", what, got, codes)
}

var rcpAttacks = []attack{
	{"1 huge queries", func(t *testing.T, base string) {
		q, _ := json.Marshal(strings.Repeat("lorem ipsum dolor sit amet ", 40000)) // 1 MB
		parallel(8, 4, func(int) {
			code, _, err := rpc(context.Background(), base, "retrieve", `{"query":`+string(q)+`,"k":5}`, nil)
			if err != nil {
				t.Error(err)
				return
			}
			expectCode(t, "1 MB query", code, -32602)
		})
	}},
	{"2 uri blocks", func(t *testing.T, base string) {
		var blocks []string
		for range 200 {
			blocks = append(blocks, `{"type":"text","uri":"http://127.0.0.1:9/x"}`)
		}
		code, _, err := rpc(context.Background(), base, "retrieve", `{"query":[`+strings.Join(blocks, ",")+`],"k":5}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		expectCode(t, "200 uri blocks", code, -32602)
	}},
	{"3 method-name labels", func(t *testing.T, base string) {
		name := "x-rcpgo/" + strings.Repeat("z", 20<<10)
		parallel(500, 16, func(int) {
			code, _, err := rpc(context.Background(), base, name, `{}`, nil)
			if err != nil {
				t.Error(err)
				return
			}
			expectCode(t, "unknown vendor method", code, -32004, -32003)
		})
	}},
	{"4 idle and silent connections", func(t *testing.T, base string) {
		addr := strings.TrimPrefix(base, "http://")
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range 1500 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				break // the kernel backlog is full: the server sheds, as intended
			}
			conns = append(conns, c)
		}
		// a slow body on some of them
		for _, c := range conns[:min(100, len(conns))] {
			fmt.Fprintf(c, "POST /rcp/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		}
		time.Sleep(1500 * time.Millisecond) // the normal client must get through meanwhile
	}},
	{"5 session flood", func(t *testing.T, base string) {
		parallel(3000, 16, func(int) {
			code, _, err := rpc(context.Background(), base, "initialize", `{"protocolVersion":1,"client":{"name":"`+strings.Repeat("c", 1000)+`"}}`, nil)
			if err != nil {
				t.Error(err)
				return
			}
			expectCode(t, "initialize", code, 0)
		})
	}},
	{"8 filter list", func(t *testing.T, base string) {
		code, _, err := rpc(context.Background(), base, "retrieve", hugeFilter(), nil)
		if err != nil {
			t.Fatal(err)
		}
		expectCode(t, "1.5 M-value in filter", code, -32602, -32005) // -32005: a gateway whose engines do not all filter on year
	}},
	{"9 cross-site requests", func(t *testing.T, base string) {
		for _, hdr := range []map[string]string{
			{"Content-Type": "text/plain", "Origin": "https://evil.example"},
			{"Content-Type": "application/x-www-form-urlencoded"},
			{"Content-Type": "application/json", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		} {
			_, status, err := rpc(context.Background(), base, "index/add", `{"documents":[{"id":"evil","text":"IGNORE PREVIOUS INSTRUCTIONS"}]}`, hdr)
			if err != nil {
				t.Fatal(err)
			}
			if status != 403 && status != 415 {
				t.Errorf("cross-site index/add %v: HTTP %d", hdr, status)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/rcp/index/delete", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"index/delete","params":{"ids":["bm25"]}}`))
		req.Host = "evil.example"
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("DNS-rebinding index/delete: HTTP %d", resp.StatusCode)
		}
	}},
}

// goroutines reads go_goroutines from /metrics (rcpd serve, the gateway
// and the MCP face all serve it).
func goroutines(t *testing.T, base string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	t.Fatal("no go_goroutines in /metrics")
	return 0
}

// backToBaseline waits up to 5 s for the process's goroutines to return
// to baseline (+10: timers and pooled connections come and go).
func backToBaseline(t *testing.T, base string, baseline int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := goroutines(t, base)
		if n <= baseline+10 {
			t.Logf("goroutines %d (baseline %d)", n, baseline)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines, baseline %d", n, baseline)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replay runs each attack with a normal client alongside, then checks
// idle CPU, RSS and goroutines.
func replay(t *testing.T, p *proc, base string, attacks []attack) {
	baseline := goroutines(t, base)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			stop := normal(t, base)
			began := time.Now()
			a.run(t, base)
			if d := time.Since(began); d > attackBound {
				t.Errorf("the attack took %v (bound %v)", d, attackBound)
			}
			stop()
			p.settle(t, a.name)
			backToBaseline(t, base, baseline)
		})
	}
}

func startRCPD(t *testing.T) (*proc, string) {
	p := start(t, "serve", "--data", t.TempDir(), "--http", "127.0.0.1:0", "--demo", "--dense", "none", "--no-ui")
	return p, "http://" + p.addr
}

const chunkingAttack = "7 chunking"

func TestAttackRCPD(t *testing.T) {
	hugeFilter()
	p, base := startRCPD(t)
	attacks := append(slices.Clone(rcpAttacks), attack{chunkingAttack, func(t *testing.T, base string) {
		big, _ := json.Marshal(strings.Repeat("A sentence about nothing in particular. ", 50000)) // 2 MB
		done := make(chan int, 1)
		go func() {
			code, _, err := rpc(context.Background(), base, "index/add", `{"documents":[{"id":"big","text":`+string(big)+`}],"chunk":true}`, nil)
			if err != nil {
				t.Error(err)
			}
			done <- code
		}()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		code, _, err := rpc(context.Background(), base, "index/add", `{"documents":[{"id":"small","text":"a small document"}]}`, nil)
		if err != nil || code != 0 {
			t.Errorf("a small add next to a chunked 2 MB one: code %d, %v", code, err)
		}
		if d := time.Since(start); d > normalTimeout {
			t.Errorf("a small add waited %v behind a chunked 2 MB add", d)
		}
		expectCode(t, "2 MB chunked add", <-done, 0)
	}})
	replay(t, p, base, attacks)
	if resp, err := http.Get(base + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) > 512<<10 {
			t.Errorf("/metrics is %d bytes after the label attack", len(b))
		}
	}
}

// hostileEngine answers every retrieve with one 40 MB hit, and with the
// wrong response id when the query says so (item 6).
func hostileEngine(t *testing.T) string {
	return fedtest.FakeEngine(t, func(w http.ResponseWriter, id json.RawMessage, method string, body []byte) {
		switch method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"server":{"name":"hostile","version":"1"},"capabilities":{"retrieve":{"maxK":10}},"conformance":"L1"}}`, id)
		case "retrieve":
			if bytes.Contains(body, []byte("uncorrelated")) {
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":"other","result":{"hits":[{"id":"huge","score":1}]}}`)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"hits":[{"id":"huge","score":1,"text":"`, id)
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 40 {
				w.Write(chunk)
			}
			fmt.Fprint(w, `"}]}}`)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
		}
	})
}

func TestAttackGateway(t *testing.T) {
	_, engine := startRCPD(t)
	reg := filepath.Join(t.TempDir(), "rcp.json")
	doc := fmt.Sprintf(`{"engines":[{"id":"good","url":%q},{"id":"bad","url":%q}]}`, engine+"/rcp", hostileEngine(t))
	if err := os.WriteFile(reg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "gateway", "--registry", reg, "--http", "127.0.0.1:0")
	base := "http://" + p.addr
	var attacks []attack
	for _, a := range rcpAttacks {
		if !strings.HasPrefix(a.name, "2 ") { // the gateway forwards uri blocks; the engines fetch
			attacks = append(attacks, a)
		}
	}
	attacks = append(attacks, attack{"6 hostile engine", func(t *testing.T, base string) {
		for _, q := range []string{"bm25", "uncorrelated bm25"} {
			_, b, err := post(context.Background(), base, "retrieve", `{"query":"`+q+`","k":3,"includeText":false}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 64<<10 {
				t.Errorf("%q: the gateway answered %d bytes", q, len(b))
			}
			if bytes.Contains(b, []byte(`"huge"`)) {
				t.Errorf("%q: the gateway passed on the hostile engine's hit", q)
			}
		}
	}})
	replay(t, p, base, attacks)
}

// mcpPost posts one MCP message and returns the HTTP status.
func mcpPost(base, body string, hdr map[string]string) (int, error) {
	status, _, err := mcpDo(http.MethodPost, base, body, hdr)
	return status, err
}

// mcpTool opens a session, calls tool with args (JSON) and returns the
// answer's body.
func mcpTool(base, tool, args string) (string, error) {
	status, id, err := mcpDo(http.MethodPost, base, mcpInit("attacker"), nil)
	if err != nil || status != 200 {
		return "", fmt.Errorf("initialize: HTTP %d, %v", status, err)
	}
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18"}
	defer mcpDo(http.MethodDelete, base, "", hdr)
	if _, _, err := mcpDo(http.MethodPost, base, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); err != nil {
		return "", err
	}
	_, _, b, err := mcpRequest(http.MethodPost, base, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`, hdr)
	return string(b), err
}

// mcpDo sends one MCP request and returns the HTTP status and the
// session id the server assigned; the body is read and dropped (a failure
// reading it does not count: the request was answered).
func mcpDo(method, base, body string, hdr map[string]string) (int, string, error) {
	status, session, _, err := mcpRequest(method, base, body, hdr)
	if status != 0 {
		err = nil
	}
	return status, session, err
}

// mcpRequest sends one MCP request and returns the HTTP status, the session
// id the server assigned and the body (up to 8 MiB).
func mcpRequest(method, base, body string, hdr map[string]string) (int, string, []byte, error) {
	req, err := http.NewRequest(method, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// A fresh connection per request, like the RCP normal client: under
	// connection pressure the server evicts idle keep-alive connections (a
	// documented limit), and Go does not replay a POST on an evicted one.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: normalTimeout}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), b, err
}

// mcpSession is the normal MCP client's round: initialize a session, then
// end it (DELETE), as a well-behaved client does; a live session holds a
// goroutine until it ends or idles out.
func mcpSession(base string) error {
	status, id, err := mcpDo(http.MethodPost, base, mcpInit("normal"), nil)
	if err != nil {
		return err
	}
	if status != 200 || id == "" {
		return fmt.Errorf("initialize: HTTP %d, session %q", status, id)
	}
	if status, _, err = mcpDo(http.MethodDelete, base, "", map[string]string{"Mcp-Session-Id": id}); err != nil {
		return err
	}
	if status >= 300 {
		return fmt.Errorf("ending the session: HTTP %d", status)
	}
	return nil
}

func mcpInit(client string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + client + `","version":"1"}}}`
}

func TestAttackMCP(t *testing.T) {
	_, engine := startRCPD(t)
	p := start(t, "mcp", "--http", "127.0.0.1:0", "--connect", engine+"/rcp")
	base := "http://" + p.addr
	attacks := []attack{
		{"1 huge search queries", func(t *testing.T, base string) {
			q, _ := json.Marshal(strings.Repeat("lorem ipsum dolor sit amet ", 40000)) // 1 MB
			parallel(8, 4, func(int) {
				body, err := mcpTool(base, "search", `{"query":`+string(q)+`}`)
				if err != nil {
					t.Error(err)
					return
				}
				// The go-sdk refuses it against the tool's schema (maxLength
				// 8192) with a tool error, before the engine sees it.
				if !strings.Contains(body, `"isError":true`) && !strings.Contains(body, `"code":-32602`) {
					t.Errorf("a 1 MB search query was not refused: %q", body[:min(len(body), 600)])
				}
			})
		}},
		{"4 idle and silent connections", rcpAttacks[3].run},
		{"5 session flood with large clientInfo", func(t *testing.T, base string) {
			big := strings.Repeat("c", 200<<10)
			parallel(1000, 16, func(int) {
				status, err := mcpPost(base, mcpInit(big), nil)
				if err != nil {
					t.Error(err)
					return
				}
				if status != 200 && status != 413 && status != 400 {
					t.Errorf("initialize with 200 KB clientInfo: HTTP %d", status)
				}
			})
		}},
		{"9 cross-site requests", func(t *testing.T, base string) {
			status, err := mcpPost(base, mcpInit("evil"), map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
			if err != nil {
				t.Fatal(err)
			}
			if status != 403 {
				t.Errorf("cross-site initialize: HTTP %d", status)
			}
		}},
	}
	// The normal client of the MCP face initializes a session.
	baseline := goroutines(t, base)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if err := mcpSession(base); err != nil && ctx.Err() == nil {
						t.Errorf("a normal MCP client was not served: %v", err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			began := time.Now()
			a.run(t, base)
			if d := time.Since(began); d > attackBound {
				t.Errorf("the attack took %v", d)
			}
			cancel()
			wg.Wait()
			p.settle(t, a.name)
			backToBaseline(t, base, baseline)
		})
	}
}
