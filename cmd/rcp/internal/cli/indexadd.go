package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/internal/progress"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

// addPlan is a parsed `rcp index add|sync`.
type addPlan struct {
	paths             []string
	opt               ingest.Options
	batch             int
	chunk, contextual bool
	prune, verbose    bool
	json              bool
	// wait: return once the server's derived structures are settled
	// (within waitFor).
	wait    bool
	waitFor time.Duration
}

// addReport is what an add did; it is also the --json output.
type addReport struct {
	Files     int `json:"files"` // files whose documents are all stored (sent, or unchanged)
	Added     int `json:"added"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	// Documents counts the documents the server acknowledged (added and
	// updated files, and JSONL lines); ToSend those it was to get.
	Documents int           `json:"documents"`
	ToSend    int           `json:"toSend"`
	Chunks    int           `json:"chunks,omitempty"`
	Pruned    int           `json:"pruned"`
	Skipped   []ingest.Skip `json:"skipped"`
	// Decoded lists the files that were not plain UTF-8 and what they
	// were read as.
	Decoded     []decodedFile `json:"decoded,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`
}

// decodedFile is a file read from a charset other than plain UTF-8.
type decodedFile struct {
	Path    string `json:"path"`
	Charset string `json:"charset"`
	From    string `json:"from"` // bom, meta, detected, default (ingest.Decoding.From)
}

// failed reports whether something the user asked for was not done.
func (r *addReport) failed() bool {
	return slices.ContainsFunc(r.Skipped, func(s ingest.Skip) bool { return s.Failed })
}

// exitCode is the rule every `rcp index add` follows: 0 when everything
// found was stored or deliberately left out, 1 when something the user
// asked for was not (a missing path, a file named on the command line that
// is not text, a text file that could not be read or sent), 130 when
// interrupted. Everything else is indexed either way.
func (r *addReport) exitCode() error {
	switch {
	case r.Interrupted:
		return exitCode(130)
	case r.failed():
		return exitCode(1)
	}
	return nil
}

// pending is a document to send: where it came from, whether it adds or
// updates a file's document, and its size on the wire.
type pending struct {
	doc   rcp.Document
	path  string
	kind  string // "added", "updated", or "" for a JSONL line
	bytes int
}

func (p *addPlan) run(ctx context.Context, env *Env, t *target) error {
	files, skipped, err := ingest.Collect(p.paths, p.opt)
	if err != nil {
		return err
	}
	rep := &addReport{Skipped: skipped}
	docs, present, perFile := p.read(ctx, env, files, rep)
	if ctx.Err() != nil {
		rep.Interrupted = true
		return p.finish(env, rep)
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	vendor, _ := rcp.ReadRCPGoCap(c.Capabilities())
	if !c.Capabilities().Allows(rcp.MethodIndexAdd) {
		return notWritable(c.Capabilities(), vendor)
	}
	if p.prune && !vendor.Has(rcp.MethodRCPGoList) {
		return fmt.Errorf("--prune needs a server that lists its documents (%s); this one does not", rcp.MethodRCPGoList)
	}
	todo, err := p.changed(ctx, c, vendor, docs, rep)
	if err != nil {
		if ctx.Err() != nil {
			rep.Interrupted = true
			return p.finish(env, rep)
		}
		return err
	}
	s := &sender{plan: p, c: c, rep: rep, perFile: perFile, limits: limitsOf(vendor, p.batch)}
	if err := s.send(ctx, env, todo); err != nil {
		return err
	}
	if p.prune && !rep.Interrupted {
		if rep.Pruned, err = prune(ctx, c, p.paths, present); err != nil {
			return err
		}
	}
	if p.wait && !rep.Interrupted {
		if err := waitDerived(ctx, env, c, p.waitFor, p.json); err != nil {
			return err
		}
	}
	return p.finish(env, rep)
}

// notWritable says why the server takes no index/add: read-only (and why,
// when it tells), or no index at all.
func notWritable(caps *rcp.Capabilities, vendor *rcp.RCPGoCap) error {
	switch {
	case vendor != nil && vendor.ReadOnly != "":
		return fmt.Errorf("the server's index is read-only: %s", vendor.ReadOnly)
	case caps.Index != nil:
		return errors.New("the server's index is read-only (capabilities.index.writable is false); it does not say why")
	}
	return errors.New("the server has no index to write to (it does not advertise the index capability)")
}

// read extracts the documents of files; files that cannot be read join
// rep.Skipped (failed when named on the command line, or when the reason
// is not that they hold no text). present holds the ids of every file
// that still exists (read or not), so a transient read error never prunes
// a document; perFile counts each file's documents.
func (p *addPlan) read(ctx context.Context, env *Env, files []string, rep *addReport) (docs []pending, present map[string]bool, perFile map[string]int) {
	present, perFile = map[string]bool{}, map[string]int{}
	named := map[string]bool{}
	for _, path := range p.paths {
		named[path] = true
	}
	var bar *progress.Bar
	if len(files) > 1 && isTTY(env.Stderr) {
		bar = progress.New(env.Stderr, "reading", int64(len(files)), progress.WithUnit("files"))
		defer bar.Finish()
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return docs, present, perFile
		}
		if bar != nil {
			bar.Add(1)
		}
		ds, err := ingest.ReadFile(ctx, f)
		if err != nil {
			rep.Skipped = append(rep.Skipped, readSkip(f, err, named[f]))
			if !errors.Is(err, ingest.ErrBinary) && !errors.Is(err, ingest.ErrNoText) {
				id, _ := ingest.SourceID(f)
				present[id] = true
			}
			continue
		}
		for _, d := range ds {
			present[d.ID] = true
			docs = append(docs, pending{doc: d, path: f})
		}
		perFile[f] = len(ds)
		if cs, ok := ds[0].Meta[ingest.MetaCharset].(string); ok && len(ds) == 1 {
			from, _ := ds[0].Meta[ingest.MetaCharsetFrom].(string)
			rep.Decoded = append(rep.Decoded, decodedFile{Path: f, Charset: cs, From: from})
		}
	}
	return docs, present, perFile
}

// readSkip words why a file was not read. Binary content and files without
// text found in a folder are left out by rule; named, or for any other
// reason (too large, unreadable), they fail the command.
func readSkip(path string, err error, named bool) ingest.Skip {
	reason := strings.TrimPrefix(err.Error(), "ingest: ")
	reason = strings.TrimPrefix(reason, path+": ")
	byRule := false
	for _, e := range []error{ingest.ErrBinary, ingest.ErrNoText} {
		if errors.Is(err, e) {
			reason, byRule = e.Error(), true
		}
	}
	if named && errors.Is(err, ingest.ErrBinary) {
		reason += " (rcp index add reads text files, whatever their name, and PDF)"
	}
	return ingest.Skip{Path: path, Reason: reason, Failed: named || !byRule}
}

// changed drops the file documents the server already holds as they would
// be written now — same content hash, format and index options (chunk,
// contextual): a file re-added with --chunk after a plain add is updated —
// and labels the others added or updated. Without x-rcpgo/get every
// document is sent (an upsert: still no duplicates).
func (p *addPlan) changed(ctx context.Context, c *rcp.Client, vendor *rcp.RCPGoCap, docs []pending, rep *addReport) ([]pending, error) {
	opts := p.indexOptions()
	for i := range docs {
		if _, isFile := docs[i].doc.Meta[ingest.MetaContentHash]; isFile && opts != "" {
			docs[i].doc.Meta[ingest.MetaIndexOptions] = opts
		}
	}
	stored := map[string]string{} // id → fingerprint of the stored document
	if vendor.Has(rcp.MethodRCPGoGet) {
		var ids []string
		for _, d := range docs {
			if _, ok := d.doc.Meta[ingest.MetaContentHash]; ok {
				ids = append(ids, d.doc.ID)
			}
		}
		for chunk := range slices.Chunk(ids, 500) {
			var res rcp.GetDocumentsResult
			if err := c.Call(ctx, rcp.MethodRCPGoGet, rcp.GetDocumentsParams{IDs: chunk}, &res); err != nil {
				return nil, fmt.Errorf("reading stored content hashes: %w", err)
			}
			for _, d := range res.Documents {
				stored[d.ID] = fingerprint(d.Meta)
			}
		}
	}
	out := docs[:0]
	for _, d := range docs {
		_, isFile := d.doc.Meta[ingest.MetaContentHash]
		old, known := stored[d.doc.ID]
		switch {
		case !isFile:
		case !known:
			d.kind = "added"
		case old == fingerprint(d.doc.Meta):
			rep.Unchanged++
			continue
		default:
			d.kind = "updated"
		}
		out = append(out, d)
	}
	rep.ToSend = len(out)
	return out, nil
}

// indexOptions is the MetaIndexOptions value of this add ("" for none).
func (p *addPlan) indexOptions() string {
	var o []string
	if p.chunk || p.contextual {
		o = append(o, "chunk")
	}
	if p.contextual {
		o = append(o, "contextual")
	}
	return strings.Join(o, ",")
}

// fingerprint is what decides whether a stored file document is current.
func fingerprint(meta map[string]any) string {
	s := func(k string) string { v, _ := meta[k].(string); return v }
	return s(ingest.MetaContentHash) + "|" + s("format") + "|" + s(ingest.MetaIndexOptions)
}

// finish prints the report and returns the exit code's error.
func (p *addPlan) finish(env *Env, rep *addReport) error {
	if err := p.print(env, rep); err != nil {
		return err
	}
	return rep.exitCode()
}

func (p *addPlan) print(env *Env, rep *addReport) error {
	if p.json {
		return writeJSON(env.Stdout, rep)
	}
	if p.verbose {
		for _, s := range rep.Skipped {
			if !s.Failed {
				fmt.Fprintf(env.Stderr, "skipped %s: %s\n", s.Path, s.Reason)
			}
		}
		for _, d := range rep.Decoded {
			fmt.Fprintf(env.Stderr, "decoded %s from %s (%s)\n", d.Path, d.Charset, d.From)
		}
	}
	w := env.Stdout
	msg := fmt.Sprintf("indexed %s: %d new, %d updated, %d unchanged", wording.Plural(rep.Files, "file", "files"), rep.Added, rep.Updated, rep.Unchanged)
	if other := rep.Documents - rep.Added - rep.Updated; other > 0 {
		msg += "; " + wording.Plural(other, "JSONL document", "JSONL documents")
	}
	if rep.Chunks > 0 {
		msg += " (" + wording.Plural(rep.Chunks, "chunk", "chunks") + ")"
	}
	if p.prune {
		msg += fmt.Sprintf("; pruned %d", rep.Pruned)
	}
	fmt.Fprintln(w, msg)
	printSkips(w, rep.Skipped, p.verbose)
	if len(rep.Decoded) > 0 {
		fmt.Fprintf(w, "decoded %s that %s not UTF-8: %s", wording.Plural(len(rep.Decoded), "file", "files"),
			map[bool]string{true: "was", false: "were"}[len(rep.Decoded) == 1], decodedSummary(rep.Decoded))
		if !p.verbose {
			fmt.Fprint(w, " (--verbose lists them)")
		}
		fmt.Fprintln(w)
	}
	switch {
	case rep.Interrupted && rep.ToSend == 0:
		fmt.Fprintln(w, "interrupted before anything was sent; run it again")
	case rep.Interrupted:
		fmt.Fprintf(w, "interrupted: %d of %s sent; run it again to resume (what was sent is stored, and unchanged files are skipped)\n",
			rep.Documents, wording.Plural(rep.ToSend, "document", "documents"))
	}
	return nil
}

// printSkips prints the files left out: those that fail the command one
// by one with their reason, the others counted by reason.
func printSkips(w interface{ Write([]byte) (int, error) }, skipped []ingest.Skip, verbose bool) {
	var byRule []ingest.Skip
	for _, s := range skipped {
		if !s.Failed {
			byRule = append(byRule, s)
		}
	}
	if len(byRule) > 0 {
		fmt.Fprintf(w, "skipped %s: %s", wording.Plural(len(byRule), "file", "files"), skipSummary(byRule))
		if !verbose {
			fmt.Fprint(w, " (--verbose lists them)")
		}
		fmt.Fprintln(w)
	}
	for _, s := range skipped {
		if s.Failed {
			fmt.Fprintf(w, "not indexed: %s: %s\n", s.Path, s.Reason)
		}
	}
}

// decodedSummary counts the decoded files by charset.
func decodedSummary(ds []decodedFile) string {
	var skips []ingest.Skip
	for _, d := range ds {
		skips = append(skips, ingest.Skip{Reason: "as " + d.Charset + " (" + d.From + ")"})
	}
	return skipSummary(skips)
}

// limitsOf is how large one index/add may be: the server's advertised
// limits (x-rcpgo.limits), else RCP's common 16 MiB request and --batch
// documents.
func limitsOf(vendor *rcp.RCPGoCap, batch int) rcp.RCPGoLimits {
	l := rcp.RCPGoLimits{RequestBytes: rcp.DefaultMaxFrameBytes, AddDocuments: batch}
	if vendor != nil && vendor.Limits != nil {
		if vendor.Limits.RequestBytes > 0 {
			l.RequestBytes = vendor.Limits.RequestBytes
		}
		if n := vendor.Limits.AddDocuments; n > 0 && n < batch {
			l.AddDocuments = n
		}
	}
	return l
}

// pathOf names a document's file for a report (a JSONL line by its id too).
func pathOf(d pending) string {
	if d.kind == "" && d.doc.ID != "" {
		return d.path + " (id " + d.doc.ID + ")"
	}
	return d.path
}
