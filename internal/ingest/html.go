package ingest

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlText returns the <title> and the visible text of an HTML document,
// with block elements separated by blank lines so the chunker sees
// paragraphs. Scripts, styles and templates are dropped.
func htmlText(b []byte) (title, text string, err error) {
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return "", "", err
	}
	var sb strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Head:
				if n.DataAtom == atom.Head {
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						if c.DataAtom == atom.Title && c.FirstChild != nil {
							title = strings.TrimSpace(c.FirstChild.Data)
						}
					}
				}
				return
			}
		case html.TextNode:
			if t := strings.Join(strings.Fields(n.Data), " "); t != "" {
				if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
					sb.WriteByte(' ')
				}
				sb.WriteString(t)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && isBlock(n.DataAtom) && sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n\n") {
			sb.WriteString("\n\n")
		}
	}
	walk(doc)
	return title, strings.TrimSpace(sb.String()), nil
}

func isBlock(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Section, atom.Article, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Li, atom.Ul, atom.Ol, atom.Pre, atom.Blockquote, atom.Table, atom.Tr, atom.Br, atom.Header, atom.Footer:
		return true
	}
	return false
}
