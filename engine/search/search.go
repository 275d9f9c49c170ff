// Package search is the vocabulary the engine and its backends share: the
// documents they store, the queries and hits of sparse recall, compiled
// filters, prepared batches, statistics, the errors a backend reports, and
// the Backend interface itself. It holds types only, no machinery, in the
// way zoekt keeps its api.go apart from its index and its query parser.
//
// The embedded index (engine/index) and Weaviate (engine/weaviate)
// implement Backend; the engine plans requests in these terms and its
// retrieve pipeline runs on them, knowing neither backend.
package search

// Document is one indexable unit: a whole document or a chunk of one.
type Document struct {
	ID     string         `json:"id"`
	Title  string         `json:"title,omitempty"`
	Text   string         `json:"text"`
	Meta   map[string]any `json:"meta,omitempty"`
	Source *Source        `json:"source,omitempty"`
	Chunk  *ChunkRef      `json:"chunk,omitempty"`
}

// Source says where a document came from (for citations).
type Source struct {
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
	Page int    `json:"page,omitempty"`
}

// ChunkRef marks a document as chunk Index of parent document DocID,
// covering bytes [Start, End) of the parent's text.
type ChunkRef struct {
	DocID string `json:"docId"`
	Index int    `json:"index"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Facts are what a backend derives from a document when it writes it, so
// that a hit needs neither the injection screen nor (without its text)
// the text's length at query time.
type Facts struct {
	// ScreenRules names the injection-screen rules (trust.RulesVersion)
	// the verdict was computed with; "" means no verdict is stored.
	ScreenRules string
	ScreenScore float64 // trust.Result.Score
	Suspected   bool    // trust.Result.Suspected
	Runes       int     // characters in Text
	Tokens      int     // chunk.Tokens(Text)
}

// DocNum is an engine-wide document number: unique per stored version of a
// document (an upsert gets a new one), stable across merges and restarts.
// A backend that has none (Weaviate) leaves it 0.
type DocNum uint64
