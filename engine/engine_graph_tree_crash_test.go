package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

const treeCrashDirEnv = "RCPGO_TREE_CRASH_DIR"

// treeCrashConfig turns on the graph and LSA (so the RAPTOR tree is kept)
// with a fit after 20 units.
func treeCrashConfig(dir string) Config {
	return Config{Dir: dir, Graph: true, MinFitDocs: 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		checkpointEvery: 20 * time.Millisecond}
}

// TestTreeCrashChild is the writer of TestGraphTreeMemoryCrashSafety; it
// does nothing unless started by it. It builds an inline memory ("MEM
// <id>"), then writes (adds, replacements, deletes) announcing each write
// ("BEGIN <json>") and acknowledging it ("ACK <json>"), and saves a tree
// (SyncTree) every 15 writes ("TREE" once one exists), until killed.
func TestTreeCrashChild(t *testing.T) {
	dir := os.Getenv(treeCrashDirEnv)
	if dir == "" {
		return
	}
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	fail := func(err error) {
		fmt.Fprintf(out, "ERR %v\n", err)
		out.Flush()
		os.Exit(2)
	}
	e, err := Open(ctx, treeCrashConfig(dir))
	if err != nil {
		fail(err)
	}
	res, err := e.Call(ctx, rcp.MethodMemoryBuild, []byte(`{"scope":"global","documents":[
		{"id":"m1","text":"Orin Tavash sailed with Bera Quill to Lund."},
		{"id":"m2","text":"Bera Quill founded Lund Harbor with Sefa Marr."}]}`))
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(out, "MEM %s\n", res.(*rcp.MemoryBuildResult).MemoryID)
	out.Flush()
	run := time.Now().UnixNano()
	r := rand.New(rand.NewPCG(uint64(run), 13))
	for step := 0; ; step++ {
		id := fmt.Sprintf("k%d", r.IntN(40)) // ids recur: replacements
		var op crashStep
		var method string
		var params any
		if step%7 == 6 {
			op.Del = []string{id}
			method, params = rcp.MethodIndexDelete, rcp.IndexDeleteParams{IDs: op.Del}
		} else {
			text := fmt.Sprintf("Zor%d Kelm met Ria%d Voss. %s", step%40, step%17, crashText(r))
			op.Add = []crashUnit{{ID: id, Text: text}}
			method, params = rcp.MethodIndexAdd, rcp.IndexAddParams{Documents: []rcp.Document{{ID: id, Text: text}}}
		}
		b, _ := json.Marshal(op)
		fmt.Fprintf(out, "BEGIN %s\n", b)
		out.Flush()
		raw, _ := json.Marshal(params)
		if _, err := e.Call(ctx, method, raw); err != nil {
			fail(err)
		}
		fmt.Fprintf(out, "ACK %s\n", b)
		out.Flush()
		if len(op.Add) > 0 && step%5 == 0 { // feedback on, durably: one helpful signal on the unit just added
			if _, err := e.Call(ctx, rcp.MethodFeedback, []byte(`{"signals":[{"hitId":"`+id+`","helpful":true}]}`)); err != nil {
				fail(err)
			}
			fmt.Fprintf(out, "FBACK %s\n", id)
			out.Flush()
		}
		if step%15 == 14 {
			if err := e.SyncTree(ctx); err != nil {
				fail(err)
			}
			if e.know.Tree().Depth() >= 2 { // saved in tree.snap
				fmt.Fprintln(out, "TREE")
				out.Flush()
			}
		}
	}
}

// TestGraphTreeMemoryCrashSafety (issue 13, acceptance 4): a writer with
// the graph, dense (LSA) and so the RAPTOR tree on is SIGKILLed mid-ingest
// three times. After each restart the tree it saved names, through
// tree-node provenance.leaves, only live units; once caught up it holds
// exactly the index's units (every acknowledged one among them); the
// inline memories built before the kills still recall, naming only their
// own documents; and the global memory (the graph) recalls only documents
// the index holds.
func TestGraphTreeMemoryCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	live := map[string]string{}
	gone := map[string]bool{}
	fbAcked := map[string]int{} // acknowledged helpful signals per unit
	var mems []string
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTreeCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), treeCrashDirEnv+"="+dir)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		// Kill after the second saved tree plus a few writes (round-dependent),
		// so the kill lands mid-ingest with a tree.snap behind the index.
		trees, after := 0, -1
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "MEM "); ok {
				mems = append(mems, id)
				continue
			}
			if id, ok := strings.CutPrefix(line, "FBACK "); ok {
				fbAcked[id]++
				continue
			}
			if line == "TREE" {
				if trees++; trees == 2 {
					after = 3 + 4*round
				}
				continue
			}
			n := applyAck(t, line, live, gone)
			if after >= 0 && n == 1 {
				if after--; after < 0 {
					break
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		// The child wrote on until the kill: its last writes (acknowledged
		// or in flight, ids recur) count too.
		for sc.Scan() {
			line := sc.Text()
			if _, rest, _ := strings.Cut(line, " "); json.Valid([]byte(rest)) { // not a line cut by the kill
				applyAck(t, line, live, gone)
			}
		}
		cmd.Wait()
		if trees < 2 {
			t.Fatalf("round %d: the child saved %d trees before it stopped", round, trees)
		}
		checkTreeAndMemory(t, round, dir, live, gone, mems, fbAcked)
	}
}

func checkTreeAndMemory(t *testing.T, round int, dir string, live map[string]string, gone map[string]bool, mems []string, fbAcked map[string]int) {
	t.Helper()
	ctx := context.Background()
	e, err := Open(ctx, treeCrashConfig(dir))
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer e.Close()
	inIndex := func(id string) bool {
		d, err := e.ix.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return d != nil
	}
	for id := range live {
		if !inIndex(id) {
			t.Fatalf("round %d: acknowledged unit %s missing from the index", round, id)
		}
	}
	for id, n := range fbAcked { // every acknowledged feedback signal survived the kill
		if st, _ := e.agentic.Feedback().Stats(id); st.Helpful < n {
			t.Fatalf("round %d: unit %s holds %d helpful signals, %d were acknowledged", round, id, st.Helpful, n)
		}
	}
	// The saved tree, before any rebuild: its lineages name live units only.
	if e.know.Tree() == nil {
		t.Fatalf("round %d: the saved tree was not loaded", round)
	}
	checkTreeLeaves := func(stage string) {
		for level := 0; level < e.know.Tree().Depth(); level++ {
			hits, _ := retrieveTree(t, e, map[string]any{"query": "Kelm Voss alpha delta kilo", "k": 50, "unit": "tree-node", "level": level})
			if len(hits) == 0 {
				t.Fatalf("round %d %s: no tree-node hits at level %d", round, stage, level)
			}
			for _, h := range hits {
				for _, l := range h.Provenance.Leaves {
					if gone[l] || !inIndex(l) {
						t.Fatalf("round %d %s: tree node %s (level %d) names unit %s, which is not live (deleted and acknowledged %v, in the index %v)",
							round, stage, h.ID, level, l, gone[l], inIndex(l))
					}
				}
			}
		}
	}
	behind := e.know.Tree().Version != e.ix.Version()
	checkTreeLeaves("saved tree")
	// Caught up, the tree holds exactly the index's units.
	settle(t, e)
	if err := e.SyncTree(ctx); err != nil {
		t.Fatal(err)
	}
	tr := e.know.Tree()
	var units []string
	units, _ = e.catalog.IDs()
	if tr.Version != e.ix.Version() || tr.Leaves() != len(units) {
		t.Fatalf("round %d: caught-up tree at %s has %d leaves; index at %s has %d units", round, tr.Version, tr.Leaves(), e.ix.Version(), len(units))
	}
	for _, u := range units {
		if _, ok := tr.NodeOf(1, u); !ok {
			t.Fatalf("round %d: unit %s is not in the caught-up tree", round, u)
		}
	}
	checkTreeLeaves("caught-up tree")
	// Inline memories built before the kills recall, from their own documents.
	for _, m := range mems {
		var r rcp.MemoryRecallResult
		if err := json.Unmarshal(mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"memoryId": m, "query": "Bera Quill"}), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Clues) == 0 || len(r.Hits) == 0 {
			t.Fatalf("round %d: memory %s recalls clues %v hits %v after restart", round, m, r.Clues, r.Hits)
		}
		for _, h := range r.Hits {
			if id := h.ID.String(); id != "m1" && id != "m2" {
				t.Fatalf("round %d: memory %s recalls document %s it was not built from", round, m, id)
			}
		}
	}
	// The global memory recalls only documents the index holds.
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	var r rcp.MemoryRecallResult
	query := live[slices.Sorted(maps.Keys(live))[0]]
	if err := json.Unmarshal(mustCall(t, e, rcp.MethodMemoryRecall, map[string]any{"query": query, "n": 20}), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) == 0 {
		t.Fatalf("round %d: global memory recalls nothing for %q", round, query)
	}
	for _, h := range r.Hits {
		if id := h.ID.String(); gone[id] || !inIndex(id) {
			t.Fatalf("round %d: global memory recalls %s, which is not in the index", round, id)
		}
	}
	t.Logf("round %d: %d live units, %d acknowledged, %d units with acknowledged feedback, saved tree behind the index %v, tree depth %d, %d memories",
		round, len(units), len(live), len(fbAcked), behind, tr.Depth(), len(mems))
}
