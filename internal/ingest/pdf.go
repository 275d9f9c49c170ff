package ingest

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ledongthuc/pdf"
)

// pdfText extracts the plain text of every page, pages separated by form
// feeds so page numbers can be recovered from offsets.
func pdfText(b []byte) (title, text string, err error) {
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
	var sb strings.Builder
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return "", "", fmt.Errorf("page %d: %w", i, err)
		}
		if i > 1 {
			sb.WriteString("\f")
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
