package mcpcmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
)

// rawChild is `rcpd mcp` spoken to line by line, without an MCP client
// that would refuse to send what hostile peers send.
type rawChild struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan map[string]any
	stderr *syncbuf.Buffer
	exited chan error
}

func startRaw(t *testing.T, args ...string) *rawChild {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &rawChild{t: t, lines: make(chan map[string]any, 1024), stderr: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	c.cmd = exec.Command(exe, append([]string{"mcp-main", "--log-level", "warn"}, args...)...)
	c.cmd.Stderr = c.stderr
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("child stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

func (c *rawChild) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next returns the next message that is not a notification.
func (c *rawChild) next(what string) map[string]any {
	c.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s: stdout closed (process exited)", what)
			}
			if _, isNote := m["method"]; isNote {
				continue
			}
			return m
		case <-timeout:
			c.t.Fatalf("%s: no answer within 20s", what)
		}
	}
}

func (c *rawChild) initialize() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := c.next("initialize"); m["id"] != "init" || m["result"] == nil {
		c.t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	f, _ := e["code"].(float64)
	return int(f)
}

func deepFilter(levels int) string {
	return strings.Repeat(`{"not":`, levels) + `{"field":"lang","op":"eq","value":"en"}` + strings.Repeat(`}`, levels)
}

// TestStdioHostileInput sends what hostile or broken clients send over
// stdio: every line is answered with the right code (or, for responses
// and notifications, not at all), the process keeps serving, and SIGTERM
// stops it within 5 s.
func TestStdioHostileInput(t *testing.T) {
	c := startRaw(t, "--data", t.TempDir(), "--field", "lang=keyword")
	c.initialize()
	search := func(id int, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search","arguments":%s}}`, id, args)
	}
	tests := []struct {
		name string
		line string
		id   any // the answer's id (nil: null)
		code int // 0: a result; -1: a tool error result (isError)
	}{
		{"not JSON", `not json`, nil, -32700},
		{"truncated array", `[1,2`, nil, -32700},
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":"ping"`, nil, -32700},
		{"missing jsonrpc", `{"id":2,"method":"ping"}`, 2.0, -32600},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, 3.0, -32600},
		{"method not a string", `{"jsonrpc":"2.0","id":4,"method":17}`, 4.0, -32600},
		{"id an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil, -32600},
		{"scalar frame", `42`, nil, -32600},
		{"empty batch", `[]`, nil, -32600},
		{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, nil, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"x/nope"}`, 6.0, -32601},
		{"frame 2000 levels deep", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"q","filter":` + deepFilter(2000) + `}}}`, 7.0, -32700},
		{"filter 300 levels deep", search(8, `{"query":"q","filter":`+deepFilter(300)+`}`), 8.0, -32700},
		{"filter 100 levels deep", search(9, `{"query":"q","filter":`+deepFilter(100)+`}`), 9.0, -1},
		{"filter 40 levels deep", search(10, `{"query":"q","filter":`+deepFilter(40)+`}`), 10.0, -1},
		{"empty filter", search(11, `{"query":"q","filter":{}}`), 11.0, -1},
		{"query too long", search(12, `{"query":"`+strings.Repeat("a ", 5000)+`"}`), 12.0, -1},
		{"good search", search(13, `{"query":"q","filter":`+deepFilter(3)+`}`), 13.0, 0},
		{"unknown tool", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, 14.0, -32602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(tt.line)
			m := c.next(tt.name)
			if m["id"] != tt.id {
				t.Errorf("id = %v, want %v (%v)", m["id"], tt.id, m)
			}
			switch tt.code {
			case 0:
				if m["result"] == nil || m["result"].(map[string]any)["isError"] == true {
					t.Errorf("want a result, got %v", m)
				}
			case -1:
				r, _ := m["result"].(map[string]any)
				if r == nil || r["isError"] != true {
					t.Errorf("want a tool error, got %v", m)
				}
			default:
				if errCode(m) != tt.code {
					t.Errorf("code = %d, want %d (%v)", errCode(m), tt.code, m)
				}
			}
		})
	}
	// Answers, notifications and cancellations naming unknown ids get no
	// answer; the next request is answered.
	c.send(`{"jsonrpc":"2.0","id":999,"result":{}}`)
	c.send(`{"jsonrpc":"2.0","id":998,"error":{"code":-1,"message":"x"}}`)
	for i := range 500 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, 10000+i))
	}
	c.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if m := c.next("ping after the storm"); m["id"] != "after" || m["result"] == nil {
		t.Fatalf("ping after the storm: %v", m)
	}

	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
		t.Logf("SIGTERM to exit: %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("rcpd mcp did not exit within 5 s of SIGTERM")
	}
}

// TestStdioAnswersEverythingReadBeforeEOF (issue 16 finding 6): a client
// that writes its requests and closes stdin at once, before the engine has
// even opened, gets every answer.
func TestStdioAnswersEverythingReadBeforeEOF(t *testing.T) {
	c := startRaw(t, "--data", t.TempDir())
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"anything"}}}`)
	c.send(`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`)
	c.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	_ = c.in.Close()
	seen := map[float64]bool{}
	for range 5 {
		m := c.next("answers after EOF")
		id, _ := m["id"].(float64)
		if m["result"] == nil {
			t.Errorf("request %v: %v", m["id"], m)
		}
		seen[id] = true
	}
	if len(seen) != 5 {
		t.Errorf("answered %v, want ids 1..5", seen)
	}
	select {
	case err := <-c.exited:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not exit after answering")
	}
}

// TestStdioTasks: a task-augmented tools/call over stdio (params.task is
// lifted by the stdio transport) creates a task whose result is then read;
// initialize declares the tasks capability.
func TestStdioTasks(t *testing.T) {
	c := startRaw(t, "--data", t.TempDir())
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init := c.next("initialize")
	caps, _ := init["result"].(map[string]any)["capabilities"].(map[string]any)
	if _, ok := caps["tasks"]; !ok {
		t.Fatalf("initialize does not declare tasks: %v", init)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"index_add","arguments":{"documents":[{"id":"a","text":"alpha"}]},"task":{"ttl":60000}}}`)
	created := c.next("task-augmented tools/call")
	task, _ := created["result"].(map[string]any)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":%q}}`, id))
	res := c.next("tasks/result")
	sc, _ := res["result"].(map[string]any)["structuredContent"].(map[string]any)
	if ids, _ := sc["ids"].([]any); len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("tasks/result: %v", res)
	}
}
