package benchcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/bench"
	"github.com/rcpgo/rcpgo/rcp"
)

func TestBench(t *testing.T) {
	dialed := map[string]bool{}
	dial := func(ctx context.Context, addr string) (bench.Caller, func() error, error) {
		if addr == "bad" {
			return nil, nil, errors.New("refused")
		}
		dialed[addr] = true
		return bench.CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}), func() error { return nil }, nil
	}
	var out, errb bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code := Main([]string{"-target", "old=:1", "-target", "new=:2", "-workload", "mixed", "-mix", "ping:1,retrieve:2,index:1",
		"-n", "200", "-c", "2", "-gen-docs", "500", "-opts", `{"mode":"hybrid"}`, "-json", jsonPath}, &out, &errb, dial)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !dialed[":1"] || !dialed[":2"] || !strings.Contains(out.String(), "A/B") || !strings.Contains(out.String(), "new") {
		t.Fatalf("stdout:\n%s", out.String())
	}
	b, err := os.ReadFile(jsonPath)
	var res bench.Result
	if err != nil || json.Unmarshal(b, &res) != nil || res.Operations != 200 || len(res.Targets) != 2 {
		t.Fatalf("json %s: %v", b, err)
	}
	if !strings.Contains(errb.String(), "200/200 ops") {
		t.Fatalf("no progress line on stderr: %q", errb.String())
	}
	for _, bad := range [][]string{{}, {"-target", ":1", "-workload", "nope"}, {"-target", ":1", "-opts", "{"},
		{"-target", ":1", "-workload", "mixed", "-mix", "ping:x"}} {
		if code := Main(bad, &out, &errb, dial); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", bad, code)
		}
	}
	if code := Main([]string{"-target", "bad", "-n", "1"}, &out, &errb, dial); code != 1 {
		t.Errorf("dial failure exit %d", code)
	}
	out.Reset()
	if code := Main([]string{"-target", ":1", "-n", "5", "-json", "-", "-quiet"}, &out, &errb, dial); code != 0 || !json.Valid(out.Bytes()) {
		t.Errorf("-json - : %d %q", code, out.String())
	}
}

func TestMainBatchSweep(t *testing.T) {
	sizes := map[int]int{}
	dial := func(ctx context.Context, addr string) (bench.Caller, func() error, error) {
		return bench.CallerFunc(func(ctx context.Context, method string, params any) (json.RawMessage, error) {
			if p, ok := params.(rcp.IndexAddParams); ok {
				sizes[len(p.Documents)]++
			}
			return json.RawMessage(`{}`), nil
		}), nil, nil
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"-target", ":1", "-workload", "index", "-batch", "4,16", "-n", "10", "-c", "1", "-gen-docs", "100", "-json", "-", "-quiet"}, &out, &errb, dial); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var results []bench.Result
	if err := json.Unmarshal(out.Bytes(), &results); err != nil || len(results) != 2 || results[1].Workload != "index(batch=16)" {
		t.Fatalf("%s: %v", out.String(), err)
	}
	if sizes[4] != 10 || sizes[16] != 10 || results[1].Targets[0].ItemsPerSec <= results[1].Targets[0].Throughput {
		t.Fatalf("batch sizes %v, %+v", sizes, results[1].Targets[0])
	}
	if code := Main([]string{"-target", ":1", "-workload", "ping", "-batch", "4,16"}, &out, &errb, dial); code != 2 {
		t.Fatalf("sweep without index: exit %d", code)
	}
}

func TestGen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var out, errb bytes.Buffer
	code := Gen([]string{"-seed", "9", "-docs", "1000", "-queries", "20", "-out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var st map[string]any
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st["docs"] != 1000.0 {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "qrels", "test.tsv")); err != nil {
		t.Fatal(err)
	}
	mh := filepath.Join(t.TempDir(), "mh")
	out.Reset()
	if code := Gen([]string{"-multihop", "-docs", "300", "-queries", "20", "-out", mh}, &out, &errb); code != 0 {
		t.Fatalf("multihop exit %d: %s", code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st["queries"] != 20.0 {
		t.Fatalf("multihop stdout %q: %v", out.String(), err)
	}
	if Gen([]string{"-multihop", "-docs", "10", "-queries", "20", "-out", mh}, &out, &errb) != 2 {
		t.Fatal("multihop with too few documents accepted")
	}
	if Gen([]string{"-docs", "x"}, &out, &errb) != 2 {
		t.Fatal("bad flag accepted")
	}
}
