// Command restart measures how fast rcpd comes back on an existing data
// directory (issue 15, acceptance 1): it execs `rcpd serve --http` on a
// free loopback port, polls a bare ping (no session) every 2 ms until one
// is answered, then connects (initialize) and pings, then sends one
// retrieve (hybrid by default; retried while the dense side is still
// loading, as a client would) and reports the three times from the exec.
// rcpd is stopped with SIGTERM afterwards. With -crash it first starts
// rcpd once, waits until a session's ping is answered (the engine is open)
// and -crash-after more, and SIGKILLs it: the times are then those of a
// recovery from an unclean stop.
//
//	restart -rcpd ./rcpd -data DIR [-mode hybrid] [-query "…"] [-crash] [-- extra rcpd flags]
//
// It prints the times as JSON (milliseconds).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rcpgo/rcpgo/internal/childproc"
	"github.com/rcpgo/rcpgo/rcp"
)

func main() {
	bin := flag.String("rcpd", "rcpd", "rcpd binary")
	data := flag.String("data", "", "rcpd data directory (required)")
	mode := flag.String("mode", rcp.ModeHybrid, "mode of the first retrieve")
	query := flag.String("query", "retrieval of passages", "query of the first retrieve")
	limit := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	crashFirst := flag.Bool("crash", false, "SIGKILL a first rcpd once its engine is open, then measure the restart")
	crashAfter := flag.Duration("crash-after", 2*time.Second, "with -crash: how long the first rcpd runs after its engine is open")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "restart: -data is required")
		os.Exit(2)
	}
	if *crashFirst {
		if err := crash(*bin, *data, *crashAfter, *limit, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "restart:", err)
			os.Exit(1)
		}
	}
	res, err := run(*bin, *data, *mode, *query, *limit, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "restart:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

type result struct {
	// BarePingMs: the first ping answered outside a session (the server
	// answers it itself); PingMs: the first initialize + ping.
	BarePingMs float64 `json:"firstBarePingMs"`
	PingMs     float64 `json:"firstPingMs"`
	RetrieveMs float64 `json:"firstRetrieveMs"`
	Mode       string  `json:"mode"`
	Hits       int     `json:"hits"`
	Retries    int     `json:"retrieveRetries"`
}

// launch execs `rcpd serve --http` on a free loopback port and returns it
// with the URL of its RCP endpoint, relaying its log to stderr.
func launch(bin, data string, extra []string) (*exec.Cmd, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	args := append([]string{"serve", "--http", "127.0.0.1:" + strconv.Itoa(port), "--data", data, "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	go relay(stderr)
	return cmd, "http://127.0.0.1:" + strconv.Itoa(port) + "/rcp", nil
}

// crash starts rcpd, waits until a session's ping is answered and then
// for after, and SIGKILLs it.
func crash(bin, data string, after, limit time.Duration, extra []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd, url, err := launch(bin, data, extra)
	if err != nil {
		return err
	}
	c, err := firstPing(ctx, url)
	if err == nil {
		c.Close()
		time.Sleep(after)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return err
}

func run(bin, data, mode, query string, limit time.Duration, extra []string) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	cmd, url, err := launch(bin, data, extra)
	if err != nil {
		return nil, err
	}
	defer childproc.Stop(cmd, syscall.SIGTERM, 30*time.Second)
	if err := barePing(ctx, url); err != nil {
		return nil, err
	}
	res := &result{BarePingMs: ms(time.Since(start)), Mode: mode}
	c, err := firstPing(ctx, url)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res.PingMs = ms(time.Since(start))
	for {
		r, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(query), K: 10, Mode: mode})
		var re *rcp.Error
		if errors.As(err, &re) && re.Code == rcp.CodeOptionUnsupported && ctx.Err() == nil {
			// The session predates the dense side: a new one sees it.
			res.Retries++
			c.Close()
			time.Sleep(2 * time.Millisecond)
			if c, err = firstPing(ctx, url); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("first %s retrieve: %w", mode, err)
		}
		res.RetrieveMs, res.Hits = ms(time.Since(start)), len(r.Hits)
		return res, nil
	}
}

// barePing posts a ping outside any session until rcpd answers one, every
// 2 ms.
func barePing(ctx context.Context, url string) error {
	const body = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			ok := resp.StatusCode == http.StatusOK
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if ok {
				return nil
			}
			err = fmt.Errorf("ping: %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no bare ping answered: %w", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// firstPing connects and pings until rcpd answers, every 2 ms.
func firstPing(ctx context.Context, url string) (*rcp.Client, error) {
	for {
		c, err := rcp.ConnectHTTP(ctx, url, nil)
		if err == nil {
			if _, err = c.Ping(ctx, nil); err == nil {
				return c, nil
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no ping answered: %w", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// relay copies rcpd's log to stderr.
func relay(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fmt.Fprintln(os.Stderr, "rcpd:", sc.Text())
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
