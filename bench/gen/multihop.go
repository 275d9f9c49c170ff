package gen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MultihopConfig describes a two-hop (bridge) question-answering corpus.
// Zero fields take the defaults shown.
type MultihopConfig struct {
	Seed      uint64 `json:"seed"`      // default 1
	Docs      int    `json:"docs"`      // documents (default 5 000; at least 3 per question)
	Questions int    `json:"questions"` // two-hop questions (default 300)
}

func (c MultihopConfig) withDefaults() MultihopConfig {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Docs == 0 {
		c.Docs = 5000
	}
	if c.Questions == 0 {
		c.Questions = 300
	}
	return c
}

// MultihopQuestion is one bridge question: it names entity A and asks for
// an attribute of the unnamed bridge B (the person related to A), so
// answering needs the document relating A to B and the one relating B to
// the answer C. Supports are those two document ids.
type MultihopQuestion struct {
	ID       string
	Text     string
	Supports [2]string
	Bridge   string
	Answer   string
}

// Multihop is a generated multi-hop dataset.
type Multihop struct {
	cfg       MultihopConfig
	Docs      []Doc
	Questions []MultihopQuestion
}

// Person-to-person relations, written "A was <verb> by B" and asked as "the
// person who <verb> A".
var bridgeVerbs = []string{"mentored", "advised", "trained", "hired", "inspired", "funded", "recruited", "coached"}

// Person-to-place relations: the fact sentence and the question about it.
var factRelations = []struct{ fact, question string }{
	{"%s was born in %s.", "Where was %s born?"},
	{"%s died in %s.", "Where did %s die?"},
	{"%s studied at %s.", "Where did %s study?"},
	{"%s founded %s.", "What did %s found?"},
	{"%s lived in %s.", "Where did %s live?"},
	{"%s worked at %s.", "Where did %s work?"},
}

// Vocabulary bands: filler words and name words never overlap.
const (
	mhFillerLo, mhFillerHi = stopRanks, 8000
	mhNameLo, mhNameHi     = 8000, 60000
)

// NewMultihop generates the dataset: deterministic from the seed (the same
// config gives the same bytes). Each question contributes its two supports
// (A was <verb> by B; B <fact> C) and, half of the time, a distractor that
// gives A itself the asked fact (so word overlap alone points to the wrong
// document); the remaining documents relate random entities of the same
// pools, so every entity has several documents and the bridge is not the
// only neighbour of A. Each document is one relational sentence plus
// filler sentences; its title is its subject's name.
func NewMultihop(cfg MultihopConfig) (*Multihop, error) {
	cfg = cfg.withDefaults()
	if cfg.Docs < 0 || cfg.Questions < 0 {
		return nil, errors.New("gen: negative Docs or Questions")
	}
	if cfg.Docs < 3*cfg.Questions {
		return nil, fmt.Errorf("gen: multihop needs at least 3 documents per question (%d < %d)", cfg.Docs, 3*cfg.Questions)
	}
	g, err := New(Config{Seed: cfg.Seed, Vocab: mhNameHi})
	if err != nil {
		return nil, err
	}
	m := &Multihop{cfg: cfg}
	b := &mhBuilder{g: g, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6d756c7469686f70)), used: map[string]bool{}, names: map[string]bool{}}
	nPeople := max(cfg.Docs*2/5, 3*cfg.Questions+3)
	nPlaces := max(cfg.Docs/6, cfg.Questions+1)
	people := b.namesN(nPeople, 2)
	places := b.namesN(nPlaces, 1)
	for q := 0; q < cfg.Questions; q++ {
		a, bridge, c := people[3*q], people[3*q+1], places[q%len(places)]
		verb := bridgeVerbs[b.rng.IntN(len(bridgeVerbs))]
		rel := b.rng.IntN(len(factRelations))
		d1 := b.add(a, fmt.Sprintf("%s was %s by %s.", a, verb, bridge), a+"|"+verb)
		d2 := b.add(bridge, fmt.Sprintf(factRelations[rel].fact, bridge, c), bridge+"|"+factRelations[rel].fact)
		if b.rng.IntN(2) == 0 {
			b.add(a, fmt.Sprintf(factRelations[rel].fact, a, places[b.rng.IntN(len(places))]), a+"|"+factRelations[rel].fact)
		}
		text := fmt.Sprintf(factRelations[rel].question, "the person who "+verb+" "+a)
		m.Questions = append(m.Questions, MultihopQuestion{ID: QueryID(q), Text: text, Supports: [2]string{d1, d2}, Bridge: bridge, Answer: c})
	}
	for len(b.docs) < cfg.Docs {
		x := people[b.rng.IntN(len(people))]
		if b.rng.IntN(2) == 0 {
			y := people[b.rng.IntN(len(people))]
			verb := bridgeVerbs[b.rng.IntN(len(bridgeVerbs))]
			if x != y {
				b.add(x, fmt.Sprintf("%s was %s by %s.", x, verb, y), x+"|"+verb)
			}
			continue
		}
		rel := factRelations[b.rng.IntN(len(factRelations))]
		b.add(x, fmt.Sprintf(rel.fact, x, places[b.rng.IntN(len(places))]), x+"|"+rel.fact)
	}
	// Shuffle document order (supports must not sit side by side), then
	// number them so ids follow file order.
	perm := b.rng.Perm(len(b.docs))
	ids := make(map[string]string, len(b.docs))
	m.Docs = make([]Doc, len(b.docs))
	for newPos, old := range perm {
		d := b.docs[old]
		id := "m" + fmt.Sprint(newPos)
		ids[d.ID] = id
		d.ID = id
		m.Docs[newPos] = d
	}
	for i := range m.Questions {
		q := &m.Questions[i]
		q.Supports = [2]string{ids[q.Supports[0]], ids[q.Supports[1]]}
	}
	return m, nil
}

type mhBuilder struct {
	g     *Generator
	rng   *rand.Rand
	docs  []Doc
	used  map[string]bool // subject|relation pairs already stated (answers stay unique)
	names map[string]bool
}

// namesN draws n distinct capitalised names of words words each.
func (b *mhBuilder) namesN(n, words int) []string {
	out := make([]string, 0, n)
	for len(out) < n {
		parts := make([]string, words)
		for i := range parts {
			w := b.g.Word(mhNameLo + b.rng.IntN(mhNameHi-mhNameLo))
			parts[i] = strings.ToUpper(w[:1]) + w[1:]
		}
		name := strings.Join(parts, " ")
		if !b.names[name] {
			b.names[name] = true
			out = append(out, name)
		}
	}
	return out
}

// add appends a document stating sentence (unless its subject|relation
// key was stated before) and returns its provisional id ("" if skipped).
func (b *mhBuilder) add(subject, sentence, key string) string {
	if b.used[key] {
		return ""
	}
	b.used[key] = true
	id := fmt.Sprint(len(b.docs))
	var sb strings.Builder
	sb.WriteString(sentence)
	for s := 2 + b.rng.IntN(3); s > 0; s-- {
		sb.WriteByte(' ')
		for w, n := 0, 6+b.rng.IntN(8); w < n; w++ {
			word := b.g.Word(mhFillerLo + b.rng.IntN(mhFillerHi-mhFillerLo))
			if w == 0 {
				word = strings.ToUpper(word[:1]) + word[1:]
			} else {
				sb.WriteByte(' ')
			}
			sb.WriteString(word)
		}
		sb.WriteByte('.')
	}
	b.docs = append(b.docs, Doc{ID: id, Title: subject, Text: sb.String()})
	return id
}

// WriteDir writes the BEIR layout into dir: corpus.jsonl, queries.jsonl
// (metadata: bridge, answer) and qrels/test.tsv with both supports of
// every question at grade 1.
func (m *Multihop) WriteDir(ctx context.Context, dir string) (Stats, error) {
	start := time.Now()
	st := Stats{Docs: len(m.Docs), Queries: len(m.Questions)}
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return st, fmt.Errorf("gen: %w", err)
	}
	err := writeLines(filepath.Join(dir, "corpus.jsonl"), len(m.Docs), func(i int) any {
		d := m.Docs[i]
		return struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}{d.ID, d.Title, d.Text}
	}, ctx, &st.CorpusBytes)
	if err == nil {
		err = writeLines(filepath.Join(dir, "queries.jsonl"), len(m.Questions), func(i int) any {
			q := m.Questions[i]
			return struct {
				ID   string            `json:"_id"`
				Text string            `json:"text"`
				Meta map[string]string `json:"metadata"`
			}{q.ID, q.Text, map[string]string{"bridge": q.Bridge, "answer": q.Answer}}
		}, ctx, nil)
	}
	if err == nil {
		var sb strings.Builder
		sb.WriteString("query-id\tcorpus-id\tscore\n")
		for _, q := range m.Questions {
			for _, s := range q.Supports {
				sb.WriteString(q.ID + "\t" + s + "\t1\n")
			}
		}
		if werr := os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte(sb.String()), 0o644); werr != nil {
			err = fmt.Errorf("gen: %w", werr)
		}
	}
	st.Elapsed = time.Since(start)
	return st, err
}

func writeLines(path string, n int, item func(int) any, ctx context.Context, size *int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	cw := &countWriter{w: f}
	bw := bufio.NewWriter(cw)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := 0; i < n && err == nil; i++ {
		if i%1024 == 0 {
			err = ctx.Err()
		}
		if err == nil {
			err = enc.Encode(item(i))
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if size != nil {
		*size = cw.n
	}
	if err != nil {
		return fmt.Errorf("gen: %s: %w", filepath.Base(path), err)
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
