package rcp

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Content block types and modalities of §4.8.
const (
	ContentText  = "text"
	ContentImage = "image"
	ContentAudio = "audio"
	ContentBlob  = "blob"

	ModalityText       = "text"
	ModalityImage      = "image"
	ModalityAudio      = "audio"
	ModalityCode       = "code"
	ModalityMultimodal = "multimodal"
)

// Content is a §4.8 content block. Where the spec accepts "string or
// Content", a bare JSON string decodes to a text block with Bare set, and a
// Bare block encodes back to a bare string, so text-only peers see the terse
// form they expect.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"` // base64 (RFC 4648)
	URI      string `json:"uri,omitempty"`

	// Bare marks a text block that travels as a bare JSON string.
	Bare bool `json:"-"`
}

// Text returns a bare text input: it encodes as a JSON string.
func Text(s string) Content { return Content{Type: ContentText, Text: s, Bare: true} }

// TextInputs turns strings into bare text inputs.
func TextInputs(ss ...string) []Content {
	out := make([]Content, len(ss))
	for i, s := range ss {
		out[i] = Text(s)
	}
	return out
}

// IsText reports whether the block is a text block.
func (c Content) IsText() bool { return c.Type == ContentText }

// Validate checks the §4.8 shape rules: a known type, text for text blocks,
// mimeType and exactly one of data/uri for the others.
func (c Content) Validate() error {
	switch c.Type {
	case ContentText:
		return nil
	case ContentImage, ContentAudio, ContentBlob:
		if c.MimeType == "" {
			return errors.New("mimeType is required for non-text content")
		}
		if (c.Data == "") == (c.URI == "") {
			return errors.New("a content block carries exactly one of data or uri")
		}
		return nil
	default:
		return errors.New("unknown content type " + c.Type)
	}
}

// MarshalJSON writes a bare string for Bare text blocks.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Bare && c.Type == ContentText {
		return json.Marshal(c.Text)
	}
	type plain Content
	return json.Marshal(plain(c))
}

// UnmarshalJSON accepts a bare string or a block object.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil // §4.6: null is absent
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := unquote(b, &s); err != nil {
			return err
		}
		*c = Text(s)
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("content must be a string or a content block object")
	}
	type plain Content
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Content(p)
	return nil
}

// Query is the §7.7 query input: a string, one Content block, or an array of
// blocks. It remembers which form it arrived in and encodes back to it.
type Query struct {
	Blocks []Content
	form   queryForm
}

type queryForm uint8

const (
	formString queryForm = iota
	formBlock
	formArray
)

// TextQuery returns a plain string query.
func TextQuery(s string) Query { return Query{Blocks: []Content{Text(s)}, form: formString} }

// BlocksQuery returns a query made of content blocks (encoded as an array).
func BlocksQuery(blocks ...Content) Query { return Query{Blocks: blocks, form: formArray} }

// IsZero reports whether the query is absent.
func (q Query) IsZero() bool { return q.Blocks == nil }

// TextOnly reports whether every block is text.
func (q Query) TextOnly() bool {
	for _, b := range q.Blocks {
		if !b.IsText() {
			return false
		}
	}
	return true
}

// String joins the text of the query's text blocks with spaces.
func (q Query) String() string {
	if len(q.Blocks) == 1 && q.Blocks[0].IsText() {
		return q.Blocks[0].Text // the common query: no copy
	}
	var buf bytes.Buffer
	for _, b := range q.Blocks {
		if b.IsText() {
			if buf.Len() > 0 {
				buf.WriteByte(' ')
			}
			buf.WriteString(b.Text)
		}
	}
	return buf.String()
}

// MarshalJSON writes the form the query was built or decoded with.
func (q Query) MarshalJSON() ([]byte, error) {
	switch {
	case q.form == formString && len(q.Blocks) == 1 && q.Blocks[0].IsText():
		return json.Marshal(q.Blocks[0].Text)
	case q.form == formBlock && len(q.Blocks) == 1:
		b := q.Blocks[0]
		b.Bare = false
		return json.Marshal(b)
	default:
		out := make([]Content, len(q.Blocks))
		for i, b := range q.Blocks {
			b.Bare = false
			out[i] = b
		}
		return json.Marshal(out)
	}
}

// UnmarshalJSON accepts a string, a block or an array of blocks.
func (q *Query) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("empty query")
	}
	if string(b) == "null" {
		return nil // §4.6: null is absent
	}
	switch b[0] {
	case '"':
		var s string
		if err := unquote(b, &s); err != nil {
			return err
		}
		*q = TextQuery(s)
	case '{':
		var c Content
		if err := c.UnmarshalJSON(b); err != nil {
			return err
		}
		*q = Query{Blocks: []Content{c}, form: formBlock}
	case '[':
		var cs []Content
		if err := json.Unmarshal(b, &cs); err != nil {
			return err
		}
		if len(cs) == 0 {
			return errors.New("query array must not be empty")
		}
		for i := range cs {
			cs[i].Bare = false
		}
		*q = Query{Blocks: cs, form: formArray}
	default:
		return errors.New("query must be a string, a content block or an array of content blocks")
	}
	return nil
}
