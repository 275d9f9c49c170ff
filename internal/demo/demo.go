// Package demo embeds the sample corpus that `rcpd serve --demo` loads: forty
// short passages about information retrieval, written for this project and
// released with it under the MIT licence. Each line is a BEIR-style document:
// {"_id", "title", "text", "metadata": {"topic", "year", "lang"}}.
package demo

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// CorpusJSONL is the sample corpus, one JSON document per line.
//
//go:embed corpus.jsonl
var CorpusJSONL []byte

// Doc is one document of the corpus.
type Doc struct {
	ID       string         `json:"_id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata"`
}

// Docs parses CorpusJSONL.
func Docs() ([]Doc, error) {
	var out []Doc
	sc := bufio.NewScanner(bytes.NewReader(CorpusJSONL))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var d Doc
		if err := json.Unmarshal(line, &d); err != nil {
			return nil, fmt.Errorf("demo corpus: %w", err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}
