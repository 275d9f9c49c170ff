package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/internal/progress"
	"github.com/rcpgo/rcpgo/rcp"
)

// requestReserve is what one index/add request holds beside its documents
// (the JSON-RPC envelope, method, options): the documents of one request
// get the server's request limit less this.
const requestReserve = 4 << 10

// sender writes documents in index/add requests that fit the server's
// limits, so that rcp never meets -32013: a request carries at most
// limits.AddDocuments documents and limits.RequestBytes bytes. A document
// larger than a request can be is skipped by name with the reason; a
// server that still answers -32013 (its limits are not advertised, or
// smaller than said) gets the request in halves.
type sender struct {
	plan    *addPlan
	c       *rcp.Client
	rep     *addReport
	perFile map[string]int // documents of each file not yet stored
	limits  rcp.RCPGoLimits
	bar     *progress.Bar
}

func (s *sender) send(ctx context.Context, env *Env, docs []pending) error {
	if len(docs) == 0 {
		s.countUnchangedFiles()
		return nil
	}
	budget := int(s.limits.RequestBytes) - requestReserve
	var fits []pending
	for _, d := range docs {
		b, err := json.Marshal(d.doc)
		if err != nil {
			return fmt.Errorf("%s: %w", d.path, err)
		}
		d.bytes = len(b) + 1 // and a comma
		if d.bytes > budget {
			s.skip(d, fmt.Sprintf("%s of text is more than the server takes in one request (%s); split the file, or raise the server's limit (rcpd serve --max-request-bytes)",
				humanBytes(int64(len(d.doc.Text))), humanBytes(s.limits.RequestBytes)))
			continue
		}
		fits = append(fits, d)
	}
	s.bar = progress.New(env.Stderr, "indexing", int64(len(fits)), progress.WithUnit("docs"))
	defer s.bar.Finish()
	for start := 0; start < len(fits); {
		end, size := start, 0
		for end < len(fits) && end-start < s.limits.AddDocuments && size+fits[end].bytes <= budget {
			size += fits[end].bytes
			end++
		}
		if err := s.write(ctx, fits[start:end]); err != nil {
			if ctx.Err() != nil {
				s.rep.Interrupted = true
				break
			}
			return fmt.Errorf("documents %d–%d of %d: %w", s.rep.Documents+1, s.rep.Documents+end-start, len(fits), err)
		}
		start = end
	}
	s.countUnchangedFiles()
	return nil
}

// write sends one request; on -32013 it sends each half, and a single
// document the server refuses as too large is skipped by name.
func (s *sender) write(ctx context.Context, batch []pending) error {
	params := &rcp.IndexAddParams{Documents: make([]rcp.Document, len(batch))}
	for i, d := range batch {
		params.Documents[i] = d.doc
	}
	if s.plan.chunk {
		params.Chunk = &s.plan.chunk
	}
	if s.plan.contextual {
		params.Contextual = &s.plan.contextual
	}
	res, err := s.c.IndexAdd(ctx, params)
	if e, ok := rcp.AsError(err); err != nil && ok && e.Code == rcp.CodePayloadTooLarge && ctx.Err() == nil {
		if len(batch) == 1 {
			s.skip(batch[0], "the server refused it as too large: "+e.Error())
			return nil
		}
		half := len(batch) / 2
		if err := s.write(ctx, batch[:half]); err != nil {
			return err
		}
		return s.write(ctx, batch[half:])
	}
	if err != nil {
		return err
	}
	if res.Chunks != nil {
		s.rep.Chunks += *res.Chunks
	}
	for _, d := range batch {
		s.stored(d)
	}
	s.bar.Add(int64(len(batch)))
	return nil
}

// stored counts an acknowledged document.
func (s *sender) stored(d pending) {
	s.rep.Documents++
	switch d.kind {
	case "added":
		s.rep.Added++
	case "updated":
		s.rep.Updated++
	}
	if s.perFile[d.path]--; s.perFile[d.path] == 0 {
		s.rep.Files++
	}
}

// skip records a document that was not sent: its file fails the command.
func (s *sender) skip(d pending, reason string) {
	s.rep.Skipped = append(s.rep.Skipped, ingest.Skip{Path: pathOf(d), Reason: reason, Failed: true})
	s.perFile[d.path] = -1 // never complete
}

// countUnchangedFiles adds the files whose documents were all unchanged.
func (s *sender) countUnchangedFiles() {
	s.rep.Files += s.rep.Unchanged
}
