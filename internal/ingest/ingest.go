// Package ingest turns files into RCP documents for `rcp index add`: it walks
// paths, extracts text from plain text, Markdown, HTML, PDF and BEIR-style
// JSONL, and gives every document a content-hash id so that re-running an
// ingest is an idempotent upsert (§7.10).
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/rcp"
)

// MaxFileBytes caps one text, Markdown, HTML or PDF file (a document);
// JSONL corpora are streamed line by line instead.
const MaxFileBytes = 64 << 20

// Formats recognised by file extension.
var formats = map[string]string{
	".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
	".html": "html", ".htm": "html", ".pdf": "pdf", ".jsonl": "jsonl", ".ndjson": "jsonl",
}

// Supported reports whether path has an extension Collect reads.
func Supported(path string) bool {
	_, ok := formats[strings.ToLower(filepath.Ext(path))]
	return ok
}

// Collect expands paths (files and directories, recursively) into the sorted
// list of supported files. Hidden files and directories are skipped unless
// named explicitly.
func Collect(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		if !fi.IsDir() {
			if !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("ingest: %s is not a regular file (%s)", p, fi.Mode().Type())
			}
			if !Supported(p) {
				return nil, fmt.Errorf("ingest: %s: unsupported file type (want txt, md, html, pdf or jsonl)", p)
			}
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && d.Type().IsRegular() && Supported(path) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ContentID returns the id of a document: "sha256:" and the first 32 hex
// digits of the SHA-256 of its text. Equal text gives an equal id, so a
// re-run replaces rather than duplicates.
func ContentID(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// ReadFile extracts the documents of one file (one for text formats, one per
// line for JSONL). Each document's meta carries "path", "title" and
// "format"; JSONL documents keep their own "_id" and "metadata".
func ReadFile(ctx context.Context, path string) ([]rcp.Document, error) {
	format := formats[strings.ToLower(filepath.Ext(path))]
	// Stat before opening: opening a FIFO blocks until a writer appears.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("ingest: %s is not a regular file (%s)", path, fi.Mode().Type())
	} else if format != "jsonl" && fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("ingest: %s is %d bytes; documents are read up to %d (split it, or use JSONL)", path, fi.Size(), int64(MaxFileBytes))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	if format == "jsonl" {
		return ReadJSONL(ctx, f, path)
	}
	// The size is checked again while reading: the file may have grown.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("ingest: %s exceeds %d bytes", path, int64(MaxFileBytes))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	title, text, err := extract(format, path, b)
	if err != nil || text == "" {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	return []rcp.Document{{
		ID:   ContentID(text),
		Text: text,
		Meta: map[string]any{"path": abs, "title": title, "format": format, "source": "file://" + filepath.ToSlash(abs)},
	}}, nil
}

// ReadUpload extracts the documents of a file received by name rather than
// read from disk (an upload): its format comes from name's extension, and
// meta carries "filename", "title" and "format" instead of a path.
func ReadUpload(ctx context.Context, name string, b []byte) ([]rcp.Document, error) {
	format, ok := formats[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return nil, fmt.Errorf("ingest: %s: unsupported file type (want txt, md, html, pdf or jsonl)", name)
	}
	if format == "jsonl" {
		return ReadJSONL(ctx, bytes.NewReader(b), name)
	}
	title, text, err := extract(format, name, b)
	if err != nil || text == "" {
		return nil, err
	}
	return []rcp.Document{{
		ID:   ContentID(text),
		Text: text,
		Meta: map[string]any{"filename": filepath.Base(name), "title": title, "format": format},
	}}, nil
}

// extract returns the title and the trimmed, valid UTF-8 text of one
// non-JSONL file; an empty text means the file holds nothing to index. The
// title falls back to the file name without its extension.
func extract(format, name string, b []byte) (title, text string, err error) {
	switch format {
	case "text":
		text = string(b)
	case "markdown":
		title, text = markdownTitle(string(b)), string(b)
	case "html":
		title, text, err = htmlText(b)
	case "pdf":
		title, text, err = pdfText(b)
	default:
		return "", "", fmt.Errorf("ingest: %s: unsupported file type", name)
	}
	if err != nil {
		return "", "", fmt.Errorf("ingest: %s: %w", name, err)
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	text = strings.TrimSpace(text)
	if title == "" {
		title = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return title, text, nil
}

// beirDoc is one corpus.jsonl line.
type beirDoc struct {
	ID       json.RawMessage `json:"_id"`
	AltID    json.RawMessage `json:"id"`
	Title    string          `json:"title"`
	Text     string          `json:"text"`
	Metadata map[string]any  `json:"metadata"`
}

// ReadJSONL reads BEIR-style lines {"_id", "title", "text", "metadata"} ("id"
// is accepted for "_id"). Lines without an id get a content-hash id.
func ReadJSONL(ctx context.Context, r io.Reader, name string) ([]rcp.Document, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	var docs []rcp.Document
	line := 0
	for sc.Scan() {
		line++
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var d beirDoc
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("ingest: %s:%d: %w", name, line, err)
		}
		id := idString(d.ID)
		if id == "" {
			id = idString(d.AltID)
		}
		if id == "" {
			id = ContentID(d.Title + "\n" + d.Text)
		}
		meta := map[string]any{}
		for k, v := range d.Metadata {
			meta[k] = v
		}
		if d.Title != "" {
			meta["title"] = d.Title
		}
		docs = append(docs, rcp.Document{ID: id, Text: d.Text, Meta: meta})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ingest: %s: %w", name, err)
	}
	return docs, nil
}

func idString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw) // a numeric id, as written
}

// markdownTitle returns the text of the first ATX heading.
func markdownTitle(s string) string {
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			return strings.TrimSpace(strings.TrimLeft(t, "#"))
		}
	}
	return ""
}

// ErrNoText is returned for files with no extractable text.
var ErrNoText = errors.New("no extractable text")
