package index

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/search"
)

const (
	crashDirEnv  = "RCPGO_CRASH_DIR"
	crashSeedEnv = "RCPGO_CRASH_SEED"
)

// crashOp is one write of the crash child, announced before it runs and
// acknowledged after it returns.
type crashOp struct {
	Add []crashDoc `json:"add,omitempty"`
	Del []string   `json:"del,omitempty"`
}

type crashDoc struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// TestCrashChild is the child process of TestCrashSafety; it does nothing
// unless started by it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		return
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	ctx := context.Background()
	// Small thresholds so flushes and merges run while we are killed.
	// A small DictAfter: the store trains compression dictionaries (and
	// rewrites records with them) while we are killed.
	// CompactQuiet: compaction does not wait for the writes to pause.
	ix, err := Open(ctx, dir, Options{FlushDocs: 40, MaxMemSegments: 4, MergeFactor: 3, FlushAfter: 5 * time.Millisecond, DictAfter: 60,
		CompactQuiet: time.Nanosecond})
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	say("OPEN")
	r := rand.New(rand.NewPCG(seed, 99))
	var mine []string
	for step := 0; ; step++ {
		var op crashOp
		switch {
		case step%5 == 4 && len(mine) > 2:
			op.Del = []string{mine[r.IntN(len(mine))], mine[r.IntN(len(mine))]}
		case step%7 == 6 && len(mine) > 0:
			id := mine[r.IntN(len(mine))]
			op.Add = []crashDoc{{ID: id, Token: fmt.Sprintf("upd%dx%d", seed, step)}}
		default:
			for i := range 1 + r.IntN(20) {
				id := fmt.Sprintf("t%d-%d-%d", seed, step, i)
				op.Add = append(op.Add, crashDoc{ID: id, Token: fmt.Sprintf("tok%dx%dx%d", seed, step, i)})
			}
		}
		b, _ := json.Marshal(op)
		say("BEGIN %s", b)
		if len(op.Del) > 0 {
			if _, err := ix.Delete(ctx, op.Del); err != nil {
				say("ERR %v", err)
				os.Exit(2)
			}
		} else {
			docs := make([]search.Document, len(op.Add))
			for i, d := range op.Add {
				docs[i] = search.Document{ID: d.ID, Title: "crash test " + d.Token, Text: strings.Repeat("filler words about aerodynamics ", 1+r.IntN(8)) + d.Token,
					Meta: map[string]any{"step": step}}
			}
			if _, err := ix.Add(ctx, docs); err != nil {
				say("ERR %v", err)
				os.Exit(2)
			}
			for _, d := range op.Add {
				if !slices.Contains(mine, d.ID) {
					mine = append(mine, d.ID)
				}
			}
		}
		say("ACK")
	}
}

// TestCrashSafety runs a writer child process, SIGKILLs it at random
// points, and checks after each restart that every acknowledged write is
// there, that nothing half-written is visible and that the index opens.
//
// RCPGO_CRASH_TRIALS raises the number of trials (default 20).
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes and reopens the index many times; skipped with -short")
	}
	trials := 20
	if n, err := strconv.Atoi(os.Getenv("RCPGO_CRASH_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	dir := t.TempDir()
	model := map[string]string{} // live id → token
	r := rand.New(rand.NewPCG(2024, 7))
	for trial := 0; trial < trials; trial++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.Itoa(trial))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := r.IntN(12) // acknowledged writes before the kill
		if trial%6 == 0 {
			killAfter = -1 // kill while it opens (recovery, replay)
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var inflight *crashOp
		acks := 0
		if killAfter < 0 {
			time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		} else {
			for acks <= killAfter && sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "BEGIN "):
					inflight = new(crashOp)
					if err := json.Unmarshal([]byte(line[6:]), inflight); err != nil {
						t.Fatalf("child: %q: %v", line, err)
					}
				case line == "ACK":
					applyOp(model, inflight)
					inflight = nil
					acks++
				case strings.HasPrefix(line, "ERR"):
					t.Fatalf("trial %d: child: %s", trial, line)
				}
			}
			time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		// Drain what the child printed before dying: an ACK there is binding.
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "BEGIN "):
				inflight = new(crashOp)
				json.Unmarshal([]byte(line[6:]), inflight)
			case line == "ACK":
				applyOp(model, inflight)
				inflight = nil
				acks++
			}
		}
		cmd.Wait()
		verifyCrashState(t, trial, dir, model, inflight)
		t.Logf("trial %d: %d acknowledged writes, %d live docs, in flight: %v", trial, acks, len(model), inflight != nil)
	}
}

func applyOp(model map[string]string, op *crashOp) {
	if op == nil {
		return
	}
	for _, id := range op.Del {
		delete(model, id)
	}
	for _, d := range op.Add {
		model[d.ID] = d.Token
	}
}

// verifyCrashState opens the index and checks it against the model; the
// in-flight operation may or may not have happened, but wholly. On return
// the model reflects what the index holds.
func verifyCrashState(t *testing.T, trial int, dir string, model map[string]string, inflight *crashOp) {
	t.Helper()
	ctx := context.Background()
	ix, err := Open(ctx, dir, Options{NoBackground: true})
	if err != nil {
		t.Fatalf("trial %d: reopen: %v", trial, err)
	}
	defer ix.Close()
	t.Logf("trial %d: store dictionaries %v", trial, ix.st.Dictionaries())
	state := func(id string) (string, bool) {
		d, err := ix.Get(ctx, id)
		if err != nil {
			t.Fatalf("trial %d: get %s: %v", trial, id, err)
		}
		if d == nil {
			return "", false
		}
		f := strings.Fields(d.Text)
		return f[len(f)-1], true
	}
	if inflight != nil {
		after := map[string]string{}
		for id, tok := range model {
			after[id] = tok
		}
		applyOp(after, inflight)
		applied, notApplied := true, true
		for _, id := range slices.Concat(inflight.Del, idsOf(inflight.Add)) {
			tok, ok := state(id)
			wantTok, wantOK := after[id]
			if tok != wantTok || ok != wantOK {
				applied = false
			}
			wantTok, wantOK = model[id]
			if tok != wantTok || ok != wantOK {
				notApplied = false
			}
		}
		switch {
		case applied:
			applyOp(model, inflight)
		case notApplied:
		default:
			t.Fatalf("trial %d: in-flight operation half applied: %+v", trial, inflight)
		}
	}
	for id, tok := range model {
		got, ok := state(id)
		if !ok || got != tok {
			t.Fatalf("trial %d: acknowledged doc %s: got %q (present %v), want %q", trial, id, got, ok, tok)
		}
		res, err := ix.Search(ctx, search.Query{Text: tok, K: 3, SkipDocs: true})
		if err != nil {
			t.Fatalf("trial %d: search: %v", trial, err)
		}
		if len(res.Hits) != 1 || res.Hits[0].ID != id {
			t.Fatalf("trial %d: search %q: %q, want [%s]", trial, tok, hitIDs(res), id)
		}
	}
	if st := ix.Stats(); st.Docs != len(model) {
		t.Fatalf("trial %d: index has %d live docs, model %d", trial, st.Docs, len(model))
	}
}

func idsOf(docs []crashDoc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}
