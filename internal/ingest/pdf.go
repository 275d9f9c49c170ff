package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/ledongthuc/pdf"
)

// Bounds of PDF extraction (issue 33 items 3 and 4): a page tree that
// points at itself, a /Count of two billion and a compressed content
// stream that inflates a thousandfold are all a few hundred bytes.
const (
	// MaxPDFPages is the most pages read.
	MaxPDFPages = 10000
	// maxPageTreeDepth and maxPageTreeNodes bound the walk of /Pages.
	maxPageTreeDepth = 64
	maxPageTreeNodes = MaxPDFPages + MaxPDFPages/4
	// MaxPDFStreamBytes caps the decompressed bytes of the content and
	// ToUnicode streams of all pages together.
	MaxPDFStreamBytes = 64 << 20
	// MaxTextBytes caps the text extracted from one file (any format).
	MaxTextBytes = 32 << 20
)

// ErrTooLarge is returned for a file whose extraction would exceed a
// bound (pages, decompressed bytes, text bytes).
var ErrTooLarge = errors.New("the file expands beyond what is extracted")

// pdfText extracts the plain text of every page, pages separated by form
// feeds so page numbers can be recovered from offsets. The page tree is
// walked by this package (depth, node and page bounds, a visited set over
// indirect objects), each page's decompressed streams are measured before
// the parser reads them, the text is capped, and ctx is checked between
// pages.
func pdfText(ctx context.Context, b []byte) (title, text string, err error) {
	defer func() {
		// The PDF parser panics on some malformed files; bad input must
		// never crash the CLI.
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed PDF: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", "", err
	}
	pages, err := pageList(ctx, r.Trailer().Key("Root").Key("Pages"))
	if err != nil {
		return "", "", err
	}
	var sb strings.Builder
	budget := int64(MaxPDFStreamBytes)
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return "", "", err
		}
		if budget, err = measurePage(p, budget); err != nil {
			return "", "", fmt.Errorf("page %d: %w", i+1, err)
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return "", "", fmt.Errorf("page %d: %w", i+1, err)
		}
		if i > 0 {
			sb.WriteString("\f")
		}
		if sb.Len()+len(t) > MaxTextBytes {
			return "", "", fmt.Errorf("%w: more than %d bytes of text", ErrTooLarge, MaxTextBytes)
		}
		sb.WriteString(t)
	}
	if info := r.Trailer().Key("Info"); !info.IsNull() {
		title = strings.TrimSpace(info.Key("Title").Text())
	}
	if strings.TrimSpace(sb.String()) == "" {
		return "", "", ErrNoText
	}
	return title, sb.String(), nil
}

// pageList walks the page tree depth first, in document order. /Count is
// never trusted; an indirect node met twice is skipped (a cycle); the walk
// stops at maxPageTreeDepth levels, maxPageTreeNodes nodes and
// MaxPDFPages pages.
func pageList(ctx context.Context, root pdf.Value) ([]pdf.Page, error) {
	var pages []pdf.Page
	visited := map[uint64]bool{}
	nodes := 0
	var walk func(n pdf.Value, depth int, parent uint64) error
	walk = func(n pdf.Value, depth int, parent uint64) error {
		if nodes++; nodes > maxPageTreeNodes || depth > maxPageTreeDepth {
			return fmt.Errorf("%w: the page tree is over %d nodes or %d levels deep", ErrTooLarge, maxPageTreeNodes, maxPageTreeDepth)
		}
		if nodes%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		// An indirect object is identified by its number: a kid resolved
		// from a reference to another object than its parent's. A direct
		// kid shares its parent's number, and so does a node listing
		// itself: a page is read, a node of pages is not.
		typ := n.Key("Type").Name()
		if id := objectID(n); id != parent {
			if visited[id] {
				return nil
			}
			visited[id] = true
			parent = id
		} else if typ == "Pages" && depth > 0 {
			return nil // a node of pages listing itself
		}
		switch typ {
		case "Page":
			if len(pages) == MaxPDFPages {
				return fmt.Errorf("%w: more than %d pages", ErrTooLarge, MaxPDFPages)
			}
			pages = append(pages, pdf.Page{V: n})
		case "Pages":
			kids := n.Key("Kids")
			for i := 0; i < kids.Len(); i++ {
				if err := walk(kids.Index(i), depth+1, parent); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return pages, walk(root, 0, ^uint64(0))
}

// objectID is the object number and generation of v's indirect object,
// read from the parser's Value (it exposes no accessor).
func objectID(v pdf.Value) uint64 {
	ptr := reflect.ValueOf(v).FieldByName("ptr")
	if !ptr.IsValid() || ptr.NumField() < 2 {
		return 0
	}
	return ptr.Field(0).Uint()<<16 | ptr.Field(1).Uint()
}

// measurePage decompresses the page's content streams and its fonts'
// ToUnicode maps, counting the bytes against budget, before the parser
// reads them: a stream that would take the budget below zero is refused
// after budget+1 bytes, however far it would inflate.
func measurePage(p pdf.Page, budget int64) (int64, error) {
	var streams []pdf.Value
	c := p.V.Key("Contents")
	if c.Kind() == pdf.Array {
		for i := 0; i < c.Len(); i++ {
			streams = append(streams, c.Index(i))
		}
	} else {
		streams = append(streams, c)
	}
	fonts := p.Resources().Key("Font")
	for _, name := range fonts.Keys() {
		streams = append(streams, fonts.Key(name).Key("ToUnicode"))
	}
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		rd := s.Reader()
		n, err := io.Copy(io.Discard, io.LimitReader(rd, budget+1))
		_ = rd.Close()
		if n > budget {
			return 0, fmt.Errorf("%w: more than %d decompressed bytes of content", ErrTooLarge, MaxPDFStreamBytes)
		}
		if err != nil {
			return 0, err
		}
		budget -= n
	}
	return budget, nil
}
