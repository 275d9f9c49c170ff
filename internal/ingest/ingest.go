// Package ingest turns files into RCP documents for `rcp index add`: it walks
// paths, reports what it leaves out and why, extracts text from plain text,
// Markdown (and MDX), reStructuredText, Org, AsciiDoc, HTML, PDF, BEIR-style
// JSONL and (when asked) source code, and gives every file's document a
// stable id, its file:// URI, plus a content hash for change detection.
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
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/rcp"
)

// MaxFileBytes caps one text, Markdown, HTML or PDF file (a document);
// JSONL corpora are streamed line by line instead.
const MaxFileBytes = 64 << 20

// Formats recognised by file extension. Source code ("code") is read only
// when Options.Code asks for it.
var formats = map[string]string{
	".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
	".rst": "rst", ".org": "org", ".adoc": "asciidoc", ".asciidoc": "asciidoc",
	".html": "html", ".htm": "html", ".pdf": "pdf", ".jsonl": "jsonl", ".ndjson": "jsonl",
}

// codeExts are the source code extensions read as plain text with --code.
var codeExts = []string{
	".go", ".py", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".scala", ".c", ".h", ".cc", ".cpp", ".hpp",
	".rs", ".rb", ".php", ".cs", ".swift", ".m", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".lua", ".pl",
	".r", ".jl", ".hs", ".ex", ".exs", ".erl", ".clj", ".dart", ".vue", ".svelte", ".css", ".scss",
	".yaml", ".yml", ".toml", ".ini", ".cfg", ".proto", ".graphql", ".tf", ".nix", ".zig",
}

// Options select what Collect reads.
type Options struct {
	// Code reads source code (.go, .py, .ts, …) as plain text.
	Code bool
}

// formatOf returns the format of path by extension ("" when unsupported).
func formatOf(path string) string {
	ext := strings.ToLower(filepath.Ext(path))
	if f, ok := formats[ext]; ok {
		return f
	}
	if slices.Contains(codeExts, ext) {
		return "code"
	}
	return ""
}

// Supported reports whether ReadFile and ReadUpload can read path (by its
// extension; source code included).
func Supported(path string) bool { return formatOf(path) != "" }

// reads reports whether Collect reads path under opt.
func (opt Options) reads(path string) bool {
	f := formatOf(path)
	return f != "" && (f != "code" || opt.Code)
}

// Skip is a file Collect or ReadFile left out, and why. Failed marks what
// the user asked for and did not get — a path named on the command line
// that is missing or not text, a text file that could not be read or sent —
// as opposed to files a folder walk leaves out by rule (hidden, an
// unsupported type, binary, empty): `rcp index add` exits 1 when any skip
// failed, after indexing everything else.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Failed bool   `json:"failed,omitempty"`
}

// unsupportedReason says why a walked file is not read.
func (opt Options) unsupportedReason(path string) string {
	ext := strings.ToLower(filepath.Ext(path))
	switch {
	case formatOf(path) == "code":
		return fmt.Sprintf("source code (%s): pass --code to index it as text", ext)
	}
	return fmt.Sprintf("unsupported type %s", ext)
}

// Collect expands paths (files and directories, recursively) into the sorted
// list of files to read, and lists the files it left out with the reason
// each was. A file named in paths is always read (whatever its name says:
// ReadFile reads it as text when it is, and refuses it when not); a missing
// path or one that is not a regular file is a failed Skip. In a folder,
// hidden files and directories are ignored, files are read by extension,
// and files without one (LICENSE, Makefile, README) when their first bytes
// are text. err is only a folder that cannot be walked at all.
func Collect(paths []string, opt Options) (files []string, skipped []Skip, err error) {
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			skipped = append(skipped, Skip{p, statReason(err), true})
			continue
		case !fi.IsDir() && !fi.Mode().IsRegular():
			skipped = append(skipped, Skip{p, fmt.Sprintf("not a regular file (%s)", fi.Mode().Type()), true})
			continue
		case !fi.IsDir():
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == p {
					return err
				}
				skipped = append(skipped, Skip{path, statReason(err), true}) // an unreadable subfolder
				return nil
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case d.IsDir():
			case !d.Type().IsRegular():
				skipped = append(skipped, Skip{Path: path, Reason: "not a regular file"})
			case opt.reads(path):
				files = append(files, path)
			case filepath.Ext(path) == "":
				if reason := sniffText(path); reason == "" {
					files = append(files, path)
				} else {
					skipped = append(skipped, Skip{Path: path, Reason: reason})
				}
			default:
				skipped = append(skipped, Skip{Path: path, Reason: opt.unsupportedReason(path)})
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("ingest: %w", err)
		}
	}
	sort.Strings(files)
	return files, skipped, nil
}

// statReason words a failed stat or walk for a Skip.
func statReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// sniffText says why the file at path is not read as text ("" when it is):
// its first sniffLen bytes are binary.
func sniffText(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return statReason(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, sniffLen))
	if err != nil {
		return statReason(err)
	}
	if _, _, err := decodeText(b, false); err != nil {
		return ErrBinary.Error()
	}
	return ""
}

// ContentID returns "sha256:" and the first 32 hex digits of the SHA-256 of
// text: the id of a JSONL line without one, and the content hash a file's
// document carries (meta "contentHash") for change detection.
func ContentID(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// SourceID returns the stable id of the document read from the file at
// path: its absolute file:// URI. Re-adding an edited file therefore
// replaces its document (an upsert, §7.10) instead of adding a second one.
// A byte of the path that is not UTF-8, a control character and "%" are
// escaped as %XX, so two paths never share an id: JSON turned every
// invalid byte into U+FFFD, and files x\xff.txt and x\xfe.txt were one
// document (the second replaced the first, both reported indexed).
func SourceID(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	return "file://" + escapePath(filepath.ToSlash(abs)), nil
}

// escapePath escapes the bytes of p that are not UTF-8, its control
// characters (a newline, terminal escapes) and "%" as %XX; the rest, and
// so every ordinary path, is kept as it is. Escaping is per character, so
// a folder's id is a prefix of its files' ids.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		if (r == utf8.RuneError && n == 1) || r == '%' || unicode.IsControl(r) {
			for _, c := range []byte(p[i : i+n]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		} else {
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	return b.String()
}

// MetaContentHash is the meta key holding a file document's ContentID.
const MetaContentHash = "contentHash"

// MetaIndexOptions is the meta key recording the index/add options a file
// document was written with ("chunk", "chunk,contextual"; absent for
// none): `rcp index add` re-sends an unchanged file whose options changed.
const MetaIndexOptions = "indexOptions"

// ReadFile extracts the documents of one file: one for text formats, whose
// id is SourceID(path) and whose meta carries "path", "title", "format",
// "source" and MetaContentHash; one per line for JSONL, which keeps its own
// "_id" and "metadata". A file of no known format (no extension, or one
// named explicitly) is read as plain text. Binary content is refused with
// ErrBinary, a file without text with ErrNoText. Text that is not UTF-8 is
// transcoded (see decodeText), and the document's meta says what it was
// taken to be: "charset" and "charsetFrom" (bom, meta, detected, default).
func ReadFile(ctx context.Context, path string) ([]rcp.Document, error) {
	format := formatOf(path)
	if format == "" {
		format = "text"
	}
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
	x, err := extract(ctx, format, path, b)
	if err != nil {
		return nil, err
	}
	id, err := SourceID(path)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	meta := map[string]any{"path": abs, "title": x.title, "format": format, "source": id, MetaContentHash: ContentID(x.text)}
	if format == "code" {
		meta["language"] = strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	}
	x.describe(meta)
	return []rcp.Document{{ID: id, Text: x.text, Meta: meta}}, nil
}

// ReadUpload extracts the documents of a file received by name rather than
// read from disk (an upload): its format comes from name's extension, and
// meta carries "filename", "title" and "format" instead of a path. Its id
// is the content hash (there is no path to name it by); a file without
// text gives no document.
func ReadUpload(ctx context.Context, name string, b []byte) ([]rcp.Document, error) {
	format := formatOf(name)
	if format == "" {
		return nil, fmt.Errorf("ingest: %s: unsupported file type (want txt, md, mdx, rst, org, adoc, html, pdf, jsonl or source code)", name)
	}
	if format == "jsonl" {
		return ReadJSONL(ctx, bytes.NewReader(b), name)
	}
	x, err := extract(ctx, format, name, b)
	if errors.Is(err, ErrNoText) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	meta := map[string]any{"filename": filepath.Base(name), "title": x.title, "format": format}
	x.describe(meta)
	return []rcp.Document{{ID: ContentID(x.text), Text: x.text, Meta: meta}}, nil
}

// extracted is the text of one file, its title, and what its bytes were
// taken to be.
type extracted struct {
	title, text string
	dec         Decoding
}

// describe records in meta a charset other than plain UTF-8.
func (x *extracted) describe(meta map[string]any) {
	if !x.dec.UTF8() {
		meta[MetaCharset], meta[MetaCharsetFrom] = x.dec.Charset, x.dec.From
	}
}

// Meta keys of a document whose file was not plain UTF-8: the charset it
// was decoded from, and how that was decided (Decoding.From).
const (
	MetaCharset     = "charset"
	MetaCharsetFrom = "charsetFrom"
)

// extract returns the title and the trimmed, valid UTF-8 text of one
// non-JSONL file (ErrBinary for content that is not text, ErrNoText for a
// file holding nothing to index). The title falls back to the file name
// without its extension.
func extract(ctx context.Context, format, name string, b []byte) (x extracted, err error) {
	if format == "pdf" {
		x.dec = plainUTF8
		x.title, x.text, err = pdfText(ctx, b)
	} else {
		x, err = decodeFormat(format, b)
	}
	if err == nil && len(x.text) > MaxTextBytes {
		err = fmt.Errorf("%w: more than %d bytes of text", ErrTooLarge, MaxTextBytes)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return x, fmt.Errorf("ingest: %s: %w", name, err)
	}
	if !utf8.ValidString(x.text) {
		x.text = strings.ToValidUTF8(x.text, "\uFFFD")
	}
	x.text = strings.TrimSpace(x.text)
	if x.text == "" {
		return x, fmt.Errorf("ingest: %s: %w", name, ErrNoText)
	}
	if x.title == "" {
		x.title = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return x, nil
}

// decodeFormat decodes b as text and extracts the title of format.
func decodeFormat(format string, b []byte) (x extracted, err error) {
	b, x.dec, err = decodeText(b, format == "html")
	if err != nil {
		return x, err
	}
	if format == "html" {
		x.title, x.text, err = htmlText(b)
		return x, err
	}
	x.text = string(b)
	switch format {
	case "markdown":
		x.title = markdownTitle(x.text)
	case "rst":
		x.title = rstTitle(x.text)
	case "org":
		x.title = orgTitle(x.text)
	case "asciidoc":
		x.title = asciidocTitle(x.text)
	}
	return x, nil
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

// ErrNoText is returned for files with no extractable text.
var ErrNoText = errors.New("no extractable text")

// ErrBinary is returned for files whose content is not text.
var ErrBinary = errors.New("binary content, not text")
