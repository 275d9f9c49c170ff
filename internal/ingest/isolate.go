package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// Isolated extracts uploads in a child process, as servers that parse
// hostile formats do: whatever the parser does with a file (the PDF
// parser is a third-party package whose loops and allocations this
// package bounds only from outside), the child is killed at its deadline
// or when its resident set passes MaxRSS, its answer is read up to a
// bound, and the server's own memory and CPU are never involved. The
// child runs ChildMain (rcpd: the hidden "rcpd extract" command).
type Isolated struct {
	// Argv is the child's command line; the file's name is appended.
	Argv []string
	// Env is added to the child's environment.
	Env []string
	// Timeout bounds one extraction (default 10 s); MaxRSS the child's
	// resident set (default 512 MiB; the child also runs with GOMEMLIMIT
	// at half of it and GOMAXPROCS=1).
	Timeout time.Duration
	MaxRSS  int64
}

// ErrIsolation reports a child that had to be stopped.
var ErrIsolation = errors.New("extraction stopped")

// ReadUpload is ReadUpload run in a child process.
func (x Isolated) ReadUpload(ctx context.Context, name string, b []byte) ([]rcp.Document, error) {
	timeout, maxRSS := x.Timeout, x.MaxRSS
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if maxRSS <= 0 {
		maxRSS = 512 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.Argv[0], append(x.Argv[1:], name)...)
	cmd.Env = append(append(os.Environ(), x.Env...), "GOMAXPROCS=1", "GOMEMLIMIT="+strconv.FormatInt(maxRSS/2, 10))
	cmd.Stdin = bytes.NewReader(b)
	out := &capped{max: 2*MaxTextBytes + 1<<20}
	errb := &capped{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errb
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ingest: starting the extractor: %w", err)
	}
	over := make(chan int64, 1)
	go watchRSS(ctx, cmd.Process.Pid, maxRSS, over, cancel)
	err := cmd.Wait()
	select {
	case rss := <-over:
		return nil, fmt.Errorf("ingest: %s: %w: the extractor used more than %d bytes of memory (%d)", name, ErrIsolation, maxRSS, rss)
	default:
	}
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("ingest: %s: %w after %v: %w", name, ErrIsolation, timeout, ctx.Err())
	case out.over:
		return nil, fmt.Errorf("ingest: %s: %w: more than %d bytes of text", name, ErrTooLarge, MaxTextBytes)
	case err != nil:
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New(msg)
	}
	var docs []rcp.Document
	if err := json.Unmarshal(out.Bytes(), &docs); err != nil {
		return nil, fmt.Errorf("ingest: %s: the extractor's answer: %w", name, err)
	}
	return docs, nil
}

// ChildMain is the child of Isolated: it extracts the file read from
// stdin as name and writes its documents as JSON to stdout, or the error
// to stderr (exit status 1 from the caller).
func ChildMain(ctx context.Context, name string, stdin io.Reader, stdout io.Writer) error {
	b, err := io.ReadAll(io.LimitReader(stdin, MaxFileBytes+1))
	if err != nil {
		return err
	}
	if len(b) > MaxFileBytes {
		return fmt.Errorf("ingest: %s exceeds %d bytes", name, int64(MaxFileBytes))
	}
	docs, err := ReadUpload(ctx, name, b)
	if err != nil {
		return err
	}
	if docs == nil {
		docs = []rcp.Document{}
	}
	return json.NewEncoder(stdout).Encode(docs)
}

// watchRSS stops the child (stop) when its resident set passes max,
// reporting it on over; it polls every 50 ms until ctx ends.
func watchRSS(ctx context.Context, pid int, max int64, over chan<- int64, stop func()) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rss := residentBytes(pid); rss > max {
			over <- rss
			stop()
			return
		}
	}
}

// residentBytes reads VmRSS of pid from /proc (0 where there is none).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// capped keeps up to max bytes and notes whether more came.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		c.over = true
		return 0, errors.New("too much output")
	}
	return c.Buffer.Write(p)
}
