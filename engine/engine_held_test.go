package engine

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// TestHeldDirectoryNamesHolder (issue 34, finding 3): a held data directory
// names its holder — PID, what it is and where it answers — to a second
// Open and to HeldBy; a snapshot copy tells clients why it is read-only,
// in the x-rcpgo capability and in the refusal of a write.
func TestHeldDirectoryNamesHolder(t *testing.T) {
	ctx := context.Background()
	a := newEngine(t, func(c *Config) {
		c.Holder = Holder{What: "rcpd serve", URL: "http://127.0.0.1:7700/rcp"}
		c.MaxRequestBytes = 16 << 20
	})
	dir := a.cfg.Dir
	want := "rcpd serve (PID " + itoa(os.Getpid()) + ", http://127.0.0.1:7700/rcp)"
	_, err := Open(ctx, Config{Dir: dir})
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second open: %v, want ErrLocked naming %s", err, want)
	}
	if h, held := HeldBy(dir); !held || h.String() != want {
		t.Fatalf("HeldBy = %v %v, want %s", h, held, want)
	}
	if _, held := HeldBy(t.TempDir()); held {
		t.Fatal("HeldBy: a fresh directory is held")
	}
	caps := a.Describe(ctx).Capabilities
	v, _ := rcp.ReadRCPGoCap(&caps)
	if v == nil || v.ReadOnly != "" || v.Limits == nil || v.Limits.RequestBytes != 16<<20 || v.Limits.AddDocuments != DefaultMaxAddDocs {
		t.Fatalf("writable engine's x-rcpgo: %+v", v)
	}

	b, err := Open(ctx, Config{Dir: dir, Fields: demoFields, SnapshotIfLocked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	caps = b.Describe(ctx).Capabilities
	v, _ = rcp.ReadRCPGoCap(&caps)
	if v == nil || !strings.Contains(v.ReadOnly, "read-only snapshot of "+dir) || !strings.Contains(v.ReadOnly, want) {
		t.Fatalf("snapshot's x-rcpgo readOnly %+v: want the directory and its holder", v)
	}
	// The engine's own refusal, and an SDK client's gate.
	for _, m := range []string{rcp.MethodIndexAdd, rcp.MethodIndexDelete} {
		_, re := call(t, b, m, `{"documents":[{"text":"x"}],"ids":["x"]}`)
		if re == nil || re.Code != rcp.CodeCapabilityMissing || !strings.Contains(re.Message, "read-only snapshot of "+dir) {
			t.Errorf("%s on the snapshot: %v, want -32003 saying why", m, re)
		}
	}
	c, err := rcp.ConnectInProcess(ctx, rcp.NewServer(b, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.IndexAdd(ctx, &rcp.IndexAddParams{Documents: []rcp.Document{{Text: "x"}}})
	if re, ok := rcp.AsError(err); !ok || re.Code != rcp.CodeCapabilityMissing || !strings.Contains(re.Message, "read-only snapshot of "+dir) {
		t.Errorf("client index/add on the snapshot: %v, want -32003 saying why", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
