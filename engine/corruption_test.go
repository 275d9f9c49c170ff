package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/rcp"
)

// TestCorruptionEveryFile damages every file of a data directory in three
// ways (a 64-byte flip in the middle, truncation to half, deletion) and
// reopens it: the engine either refuses to open with an error naming the
// damaged file, or opens and then either passes the checks it runs after
// opening with every acknowledged document retrievable, or fails them
// naming the file and refuses every request from then on (damagedRefused).
// Nothing panics or faults (the test process would die).
func TestCorruptionEveryFile(t *testing.T) {
	for _, dense := range []string{DenseNone, DenseLSA} {
		t.Run(dense, func(t *testing.T) { corruptEveryFile(t, dense) })
	}
}

func corruptEveryFile(t *testing.T, dense string) {
	pristine := t.TempDir()
	const n = 40
	open := func(dir string) (*Engine, error) {
		cfg := Config{Dir: dir, Dense: dense}
		cfg.IndexOpts.NoBackground = true
		return Open(context.Background(), cfg)
	}
	e, err := open(pristine)
	if err != nil {
		t.Fatal(err)
	}
	add := func(from, to int) {
		var docs []any
		for i := from; i < to; i++ {
			docs = append(docs, map[string]any{"id": fmt.Sprintf("d%d", i), "text": fmt.Sprintf("document number %d about topic%d", i, i)})
		}
		if _, rerr := call(t, e, rcp.MethodIndexAdd, map[string]any{"documents": docs}); rerr != nil {
			t.Fatal(rerr)
		}
	}
	add(0, n/2)
	if err := e.ix.(*index.Index).Flush(context.Background()); err != nil { // some documents in segments,
		t.Fatal(err)
	}
	add(n/2, n) // the rest only in the store (replayed at open)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	var files []string
	_ = filepath.WalkDir(pristine, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(pristine, p)
			files = append(files, rel)
		}
		return nil
	})
	if len(files) < 4 {
		t.Fatalf("data directory holds only %v", files)
	}
	damages := map[string]func(path string) error{
		"flip": func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				return err
			}
			mid := len(b) / 2
			for i := mid; i < min(mid+64, len(b)); i++ {
				b[i] ^= 0xA5
			}
			return os.WriteFile(p, b, 0o644)
		},
		"truncate": func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, fi.Size()/2)
		},
		"delete": os.Remove,
	}
	for _, rel := range files {
		for name, damage := range damages {
			t.Run(name+"/"+rel, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.CopyFS(dir, os.DirFS(pristine)); err != nil {
					t.Fatal(err)
				}
				if err := damage(filepath.Join(dir, rel)); err != nil {
					t.Fatal(err)
				}
				e, err := open(dir)
				if err != nil {
					if !strings.Contains(err.Error(), filepath.Base(rel)) {
						t.Fatalf("refused without naming %s: %v", rel, err)
					}
					return
				}
				defer e.Close()
				if err := e.Verified(context.Background()); err != nil {
					damagedRefused(t, e, err, filepath.Base(rel))
					return
				}
				ids := make([]string, n)
				for i := range ids {
					ids[i] = fmt.Sprintf("d%d", i)
				}
				raw, rerr := call(t, e, rcp.MethodRCPGoGet, map[string]any{"ids": ids})
				if rerr != nil {
					t.Fatalf("opened, but x-rcpgo/get fails: %v", rerr)
				}
				var got struct {
					Documents []json.RawMessage `json:"documents"`
				}
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Documents) != n {
					t.Fatalf("opened with %d of %d acknowledged documents", len(got.Documents), n)
				}
				for i := range n {
					res := retrieve(t, e, map[string]any{"query": fmt.Sprintf("topic%d", i), "k": 1})
					if len(res.Hits) == 0 || res.Hits[0].ID != fmt.Sprintf("d%d", i) {
						t.Fatalf("opened, but d%d is not retrievable: %+v", i, res.Hits)
					}
				}
			})
		}
	}
}

// damagedRefused checks an engine whose checks after Open failed with err:
// err names file, Health reports it, and requests are refused with -32010
// (not retryable) naming file.
func damagedRefused(t *testing.T, e *Engine, err error, file string) {
	t.Helper()
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("checks after open failed without naming %s: %v", file, err)
	}
	if h := e.Health(); h == nil || !strings.Contains(h.Error(), file) {
		t.Fatalf("health after failed checks: %v", h)
	}
	for _, m := range []struct {
		method string
		params any
	}{
		{rcp.MethodRetrieve, map[string]any{"query": "topic1"}},
		{rcp.MethodRCPGoGet, map[string]any{"ids": []string{"d1"}}},
		{rcp.MethodIndexAdd, map[string]any{"documents": []any{map[string]any{"id": "x", "text": "x"}}}},
	} {
		_, rerr := call(t, e, m.method, m.params)
		if rerr == nil || rerr.Code != rcp.CodeBackendUnavailable || rerr.Data == nil ||
			rerr.Data.Retryable == nil || *rerr.Data.Retryable || !strings.Contains(rerr.Data.Detail, file) {
			t.Fatalf("%s after failed checks: %+v", m.method, rerr)
		}
	}
}
