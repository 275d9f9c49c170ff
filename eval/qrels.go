package eval

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Qrels maps query id → document id → relevance grade. Grades ≤ 0 are
// judged non-relevant (trec_eval's default relevance level of 1).
type Qrels map[string]map[string]int

// NumRelevant returns how many documents of query qid have grade > 0.
func (q Qrels) NumRelevant(qid string) int {
	n := 0
	for _, g := range q[qid] {
		if g > 0 {
			n++
		}
	}
	return n
}

// QueryIDs returns the judged query ids in natural order (see SortIDs).
func (q Qrels) QueryIDs() []string {
	ids := make([]string, 0, len(q))
	for id := range q {
		ids = append(ids, id)
	}
	SortIDs(ids)
	return ids
}

// Len returns the number of judgments.
func (q Qrels) Len() int {
	n := 0
	for _, m := range q {
		n += len(m)
	}
	return n
}

// SortIDs sorts ids numerically when both are integers, else bytewise, so
// "2" comes before "10".
func SortIDs(ids []string) {
	sort.Slice(ids, func(i, j int) bool { return idLess(ids[i], ids[j]) })
}

func idLess(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return x < y
	case errA == nil:
		return true // numbers first
	case errB == nil:
		return false
	}
	return a < b
}

// ReadQrels parses relevance judgments in either of two layouts, chosen per
// line by its number of fields (tab or space separated):
//
//	BEIR:  query-id  corpus-id  score        (an optional header line)
//	TREC:  qid       iteration  docno  rel   (the iteration is ignored)
//
// Grades must be integers. A pair judged twice keeps the last grade, as
// trec_eval does.
func ReadQrels(r io.Reader) (Qrels, error) {
	q := Qrels{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		f := strings.Fields(string(line))
		var qid, did, grade string
		switch len(f) {
		case 3:
			qid, did, grade = f[0], f[1], f[2]
		case 4:
			qid, did, grade = f[0], f[2], f[3]
		default:
			return nil, fmt.Errorf("eval: qrels line %d: want 3 (BEIR) or 4 (TREC) fields, got %d", n, len(f))
		}
		g, err := strconv.Atoi(grade)
		if err != nil {
			if n == 1 || (len(q) == 0 && isHeader(f)) {
				continue // header: query-id corpus-id score
			}
			return nil, fmt.Errorf("eval: qrels line %d: grade %q is not an integer", n, grade)
		}
		m := q[qid]
		if m == nil {
			m = map[string]int{}
			q[qid] = m
		}
		m[did] = g
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: qrels: %w", err)
	}
	return q, nil
}

func isHeader(f []string) bool {
	l := strings.ToLower(f[len(f)-1])
	return l == "score" || l == "rel" || l == "relevance" || l == "grade"
}

// ReadQrelsFile is ReadQrels on a file.
func ReadQrelsFile(path string) (Qrels, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	q, err := ReadQrels(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return q, nil
}

// WriteQrels writes q in TREC format ("qid 0 docno rel"), sorted.
func WriteQrels(w io.Writer, q Qrels) error {
	bw := bufio.NewWriter(w)
	for _, qid := range q.QueryIDs() {
		docs := make([]string, 0, len(q[qid]))
		for d := range q[qid] {
			docs = append(docs, d)
		}
		SortIDs(docs)
		for _, d := range docs {
			fmt.Fprintf(bw, "%s 0 %s %d\n", qid, d, q[qid][d])
		}
	}
	return bw.Flush()
}
