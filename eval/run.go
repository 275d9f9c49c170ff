package eval

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Ranked is one retrieved document with its score.
type Ranked struct {
	DocID string  `json:"id"`
	Score float64 `json:"score"`
}

// Run maps query id → ranking, best first.
type Run map[string][]Ranked

// TrecOrder re-sorts every ranking the way trec_eval reads a run file: by
// score descending, ties broken by document id descending (bytewise); the
// rank column of the file plays no part. Use it before Evaluate when scores
// carry ties and figures must equal trec_eval's.
func (r Run) TrecOrder() {
	for _, l := range r {
		sort.SliceStable(l, func(i, j int) bool {
			if l[i].Score != l[j].Score {
				return l[i].Score > l[j].Score
			}
			return l[i].DocID > l[j].DocID
		})
	}
}

// WriteRun writes r as a TREC run file, "qid Q0 docid rank score tag", one
// line per hit, queries in natural id order, ranks from 1 in list order.
// A document repeated within a query is written once (its first place),
// since trec_eval rejects duplicates. Ids must not contain white space.
func WriteRun(w io.Writer, r Run, tag string) error {
	if tag == "" {
		tag = "rcpgo"
	}
	if strings.ContainsAny(tag, " \t\n") {
		return fmt.Errorf("eval: run tag %q contains white space", tag)
	}
	qids := make([]string, 0, len(r))
	for q := range r {
		qids = append(qids, q)
	}
	SortIDs(qids)
	bw := bufio.NewWriter(w)
	for _, q := range qids {
		if q == "" || strings.ContainsAny(q, " \t\n") {
			return fmt.Errorf("eval: query id %q cannot be written to a run file", q)
		}
		seen := make(map[string]bool, len(r[q]))
		rank := 0
		for _, h := range r[q] {
			if h.DocID == "" || strings.ContainsAny(h.DocID, " \t\n") {
				return fmt.Errorf("eval: document id %q cannot be written to a run file", h.DocID)
			}
			if seen[h.DocID] {
				continue
			}
			seen[h.DocID] = true
			rank++
			bw.WriteString(q)
			bw.WriteString(" Q0 ")
			bw.WriteString(h.DocID)
			bw.WriteByte(' ')
			bw.WriteString(strconv.Itoa(rank))
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatFloat(h.Score, 'g', -1, 64))
			bw.WriteByte(' ')
			bw.WriteString(tag)
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// ReadRun parses a TREC run file ("qid Q0 docid rank score tag"). Lines of a
// query are ordered by their rank column (stable for equal ranks); call
// TrecOrder to apply trec_eval's score ordering instead. It returns the tag
// of the first line.
func ReadRun(r io.Reader) (Run, string, error) {
	type line struct {
		rank int
		h    Ranked
	}
	byQ := map[string][]line{}
	tag := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 6 {
			return nil, "", fmt.Errorf("eval: run line %d: want 6 fields (qid Q0 docid rank score tag), got %d", n, len(f))
		}
		rank, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, "", fmt.Errorf("eval: run line %d: rank %q: %w", n, f[3], err)
		}
		score, err := strconv.ParseFloat(f[4], 64)
		if err != nil || math.IsNaN(score) {
			return nil, "", fmt.Errorf("eval: run line %d: score %q is not a number", n, f[4])
		}
		if tag == "" {
			tag = f[5]
		}
		byQ[f[0]] = append(byQ[f[0]], line{rank, Ranked{DocID: f[2], Score: score}})
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("eval: run: %w", err)
	}
	run := make(Run, len(byQ))
	for q, ls := range byQ {
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].rank < ls[j].rank })
		out := make([]Ranked, len(ls))
		for i, l := range ls {
			out[i] = l.h
		}
		run[q] = out
	}
	return run, tag, nil
}

// ReadRunFile is ReadRun on a file.
func ReadRunFile(path string) (Run, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return ReadRun(f)
}
