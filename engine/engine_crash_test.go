package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

const (
	denseCrashDirEnv  = "RCPGO_DENSE_CRASH_DIR"
	denseCrashSeedEnv = "RCPGO_DENSE_CRASH_SEED"
)

// crashVocabulary is shared by every crash document, so LSA keeps the
// words (MinDF 2) and every document has a non-zero vector.
var crashVocabulary = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
	mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basalt
	cobalt dune ember fjord glacier harbor island jungle kelp lagoon meadow nebula orchid prairie quartz`)

func crashText(r *rand.Rand) string {
	w := make([]string, 10)
	for i := range w {
		w[i] = crashVocabulary[r.IntN(len(crashVocabulary))]
	}
	return strings.Join(w, " ")
}

func crashConfig(dir string) Config {
	return Config{Dir: dir, MinFitDocs: 20, Fields: map[string]string{"doc": "keyword"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), checkpointEvery: 20 * time.Millisecond}
}

// TestDenseCrashChild is the writer of TestDenseCrashSafety; it does
// nothing unless started by it. It prints "ACK <json>" after every
// acknowledged index/add or index/delete.
func TestDenseCrashChild(t *testing.T) {
	dir := os.Getenv(denseCrashDirEnv)
	if dir == "" {
		return
	}
	seed, _ := strconv.ParseUint(os.Getenv(denseCrashSeedEnv), 10, 64)
	ctx := context.Background()
	e, err := Open(ctx, crashConfig(dir))
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "OPEN")
	out.Flush()
	r := rand.New(rand.NewPCG(seed, 3))
	var mine []string
	for step := 0; ; step++ {
		var op crashStep
		var method string
		var params any
		if step%6 == 5 && len(mine) > 0 {
			op.Del = []string{mine[r.IntN(len(mine))]}
			method, params = rcp.MethodIndexDelete, rcp.IndexDeleteParams{IDs: op.Del}
		} else {
			var add rcp.IndexAddParams
			for i := range 1 + r.IntN(15) {
				id := fmt.Sprintf("s%d-%d-%d", seed, step, i)
				text := crashText(r)
				op.Add = append(op.Add, crashUnit{ID: id, Text: text})
				add.Documents = append(add.Documents, rcp.Document{ID: id, Text: text, Meta: map[string]any{"doc": id}})
				mine = append(mine, id)
			}
			method, params = rcp.MethodIndexAdd, add
		}
		// BEGIN announces the write: if the child dies before its ACK, the
		// write may or may not have happened.
		b, _ := json.Marshal(op)
		fmt.Fprintf(out, "BEGIN %s\n", b)
		out.Flush()
		raw, _ := json.Marshal(params)
		_, err = e.Call(ctx, method, raw)
		if err != nil {
			fmt.Fprintf(out, "ERR %v\n", err)
			out.Flush()
			os.Exit(2)
		}
		fmt.Fprintf(out, "ACK %s\n", b)
		out.Flush()
	}
}

type crashUnit struct{ ID, Text string }

type crashStep struct {
	Add []crashUnit `json:",omitempty"`
	Del []string    `json:",omitempty"`
}

// TestDenseCrashSafety (issue 15, acceptance 6): a writer with dense on
// (LSA fits, refits, checkpoints and op replay all running) is SIGKILLed at
// random points; after every restart each acknowledged unit is found by a
// dense retrieve of its own text (filtered to it), and no deleted one is.
//
// RCPGO_CRASH_TRIALS raises the number of trials (default 3).
func TestDenseCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes and reopens the engine many times; skipped with -short")
	}
	trials := 3
	if n, err := strconv.Atoi(os.Getenv("RCPGO_CRASH_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	dir := t.TempDir()
	live := map[string]string{} // acknowledged id → text
	gone := map[string]bool{}
	r := rand.New(rand.NewPCG(15, 6))
	for trial := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDenseCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), denseCrashDirEnv+"="+dir, denseCrashSeedEnv+"="+strconv.Itoa(trial))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acks := make(chan string)
		go func() {
			defer close(acks)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				acks <- sc.Text()
			}
		}()
		// Most trials are killed while ingesting (fits, refits, checkpoints
		// and replay running), every fourth one while it opens.
		delay := time.Duration(50+r.IntN(700)) * time.Millisecond
		var kill <-chan time.Time
		if trial%4 == 3 {
			kill = time.After(time.Duration(r.IntN(40)) * time.Millisecond)
		}
		n := 0
	read:
		for {
			select {
			case line, ok := <-acks:
				if !ok {
					break read
				}
				if line == "OPEN" && kill == nil {
					kill = time.After(delay)
				}
				n += applyAck(t, line, live, gone)
			case <-kill:
				cmd.Process.Signal(syscall.SIGKILL)
				kill = make(chan time.Time) // never again
			}
		}
		cmd.Wait()
		checkDenseState(t, trial, dir, live, gone)
		t.Logf("trial %d: %d acknowledged writes, %d live units", trial, n, len(live))
	}
}

// applyAck applies an acknowledged write to the model. A write announced
// but not acknowledged (the child died in it) makes its units uncertain:
// they are checked neither way.
func applyAck(t *testing.T, line string, live map[string]string, gone map[string]bool) int {
	t.Helper()
	if strings.HasPrefix(line, "ERR") {
		t.Fatalf("child: %s", line)
	}
	var op crashStep
	if rest, ok := strings.CutPrefix(line, "BEGIN "); ok {
		if err := json.Unmarshal([]byte(rest), &op); err != nil {
			t.Fatalf("child: %q: %v", line, err)
		}
		// A write in flight may or may not land: its ids are neither
		// required live nor required gone.
		for _, id := range op.Del {
			delete(live, id)
		}
		for _, u := range op.Add {
			delete(gone, u.ID)
		}
		return 0
	}
	rest, ok := strings.CutPrefix(line, "ACK ")
	if !ok {
		return 0
	}
	if err := json.Unmarshal([]byte(rest), &op); err != nil {
		t.Fatalf("child: %q: %v", line, err)
	}
	for _, u := range op.Add {
		live[u.ID] = u.Text
		delete(gone, u.ID)
	}
	for _, id := range op.Del {
		delete(live, id)
		gone[id] = true
	}
	return 1
}

// checkDenseState reopens dir, waits for the replay, and checks every
// acknowledged unit through dense retrieval.
func checkDenseState(t *testing.T, trial int, dir string, live map[string]string, gone map[string]bool) {
	t.Helper()
	e, err := Open(context.Background(), crashConfig(dir))
	if err != nil {
		t.Fatalf("trial %d: reopen: %v", trial, err)
	}
	defer e.Close()
	start := time.Now()
	settle(t, e)
	t.Logf("trial %d: replay took %v", trial, time.Since(start))
	if len(live) < 20 {
		return // below MinFitDocs there may be no generation yet
	}
	found := func(id, text string) bool {
		raw, _ := json.Marshal(map[string]any{"query": text, "k": 1, "mode": "dense",
			"filter": map[string]any{"field": "doc", "op": "eq", "value": id}, "includeText": false})
		res, err := e.Call(context.Background(), rcp.MethodRetrieve, raw)
		if err != nil {
			t.Fatalf("trial %d: dense retrieve %s: %v", trial, id, err)
		}
		r := res.(*rcp.RetrieveResult)
		return len(r.Hits) == 1 && r.Hits[0].ID.String() == id
	}
	missing := 0
	for id, text := range live {
		if !found(id, text) {
			missing++
			if missing <= 5 {
				t.Errorf("trial %d: acknowledged unit %s is not found by dense retrieval (%s)", trial, id, e.denseState(id))
			}
		}
	}
	for id := range gone {
		if found(id, "alpha bravo") {
			t.Errorf("trial %d: deleted unit %s is still found", trial, id)
		}
	}
	if missing > 0 {
		t.Fatalf("trial %d: %d of %d acknowledged units missing from the dense index", trial, missing, len(live))
	}
}

// denseState describes id's dense state (for failure messages).
func (e *Engine) denseState(id string) string {
	g := e.published()
	if g == nil {
		return "no generation"
	}
	vs, _ := e.dense.Recall(g, nil).Vectors(context.Background(), []string{id})
	doc, _ := e.ix.Get(context.Background(), id)
	return fmt.Sprintf("generation %d %s, applied %d, zero vector %v, in index %v", g.N(), g.Identity(), g.Applied(),
		!slices.ContainsFunc(vs[0], func(x float32) bool { return x != 0 }), doc != nil)
}
