// Package demo embeds the sample corpus that `rcpd serve --demo` loads: forty
// short passages about information retrieval, written for this project and
// released with it under the MIT licence. Each line is a BEIR-style document:
// {"_id", "title", "text", "metadata": {"topic", "year", "lang"}}.
package demo

import _ "embed"

// CorpusJSONL is the sample corpus, one JSON document per line.
//
//go:embed corpus.jsonl
var CorpusJSONL []byte
