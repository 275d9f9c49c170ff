package gen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// chunkDocs is the number of documents a worker renders at a time.
const chunkDocs = 512

// WriteCorpus streams the corpus as JSON lines to w, documents 0..Docs-1
// in order. Rendering is spread over workers (0: GOMAXPROCS) while at most
// a few chunks are held in memory, so memory stays constant whatever the
// corpus size. progress, when set, is called after each chunk with the
// documents written so far.
func (g *Generator) WriteCorpus(ctx context.Context, w io.Writer, workers int, progress func(done int)) (int64, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nChunks := (g.cfg.Docs + chunkDocs - 1) / chunkDocs
	type job struct {
		chunk int
		out   chan []byte
	}
	jobs := make(chan job)
	order := make(chan chan []byte, 2*workers)
	pool := sync.Pool{New: func() any { return make([]byte, 0, chunkDocs*700) }}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := g.newStream()
			for j := range jobs {
				b := pool.Get().([]byte)[:0]
				lo := j.chunk * chunkDocs
				hi := min(lo+chunkDocs, g.cfg.Docs)
				for i := lo; i < hi; i++ {
					b = g.appendDocJSON(s, b, i)
				}
				j.out <- b
			}
		}()
	}
	go func() { // dispatcher: hands out chunks in order, queues their results
		defer close(order)
		defer close(jobs)
		for c := range nChunks {
			out := make(chan []byte, 1)
			select {
			case order <- out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{c, out}:
			case <-ctx.Done():
				return
			}
		}
	}()

	var written int64
	var err error
	done := 0
	for out := range order {
		var b []byte
		select {
		case b = <-out:
		case <-ctx.Done():
		}
		if b == nil {
			break
		}
		if err == nil {
			var n int
			n, err = w.Write(b)
			written += int64(n)
			if err != nil {
				err = fmt.Errorf("gen: %w", err)
				cancel()
			}
		}
		done = min(done+chunkDocs, g.cfg.Docs)
		//lint:ignore SA6002 one slice header allocated per chunk of documents is cheap beside the chunk
		pool.Put(b[:0])
		if progress != nil && err == nil {
			progress(done)
		}
	}
	parentErr := ctx.Err()
	cancel() // stops the dispatcher, which closes jobs and so ends the workers
	wg.Wait()
	switch {
	case err != nil:
		return written, err
	case done < g.cfg.Docs:
		if parentErr == nil {
			parentErr = context.Canceled
		}
		return written, fmt.Errorf("gen: corpus cut at %d documents: %w", done, parentErr)
	}
	return written, nil
}

// WriteQueries writes queries.jsonl lines to w.
func (g *Generator) WriteQueries(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	s := g.newStream()
	for j := range g.cfg.Queries {
		if j%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		q := g.query(s, j)
		b := append([]byte(`{"_id":"`), q.ID...)
		b = append(b, `","text":"`...)
		b = append(b, q.Text...)
		b = append(b, "\"}\n"...)
		bw.Write(b)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// WriteQrels writes a BEIR qrels tsv (with its header) to w: each query's
// source document with grade 1.
func (g *Generator) WriteQrels(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("query-id\tcorpus-id\tscore\n")
	s := g.newStream()
	for j := range g.cfg.Queries {
		if j%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		q := g.query(s, j)
		bw.WriteString(q.ID + "\t" + q.Relevant + "\t1\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// Stats reports a WriteDir.
type Stats struct {
	Docs        int           `json:"docs"`
	Queries     int           `json:"queries"`
	CorpusBytes int64         `json:"corpusBytes"`
	Elapsed     time.Duration `json:"-"`
}

// WriteDir writes a BEIR layout into dir: corpus.jsonl, queries.jsonl and
// qrels/test.tsv.
func (g *Generator) WriteDir(ctx context.Context, dir string, workers int, progress func(done int)) (Stats, error) {
	start := time.Now()
	st := Stats{Docs: g.cfg.Docs, Queries: g.cfg.Queries}
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return st, fmt.Errorf("gen: %w", err)
	}
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		if err := fn(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		return nil
	}
	err := write("corpus.jsonl", func(w io.Writer) error {
		n, err := g.WriteCorpus(ctx, w, workers, progress)
		st.CorpusBytes = n
		return err
	})
	if err == nil {
		err = write("queries.jsonl", func(w io.Writer) error { return g.WriteQueries(ctx, w) })
	}
	if err == nil {
		err = write(filepath.Join("qrels", "test.tsv"), func(w io.Writer) error { return g.WriteQrels(ctx, w) })
	}
	st.Elapsed = time.Since(start)
	return st, err
}

// Describe returns a one-line summary of the configuration.
func (c Config) Describe() string {
	c = c.withDefaults()
	return "seed=" + strconv.FormatUint(c.Seed, 10) + " docs=" + strconv.Itoa(c.Docs) +
		" queries=" + strconv.Itoa(c.Queries) + " vocab=" + strconv.Itoa(c.Vocab) +
		" zipf=" + strconv.FormatFloat(c.ZipfS, 'g', -1, 64) +
		" median-words=" + strconv.Itoa(c.MedianWords)
}
