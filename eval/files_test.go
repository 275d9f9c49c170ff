package eval

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/shared"
)

func TestReadQrels(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Qrels
		wantErr bool
	}{
		{name: "beir with header", in: "query-id\tcorpus-id\tscore\n1\t10\t2\n1\t11\t0\n2\t10\t1\n",
			want: Qrels{"1": {"10": 2, "11": 0}, "2": {"10": 1}}},
		{name: "beir no header", in: "1\t10\t2\n", want: Qrels{"1": {"10": 2}}},
		{name: "trec", in: "q1 0 d1 1\nq1 0 d2 -1\n\n", want: Qrels{"q1": {"d1": 1, "d2": -1}}},
		{name: "last judgment wins", in: "1 a 1\n1 a 3\n", want: Qrels{"1": {"a": 3}}},
		{name: "bad grade after data", in: "1 a 1\n1 b x\n", wantErr: true},
		{name: "two fields", in: "1 a\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadQrels(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(got) != len(tt.want) || got.Len() != tt.want.Len() {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for q, m := range tt.want {
				for d, g := range m {
					if got[q][d] != g {
						t.Fatalf("got %v, want %v", got, tt.want)
					}
				}
			}
		})
	}
}

func TestRunRoundTrip(t *testing.T) {
	run := Run{
		"10": {{"d3", 2.5}, {"d1", 1}, {"d3", 0.5}},
		"2":  {{"x", 1e-9}, {"y", -3}},
	}
	var buf bytes.Buffer
	if err := WriteRun(&buf, run, "bm25"); err != nil {
		t.Fatal(err)
	}
	want := "2 Q0 x 1 1e-09 bm25\n2 Q0 y 2 -3 bm25\n10 Q0 d3 1 2.5 bm25\n10 Q0 d1 2 1 bm25\n"
	if buf.String() != want {
		t.Fatalf("WriteRun:\n%s\nwant:\n%s", buf.String(), want)
	}
	back, tag, err := ReadRun(&buf)
	if err != nil || tag != "bm25" {
		t.Fatal(err, tag)
	}
	if len(back["10"]) != 2 || back["10"][0] != (Ranked{"d3", 2.5}) || back["2"][1] != (Ranked{"y", -3}) {
		t.Fatalf("read back %v", back)
	}
	for _, bad := range []Run{{"q": {{"a b", 1}}}, {"q q": {{"a", 1}}}, {"q": {{"", 1}}}} {
		if err := WriteRun(&bytes.Buffer{}, bad, "t"); err == nil {
			t.Errorf("WriteRun(%v) accepted an id with white space", bad)
		}
	}
}

func TestReadRunOrdersByRankColumn(t *testing.T) {
	run, _, err := ReadRun(strings.NewReader("q Q0 b 2 5 t\nq Q0 a 1 4 t\n"))
	if err != nil {
		t.Fatal(err)
	}
	if run["q"][0].DocID != "a" {
		t.Fatalf("got %v", run["q"])
	}
	for _, bad := range []string{"q Q0 a 1 x t\n", "q Q0 a one 1 t\n", "q Q0 a 1 1\n", "q Q0 a 1 NaN t\n"} {
		if _, _, err := ReadRun(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadRun(%q) accepted it", bad)
		}
	}
}

func TestReadQueriesFlexibleIDs(t *testing.T) {
	in := `{"_id": 7, "text": "seven"}
{"_id": "x-1", "text": "ex", "metadata": {}}

{"_id": 1e3, "text": "big"}
`
	qs, err := ReadQueries(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 || qs[0].ID != "7" || qs[1].ID != "x-1" || qs[2].ID != "1e3" {
		t.Fatalf("got %+v", qs)
	}
	for _, bad := range []string{`{"text":"no id"}`, `{"_id": true}`, `{"_id":"a"}` + "\n" + `{"_id":"a"}`, `not json`} {
		if _, err := ReadQueries(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadQueries(%q) accepted it", bad)
		}
	}
}

func TestStreamCorpus(t *testing.T) {
	in := `{"_id": 1, "title": "T", "text": "body", "metadata": {"year": 2020}}
{"_id": "2", "text": "only"}
`
	var docs []Doc
	err := StreamCorpus(context.Background(), strings.NewReader(in), func(d Doc) error { docs = append(docs, d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].ID != "1" || docs[0].Body() != "T\n\nbody" || docs[0].Meta["year"] != 2020.0 || docs[1].Body() != "only" {
		t.Fatalf("got %+v", docs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := StreamCorpus(ctx, strings.NewReader(in), func(Doc) error { return nil }); err == nil {
		t.Fatal("cancelled stream returned nil")
	}
}

// The real datasets: counts from their READMEs.
func TestLoadSharedDatasets(t *testing.T) {
	tests := []struct {
		name                   string
		docs, queries, qrels   int
		minGrade, maxGrade     int
		relevant, judgedByQ1st int
	}{
		{name: "cranfield", docs: 1400, queries: 225, qrels: 1612, minGrade: 1, maxGrade: 4, relevant: 1612},
		{name: "scifact", docs: 5183, queries: 300, qrels: 339, minGrade: 1, maxGrade: 1, relevant: 339},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := LoadBEIR(shared.Path(t, "datasets", tt.name), "test")
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Queries) != tt.queries || ds.Qrels.Len() != tt.qrels {
				t.Fatalf("%d queries, %d qrels; want %d, %d", len(ds.Queries), ds.Qrels.Len(), tt.queries, tt.qrels)
			}
			lo, hi, rel := 1<<30, -1<<30, 0
			for q := range ds.Qrels {
				rel += ds.Qrels.NumRelevant(q)
				for _, g := range ds.Qrels[q] {
					lo, hi = min(lo, g), max(hi, g)
				}
			}
			if lo != tt.minGrade || hi != tt.maxGrade || rel != tt.relevant {
				t.Fatalf("grades %d..%d, %d relevant; want %d..%d, %d", lo, hi, rel, tt.minGrade, tt.maxGrade, tt.relevant)
			}
			n, ids := 0, map[string]bool{}
			err = StreamCorpusFile(context.Background(), ds.CorpusPath, func(d Doc) error {
				n++
				ids[d.ID] = true
				return nil
			})
			if err != nil || n != tt.docs || len(ids) != tt.docs {
				t.Fatalf("corpus: %d docs (%d ids), err %v; want %d", n, len(ids), err, tt.docs)
			}
			if c, err := CountLines(ds.CorpusPath); err != nil || c != int64(tt.docs) {
				t.Fatalf("CountLines = %d, %v", c, err)
			}
			for q, m := range ds.Qrels {
				for d := range m {
					if !ids[d] {
						t.Fatalf("qrels (%s, %s): document not in the corpus", q, d)
					}
				}
			}
		})
	}
}

func FuzzReadQrels(f *testing.F) {
	f.Add("query-id\tcorpus-id\tscore\n1\t2\t1\n")
	f.Add("q 0 d 3\nq 0 e -1\n")
	f.Add("# c\n\n1 2 x\n")
	f.Fuzz(func(t *testing.T, in string) {
		q, err := ReadQrels(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteQrels(&buf, q); err != nil {
			t.Fatal(err)
		}
		back, err := ReadQrels(&buf)
		if err != nil {
			t.Fatalf("re-reading written qrels: %v\n%s", err, buf.String())
		}
		if back.Len() != q.Len() {
			t.Fatalf("round trip lost judgments: %d → %d", q.Len(), back.Len())
		}
	})
}

func FuzzReadRun(f *testing.F) {
	f.Add("1 Q0 d 1 2.5 tag\n1 Q0 e 2 2 tag\n")
	f.Add("q Q0 a 1 -1e300 t\n")
	f.Fuzz(func(t *testing.T, in string) {
		run, _, err := ReadRun(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteRun(&buf, run, "t"); err != nil {
			t.Fatal(err)
		}
		back, _, err := ReadRun(&buf)
		if err != nil {
			t.Fatalf("re-reading written run: %v", err)
		}
		for q, l := range back {
			if len(l) > len(run[q]) {
				t.Fatalf("query %s grew", q)
			}
		}
		qs := Qrels{}
		for q, l := range run {
			if len(l) > 0 {
				qs[q] = Judged{l[0].DocID: 1}
			}
		}
		s := Evaluate(qs, run, DefaultMetrics)
		for k, v := range s.Mean {
			if v < 0 || v > 1 || v != v {
				t.Fatalf("%s = %v out of [0,1]", k, v)
			}
		}
	})
}

func TestCountLinesAndLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]int64{"": 0, "a\n": 1, "a\n\n  \nb": 2, "a\nb\n": 2, strings.Repeat("x", 3<<20) + "\ny\n": 2}
	for in, want := range tests {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := CountLines(p); err != nil || got != want {
			t.Errorf("CountLines(%.10q…) = %d, %v; want %d", in, got, err, want)
		}
	}
	// a judged query missing from queries.jsonl
	must := func(name, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("corpus.jsonl", `{"_id":"d","text":"x"}`+"\n")
	must("queries.jsonl", `{"_id":1,"text":"x"}`+"\n"+`{"_id":3,"text":"unjudged"}`+"\n")
	must("qrels/test.tsv", "query-id\tcorpus-id\tscore\n1\td\t1\n")
	ds, err := LoadBEIR(dir, "")
	if err != nil || len(ds.Queries) != 1 || ds.Queries[0].ID != "1" || ds.Split != "test" {
		t.Fatalf("%+v %v", ds, err)
	}
	must("qrels/test.tsv", "1\td\t1\n2\td\t1\n")
	if _, err := LoadBEIR(dir, "test"); err == nil || !strings.Contains(err.Error(), `"2"`) {
		t.Fatalf("missing judged query: %v", err)
	}
	if _, err := LoadBEIR(dir, "dev"); err == nil {
		t.Fatal("missing split accepted")
	}
}
