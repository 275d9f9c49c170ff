package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine/internal/graph"
	"github.com/rcpgo/rcpgo/rcp"
)

const graphCrashDirEnv = "RCPGO_GRAPH_CRASH_DIR"

// TestGraphCrashChild is the child of TestGraphCrashSafety: it writes
// (adds, replacements, deletes, chunked documents) with the graph on and
// says ACK after each acknowledged write, until killed.
func TestGraphCrashChild(t *testing.T) {
	dir := os.Getenv(graphCrashDirEnv)
	if dir == "" {
		return
	}
	e, err := Open(context.Background(), Config{Dir: dir, Graph: true, Dense: DenseNone,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(2)
	}
	run := time.Now().UnixNano()
	for step := 0; ; step++ {
		id := fmt.Sprintf("k%d", step%40) // ids recur: replacements
		var err error
		switch {
		case step%9 == 8:
			_, err = e.Call(context.Background(), rcp.MethodIndexDelete, []byte(fmt.Sprintf(`{"ids":[%q]}`, id)))
		default:
			chunk := step%3 == 0
			text := fmt.Sprintf("Zor%dv%d Kelm met Ria%d Voss at dawn. ", step%40, run%1000+int64(step), step%17)
			if chunk {
				text = strings.Repeat(text, 40)
			}
			_, err = e.Call(context.Background(), rcp.MethodIndexAdd,
				[]byte(fmt.Sprintf(`{"documents":[{"id":%q,"text":%q}],"chunk":%v}`, id, text, chunk)))
		}
		if err != nil {
			fmt.Printf("ERR %v\n", err)
			os.Exit(2)
		}
		fmt.Printf("ACK %d\n", step)
	}
}

// TestGraphCrashSafety SIGKILLs a writing rcpd engine (graph on) three
// times; after each restart the graph, once caught up, holds exactly the
// index's documents, each with the nodes its current text yields.
func TestGraphCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGraphCrashChild$")
		cmd.Env = append(os.Environ(), graphCrashDirEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		acks := 0
		for sc.Scan() && acks < 30+round*20 {
			line := sc.Text()
			if strings.HasPrefix(line, "ERR") {
				t.Fatalf("child: %s", line)
			}
			if strings.HasPrefix(line, "ACK") {
				acks++
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if acks == 0 {
			t.Fatal("child acknowledged nothing")
		}
		checkGraphMatchesIndex(t, dir)
	}
}

func checkGraphMatchesIndex(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	e, err := Open(ctx, Config{Dir: dir, Graph: true, Dense: DenseNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	var docs []string
	docs, _ = e.catalog.IDs()
	parents := e.know.Graph().Parents()
	slices.Sort(docs)
	slices.Sort(parents)
	if !slices.Equal(docs, parents) {
		t.Fatalf("graph documents %v, index documents %v", parents, docs)
	}
	for _, d := range docs {
		units, err := e.know.Units(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		got := e.know.Graph().UnitsOf(d)
		if len(got) != len(units) {
			t.Fatalf("%s: graph units %v, index units %d", d, got, len(units))
		}
		for _, u := range units {
			want := graph.Extract(u.Title, u.Text, u.Code)
			var names []string
			for _, m := range want.Nodes {
				if k := graph.Key(m.Name); !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
			have := e.know.Graph().UnitNodes(u.ID)
			for i, n := range have {
				have[i] = graph.Key(n)
			}
			if !slices.Equal(have, names) {
				t.Fatalf("%s: graph nodes %v, text gives %v", u.ID, have, names)
			}
		}
	}
	if n := e.know.Pending(); n != 0 {
		t.Fatalf("%d queue entries left after sync", n)
	}
}
