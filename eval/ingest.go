package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// IngestFunc writes one batch of documents, for instance as one RCP
// index/add call whose document ids are the BEIR ids: a retried or repeated
// ingest then upserts instead of duplicating (spec §7.10).
type IngestFunc func(ctx context.Context, docs []Doc) error

// IngestOptions tune Ingest.
type IngestOptions struct {
	// BatchSize is the number of documents per call (default 64).
	BatchSize int
	// Concurrency bounds the batches in flight (default 1: in order).
	Concurrency int
	// Retries is how often a failed batch is tried again (default 0). Safe
	// because ids are explicit. Retryable, when set, picks which errors are
	// retried (e.g. rcp.CodeOf(err).Retryable()); nil retries any error.
	Retries   int
	Retryable func(error) bool
	// Backoff before the n-th retry is Backoff·2^(n-1) (default 200ms).
	Backoff time.Duration
	// Total, when known, feeds ETA in Progress; IngestFile counts it.
	Total int64
	// Progress is called after every batch with documents done so far.
	Progress func(Progress)
	// Limit stops after this many documents (0: all).
	Limit int64
}

// IngestStats summarises an ingest.
type IngestStats struct {
	Docs    int64         `json:"docs"`
	Batches int64         `json:"batches"`
	Retries int64         `json:"retries"`
	Elapsed time.Duration `json:"elapsedNs"`
}

// IngestFile streams the corpus.jsonl at path to fn in batches, counting
// its lines first so that progress has an ETA.
func IngestFile(ctx context.Context, path string, opt IngestOptions, fn IngestFunc) (IngestStats, error) {
	if opt.Total == 0 && opt.Progress != nil {
		n, err := CountLines(path)
		if err != nil {
			return IngestStats{}, err
		}
		opt.Total = n
		if opt.Limit > 0 && opt.Limit < n {
			opt.Total = opt.Limit
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return IngestStats{}, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return Ingest(ctx, f, opt, fn)
}

// Ingest streams corpus.jsonl documents from r to fn in batches, holding at
// most Concurrency+1 batches in memory. It returns at the first batch that
// still fails after its retries, having waited for the batches in flight.
func Ingest(ctx context.Context, r io.Reader, opt IngestOptions, fn IngestFunc) (IngestStats, error) {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 64
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 1
	}
	if opt.Backoff <= 0 {
		opt.Backoff = 200 * time.Millisecond
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		st       IngestStats
		docs     atomic.Int64
		batches  atomic.Int64
		retries  atomic.Int64
		wg       sync.WaitGroup
		progMu   sync.Mutex
		sem      = make(chan struct{}, opt.Concurrency)
		firstErr error
		errOnce  sync.Once
	)
	start := time.Now()
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel(err) })
	}
	send := func(batch []Doc) {
		defer wg.Done()
		defer func() { <-sem }()
		if err := opt.call(ctx, fn, batch, &retries); err != nil {
			fail(fmt.Errorf("eval: ingest batch starting at %q: %w", batch[0].ID, err))
			return
		}
		d := docs.Add(int64(len(batch)))
		batches.Add(1)
		if opt.Progress != nil {
			progMu.Lock()
			opt.Progress(newProgress("", d, opt.Total, 0, time.Since(start)))
			progMu.Unlock()
		}
	}
	dispatch := func(batch []Doc) error {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		wg.Add(1)
		go send(batch)
		return nil
	}

	batch := make([]Doc, 0, opt.BatchSize)
	var read int64
	errStop := errors.New("limit reached")
	err := StreamCorpus(ctx, r, func(d Doc) error {
		if opt.Limit > 0 && read >= opt.Limit {
			return errStop
		}
		read++
		batch = append(batch, d)
		if len(batch) < opt.BatchSize {
			return nil
		}
		b := batch
		batch = make([]Doc, 0, opt.BatchSize)
		return dispatch(b)
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	if err == nil && len(batch) > 0 {
		err = dispatch(batch)
	}
	wg.Wait()
	st = IngestStats{Docs: docs.Load(), Batches: batches.Load(), Retries: retries.Load(), Elapsed: time.Since(start)}
	if firstErr != nil {
		return st, firstErr
	}
	if err != nil {
		return st, err
	}
	return st, ctx.Err()
}

func (opt *IngestOptions) call(ctx context.Context, fn IngestFunc, batch []Doc, retries *atomic.Int64) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx, batch)
		if err == nil || attempt >= opt.Retries || ctx.Err() != nil ||
			(opt.Retryable != nil && !opt.Retryable(err)) {
			return err
		}
		retries.Add(1)
		t := time.NewTimer(opt.Backoff << attempt)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
