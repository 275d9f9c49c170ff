// Package eval measures retrieval quality: it loads BEIR-layout datasets,
// runs their queries through any retrieval function, scores the rankings
// with trec_eval's conventions, and reports the figures as JSON, Markdown
// and a chart (spec Appendix F).
package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Doc is one corpus document of a BEIR corpus.jsonl.
type Doc struct {
	ID    string         `json:"_id"`
	Title string         `json:"title,omitempty"`
	Text  string         `json:"text"`
	Meta  map[string]any `json:"metadata,omitempty"`
}

// Body is what is usually indexed: the title and the text joined by a blank
// line (BEIR's "title + text"), or the text alone when there is no title.
func (d Doc) Body() string {
	if d.Title == "" {
		return d.Text
	}
	if d.Text == "" {
		return d.Title
	}
	return d.Title + "\n\n" + d.Text
}

// Query is one line of a BEIR queries.jsonl.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Dataset is a loaded BEIR dataset. The corpus is not held in memory; use
// StreamCorpus or Ingest with CorpusPath.
type Dataset struct {
	Name       string
	Dir        string
	Split      string
	CorpusPath string
	Queries    []Query // only the queries judged in Qrels, in file order
	Qrels      Qrels
}

// LoadBEIR reads queries.jsonl and qrels/<split>.tsv from dir. Queries
// without judgments in the split are dropped (BEIR's convention); a judged
// query missing from queries.jsonl is an error.
func LoadBEIR(dir, split string) (*Dataset, error) {
	if split == "" {
		split = "test"
	}
	qrels, err := ReadQrelsFile(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, err
	}
	all, err := ReadQueriesFile(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Name: filepath.Base(dir), Dir: dir, Split: split, CorpusPath: filepath.Join(dir, "corpus.jsonl"), Qrels: qrels}
	if _, err := os.Stat(ds.CorpusPath); err != nil {
		return nil, fmt.Errorf("eval: corpus: %w", err)
	}
	seen := make(map[string]bool, len(qrels))
	for _, q := range all {
		if _, ok := qrels[q.ID]; ok && !seen[q.ID] {
			seen[q.ID] = true
			ds.Queries = append(ds.Queries, q)
		}
	}
	if len(seen) != len(qrels) {
		var missing []string
		for id := range qrels {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("eval: %d judged queries are not in queries.jsonl (first: %q)", len(missing), missing[0])
	}
	return ds, nil
}

// flexID decodes a JSON string or number into its textual form, so that
// `"_id": 42` and `"_id": "42"` name the same document.
type flexID string

func (f *flexID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("id must be a string or a number, got %s", b)
	}
	*f = flexID(n.String())
	return nil
}

type rawDoc struct {
	ID    *flexID        `json:"_id"`
	Title string         `json:"title"`
	Text  string         `json:"text"`
	Meta  map[string]any `json:"metadata"`
}

type rawQuery struct {
	ID   *flexID `json:"_id"`
	Text string  `json:"text"`
}

// maxLine bounds one JSONL line (a document); BEIR corpora stay far below.
const maxLine = 64 << 20

// eachLine calls fn for every non-blank line of r with its 1-based number.
func eachLine(r io.Reader, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// StreamCorpus decodes corpus.jsonl lines from r and calls fn for each
// document, in file order, holding one document at a time. It stops early
// when ctx is done or fn fails.
func StreamCorpus(ctx context.Context, r io.Reader, fn func(Doc) error) error {
	return eachLine(r, func(n int, line []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var d rawDoc
		if err := json.Unmarshal(line, &d); err != nil {
			return fmt.Errorf("eval: corpus line %d: %w", n, err)
		}
		if d.ID == nil || *d.ID == "" {
			return fmt.Errorf("eval: corpus line %d: no _id", n)
		}
		return fn(Doc{ID: string(*d.ID), Title: d.Title, Text: d.Text, Meta: d.Meta})
	})
}

// StreamCorpusFile is StreamCorpus on a file.
func StreamCorpusFile(ctx context.Context, path string, fn func(Doc) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return StreamCorpus(ctx, f, fn)
}

// ReadQueries decodes queries.jsonl. Duplicate ids are an error.
func ReadQueries(r io.Reader) ([]Query, error) {
	var out []Query
	seen := map[string]bool{}
	err := eachLine(r, func(n int, line []byte) error {
		var q rawQuery
		if err := json.Unmarshal(line, &q); err != nil {
			return fmt.Errorf("eval: queries line %d: %w", n, err)
		}
		if q.ID == nil || *q.ID == "" {
			return fmt.Errorf("eval: queries line %d: no _id", n)
		}
		id := string(*q.ID)
		if seen[id] {
			return fmt.Errorf("eval: queries line %d: duplicate _id %q", n, id)
		}
		seen[id] = true
		out = append(out, Query{ID: id, Text: q.Text})
		return nil
	})
	return out, err
}

// ReadQueriesFile is ReadQueries on a file.
func ReadQueriesFile(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return ReadQueries(f)
}

// CountLines counts the non-blank lines of a JSONL file (for progress
// totals) without decoding them.
func CountLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	var n int64
	br := bufio.NewReaderSize(f, 1<<20)
	nonBlank := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(bytes.TrimSpace(chunk)) > 0 {
			nonBlank = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of a long line follows
		}
		if nonBlank {
			n++
		}
		nonBlank = false
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return n, nil
		default:
			return n, fmt.Errorf("eval: %w", err)
		}
	}
}
