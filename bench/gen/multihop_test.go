package gen

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMultihop(t *testing.T) {
	m, err := NewMultihop(MultihopConfig{Seed: 7, Docs: 600, Questions: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Docs) != 600 || len(m.Questions) != 50 {
		t.Fatalf("%d docs, %d questions", len(m.Docs), len(m.Questions))
	}
	byID := map[string]Doc{}
	for _, d := range m.Docs {
		byID[d.ID] = d
	}
	for _, q := range m.Questions {
		s0, s1 := byID[q.Supports[0]], byID[q.Supports[1]]
		if s0.ID == "" || s1.ID == "" || s0.ID == s1.ID {
			t.Fatalf("%s: supports %v missing", q.ID, q.Supports)
		}
		a := s0.Title
		// The question names A but neither the bridge nor the answer; the
		// first support joins A to the bridge, the second the bridge to the answer.
		if !strings.Contains(q.Text, a) || strings.Contains(q.Text, q.Bridge) || strings.Contains(q.Text, q.Answer) {
			t.Fatalf("%s: %q (bridge %q, answer %q)", q.ID, q.Text, q.Bridge, q.Answer)
		}
		if !strings.Contains(s0.Text, q.Bridge) || !strings.Contains(s1.Text, q.Bridge) || !strings.Contains(s1.Text, q.Answer) {
			t.Fatalf("%s: supports do not chain: %q / %q", q.ID, s0.Text, s1.Text)
		}
	}
	if _, err := NewMultihop(MultihopConfig{Docs: 10, Questions: 5}); err == nil {
		t.Fatal("too few documents accepted")
	}
}

func TestMultihopDeterministic(t *testing.T) {
	write := func() []byte {
		m, err := NewMultihop(MultihopConfig{Seed: 3, Docs: 300, Questions: 20})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		st, err := m.WriteDir(context.Background(), dir)
		if err != nil || st.Docs != 300 || st.Queries != 20 || st.CorpusBytes == 0 {
			t.Fatalf("%+v %v", st, err)
		}
		var all []byte
		for _, f := range []string{"corpus.jsonl", "queries.jsonl", filepath.Join("qrels", "test.tsv")} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	a, b := write(), write()
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different bytes")
	}
	if n := bytes.Count(a, []byte("\t1\n")); n != 40 {
		t.Fatalf("%d qrels lines, want 2 per question", n)
	}
}
