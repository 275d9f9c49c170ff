package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/rcpgo/rcpgo/internal/demo"
	"github.com/rcpgo/rcpgo/rcp"
)

// stdioSession speaks raw NDJSON to serve over pipes.
type stdioSession struct {
	t    *testing.T
	in   *io.PipeWriter
	rd   *bufio.Reader
	next int
	done chan error
}

func startStdio(t *testing.T, f serveFlags) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, rd: bufio.NewReader(outR), done: make(chan error, 1)}
	f.stdio = true
	go func() {
		s.done <- serve(context.Background(), f, inR, outW, io.Discard)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not return after EOF")
		}
	})
	return s
}

// call sends one request and returns its result or error.
func (s *stdioSession) call(method string, params any) (json.RawMessage, *rcp.Error) {
	s.t.Helper()
	s.next++
	p, _ := json.Marshal(params)
	if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.next, method, p); err != nil {
		s.t.Fatal(err)
	}
	line, err := s.rd.ReadBytes('\n')
	if err != nil {
		s.t.Fatal(err)
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *rcp.Error      `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		s.t.Fatalf("%s: %v", line, err)
	}
	return m.Result, m.Error
}

// Issue 31, acceptance 4: right after a fresh `rcpd serve --demo` answers
// ping, no graph, tree or memory call returns an empty success — each one
// waits for the structure's first build within its deadline (or answers
// -32010 retryable, which would fail this test too: the demo builds in
// seconds). Before, graph communities answered an empty list.
func TestDemoNoEmptySuccessAtStart(t *testing.T) {
	s := startStdio(t, serveFlags{demo: true, data: t.TempDir()})
	if _, e := s.call(rcp.MethodPing, map[string]any{}); e != nil {
		t.Fatal(e)
	}
	if _, e := s.call(rcp.MethodInitialize, map[string]any{"protocolVersion": 1}); e != nil {
		t.Fatal(e)
	}
	type list = []json.RawMessage
	checks := []struct {
		name, method string
		params       map[string]any
		key          string // the list that must not be empty
	}{
		{"graph communities", rcp.MethodGraph, map[string]any{"op": "communities"}, "communities"},
		{"graph global", rcp.MethodGraph, map[string]any{"op": "global", "query": "ranking and retrieval"}, "communities"},
		{"graph local", rcp.MethodGraph, map[string]any{"op": "local", "query": "BM25 ranking"}, "hits"},
		{"graph drift", rcp.MethodGraph, map[string]any{"op": "drift", "query": "BM25 ranking"}, "hits"},
		{"graph neighbors", rcp.MethodGraph, map[string]any{"op": "neighbors", "query": "BM25"}, "nodes"},
		{"memory/recall", rcp.MethodMemoryRecall, map[string]any{"query": "BM25 ranking"}, "clues"},
		{"retrieve community", rcp.MethodRetrieve, map[string]any{"query": "ranking", "unit": "community", "k": 5}, "hits"},
		{"retrieve node", rcp.MethodRetrieve, map[string]any{"query": "BM25", "unit": "node", "k": 5}, "hits"},
		{"retrieve triplet", rcp.MethodRetrieve, map[string]any{"query": "inverted index", "unit": "triplet", "k": 5}, "hits"},
		{"retrieve subgraph", rcp.MethodRetrieve, map[string]any{"query": "BM25", "unit": "subgraph", "k": 5}, "hits"},
		{"retrieve tree-node 1", rcp.MethodRetrieve, map[string]any{"query": "ranking", "unit": "tree-node", "level": 1, "k": 5}, "hits"},
	}
	for _, c := range checks {
		res, e := s.call(c.method, c.params)
		if e != nil {
			t.Errorf("%s: %v", c.name, e)
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(res, &m); err != nil {
			t.Fatalf("%s: %s", c.name, res)
		}
		var l list
		if err := json.Unmarshal(m[c.key], &l); err != nil || len(l) == 0 {
			t.Errorf("%s: an empty success right after the start: %s", c.name, res)
		}
	}
	// info reports the readiness of each derived structure.
	res, e := s.call(rcp.MethodInfo, map[string]any{})
	if e != nil {
		t.Fatal(e)
	}
	var info rcp.InitializeResult
	if err := json.Unmarshal(res, &info); err != nil {
		t.Fatal(err)
	}
	r, ok := rcp.ReadReadiness(info.Meta)
	if !ok {
		t.Fatalf("no %s in info _meta: %s", rcp.MetaRCPGoReadiness, res)
	}
	for _, name := range []string{"dense", "graph", "communities", "tree", "memory"} {
		if st := r[name].State; st != rcp.StateReady && st != rcp.StateStale {
			t.Errorf("%s is %q after answering on it", name, st)
		}
	}
}

// TestDemoTriplets: on `rcpd serve --demo`, retrieve unit "triplet"
// answers demo questions with evidence-backed facts — each hit's subject
// and object occur (by stem) in its evidence sentence, and that sentence
// is the document's text at the hit's citation offsets (issue 31: a
// report had the unit answer empty on the demo; the offline extractor of
// issue 32 reads its facts).
func TestDemoTriplets(t *testing.T) {
	docs, err := demo.Docs()
	if err != nil {
		t.Fatal(err)
	}
	text := map[string][]rune{}
	for _, d := range docs {
		text["rcpd-demo://"+d.ID] = []rune(d.Text)
	}
	s := startStdio(t, serveFlags{demo: true, data: t.TempDir()})
	res, e := s.call(rcp.MethodInitialize, map[string]any{"protocolVersion": 1})
	if e != nil {
		t.Fatal(e)
	}
	// A fresh data directory has no graph yet: the graph is building until
	// the builder has read every document — not "stale" (served as it
	// is), which had the first questions answered from a part of it.
	var init rcp.InitializeResult
	if err := json.Unmarshal(res, &init); err != nil {
		t.Fatal(err)
	}
	if r, _ := rcp.ReadReadiness(init.Meta); r["graph"].State == rcp.StateStale {
		t.Errorf("the graph of a fresh data directory is served half built: %+v", r["graph"])
	}
	for _, q := range []string{"inverted index", "posting lists", "reciprocal rank", "what does BM25 score", "dense retrieval embeddings"} {
		res, e := s.call(rcp.MethodRetrieve, map[string]any{"query": q, "unit": "triplet", "k": 5})
		if e != nil {
			t.Fatalf("%q: %v", q, e)
		}
		var r rcp.RetrieveResult
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) == 0 {
			t.Errorf("%q: no triplet: %s", q, res)
		}
		for _, h := range r.Hits {
			checkTriplet(t, q, h, text)
		}
	}
}

// checkTriplet checks that triplet hit h is backed by its evidence: the
// cited span of the document, naming subject and object.
func checkTriplet(t *testing.T, q string, h rcp.Hit, text map[string][]rune) {
	t.Helper()
	subj, _ := h.Meta["subject"].(string)
	pred, _ := h.Meta["predicate"].(string)
	obj, _ := h.Meta["object"].(string)
	ev, _ := h.Meta["evidence"].(string)
	if h.Unit != rcp.UnitTriplet || subj == "" || pred == "" || obj == "" || ev == "" {
		t.Errorf("%q: %s is not a triple with evidence: %+v", q, h.ID, h.Meta)
		return
	}
	c := h.Citation
	if c == nil || c.Start == nil || c.End == nil {
		t.Errorf("%q: %s cites no span: %+v", q, h.ID, c)
		return
	}
	doc, ok := text[c.URI]
	if !ok || *c.Start < 0 || *c.End > len(doc) || *c.Start > *c.End {
		t.Errorf("%q: %s cites [%d,%d) of %q", q, h.ID, *c.Start, *c.End, c.URI)
		return
	}
	if got := string(doc[*c.Start:*c.End]); got != ev {
		t.Errorf("%q: %s: evidence %q is not the cited span %q", q, h.ID, ev, got)
	}
	words := map[string]bool{}
	for _, w := range stems(ev) {
		words[w] = true
	}
	for _, end := range []string{subj, obj} {
		for _, w := range stems(end) {
			if !words[w] {
				t.Errorf("%q: %s: %q is not in its evidence %q", q, h.ID, end, ev)
			}
		}
	}
}

// stems are the words of s stemmed as graph nodes are keyed (Snowball
// English), so "queries" in a node name matches "query" in a sentence.
func stems(s string) []string {
	ws := strings.Fields(strings.Map(letterOrSpace, s))
	for i, w := range ws {
		ws[i] = english.Stem(w, false)
	}
	return ws
}

func letterOrSpace(r rune) rune {
	if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' {
		return unicode.ToLower(r)
	}
	return ' '
}
