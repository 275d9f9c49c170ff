//go:build linux

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// Disk-full durability with the graph, the tree (LSA) and feedback on
// (issue 33 acceptance): on a 12 MiB tmpfs, documents and feedback are
// written until the disk refuses (-32010, "no space left on device"),
// writes go on failing cleanly, and after the file system grows and the
// engine reopens every acknowledged document and every acknowledged
// feedback signal is there. Needs root (mount); skipped otherwise.
func TestDiskFullDurability(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root (skipped with -short)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=12m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	ctx := context.Background()
	cfg := treeCrashConfig(dir)
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{}
	fbAcked := map[string]int{}
	full := 0
	r := rand.New(rand.NewPCG(33, 9))
	words := func(n int) string { // incompressible: the store compresses
		var b strings.Builder
		for range n {
			for range 3 + r.IntN(6) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
			b.WriteByte(' ')
		}
		return b.String()
	}
	for i := 0; full < 10 && i < 2000; i++ {
		id := fmt.Sprintf("d%d", i)
		text := "Zor Kelm met Ria Voss. " + words(10000) // ≈ 65 KB
		raw, _ := json.Marshal(rcp.IndexAddParams{Documents: []rcp.Document{{ID: id, Text: text}}})
		if _, err := e.Call(ctx, rcp.MethodIndexAdd, raw); err != nil {
			re, _ := rcp.AsError(err)
			if re == nil || re.Code != rcp.CodeBackendUnavailable {
				t.Fatalf("write %d on a full disk: %v, want -32010", i, err)
			}
			full++
			continue
		}
		acked[id] = text
		if _, err := e.Call(ctx, rcp.MethodFeedback, []byte(`{"signals":[{"hitId":"`+id+`","helpful":true}]}`)); err == nil {
			fbAcked[id]++
		}
	}
	if full == 0 {
		t.Fatal("the disk never filled")
	}
	_ = e.Close()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=256m"); err != nil {
		t.Fatalf("growing the tmpfs: %v", err)
	}
	e, err = Open(ctx, cfg)
	if err != nil {
		t.Fatalf("reopening after the disk filled: %v", err)
	}
	defer e.Close()
	for id, want := range acked {
		d, err := e.ix.Get(ctx, id)
		if err != nil || d == nil || d.Text != want {
			t.Fatalf("acknowledged %s lost after the disk filled: %v", id, err)
		}
	}
	for id, n := range fbAcked {
		if st, _ := e.agentic.Feedback().Stats(id); st.Helpful < n {
			t.Fatalf("acknowledged feedback on %s lost: %d of %d", id, st.Helpful, n)
		}
	}
	t.Logf("%d documents and %d feedback signals acknowledged before the disk filled, %d writes refused: 0 lost", len(acked), len(fbAcked), full)
}
