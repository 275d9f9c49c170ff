package natq

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/demo"
)

// TestJudgementsResolve: every demo judgement names a corpus document and
// every Go documentation anchor occurs in exactly one of the files (so a
// judged passage is one place in the corpus).
func TestJudgementsResolve(t *testing.T) {
	for _, s := range []*Set{&Demo, &GoDocs} {
		ids := map[string]bool{}
		for _, q := range s.Qs {
			if ids[q.ID] {
				t.Errorf("%s: duplicate question id %s", s.Name, q.ID)
			}
			ids[q.ID] = true
			if len(q.Rel) == 0 {
				t.Errorf("%s %s: no judgement", s.Name, q.ID)
			}
		}
	}
	corpus, err := demo.Docs()
	if err != nil {
		t.Fatal(err)
	}
	inCorpus := map[string]bool{}
	for _, d := range corpus {
		inCorpus[d.ID] = true
	}
	for _, q := range Demo.Qs {
		for id := range q.Rel {
			if !inCorpus[id] {
				t.Errorf("%s: judged document %q is not in the demo corpus", q.ID, id)
			}
		}
	}
	if n := len(Demo.Qs) + len(GoDocs.Qs); n < 40 {
		t.Errorf("%d questions, want ≥ 40", n)
	}
	docs, err := ReadGoDocs(context.Background())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("no Go documentation to judge against: %v", err)
	}
	for _, q := range GoDocs.Qs {
		for a := range q.Rel {
			n := 0
			for _, d := range docs {
				n += strings.Count(collapse(d.Text), collapse(a))
			}
			if n != 1 {
				t.Errorf("%s: anchor %q occurs %d times in the Go documentation, want 1", q.ID, a, n)
			}
		}
	}
}

var updateQueries = flag.Bool("update", false, "rewrite testdata/demo-queries.jsonl from the Demo set")

// TestDemoQueriesFile holds testdata/demo-queries.jsonl — the Demo set's
// questions in the BEIR queries layout, what `rcp bench -queries` and
// `rcp eval` read — to the set (go test ./bench/natq -run
// TestDemoQueriesFile -update rewrites it).
func TestDemoQueriesFile(t *testing.T) {
	var b bytes.Buffer
	for _, q := range Demo.Qs {
		line, err := json.Marshal(struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}{q.ID, q.Text})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	const path = "testdata/demo-queries.jsonl"
	if *updateQueries {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("%s differs from the Demo set; run with -update", path)
	}
}
