package search

// Query is one sparse search request.
type Query struct {
	// Text is analysed into terms that are OR-ed and ranked by BM25F (its
	// quoted phrases, engine/query, restrict the documents that rank). An
	// empty Text with a Filter browses: it returns the filter's matches in
	// id order, with score 0.
	Text    string
	K       int    // hits wanted (default 10)
	Filter  Filter // nil: no filter
	Version string // pin to this snapshot; "" serves the current one
	// SkipDocs leaves Hit.Doc nil (no stored-document reads).
	SkipDocs bool
	// NoText leaves Hit.Doc.Text empty: the text is neither read nor
	// decompressed (Hit.Facts still has its length in characters and
	// tokens).
	NoText bool
	// Highlight fills Hit.Matches with the offsets of matched terms.
	Highlight bool
	// MaxTerms caps the distinct analysed terms (ErrTooManyTerms beyond
	// it); 0 means no cap.
	MaxTerms int
}

// Hit is one ranked result.
type Hit struct {
	ID      string
	DocNum  DocNum
	Score   float64
	Doc     *Document // stored document, unless Query.SkipDocs
	Facts   Facts     // derived at index time, with Doc
	Matches []Match   // when Query.Highlight
}

// Match is one occurrence of a query term in a hit, as byte offsets into
// the stored field.
type Match struct {
	Field    string // "title" or "text"
	Term     string // analysed term
	Position int
	Start    int
	End      int
}

// Result is the answer to a Query.
type Result struct {
	Hits    []Hit
	Version string   // the snapshot served
	Terms   []string // the analysed query terms
	Scored  int      // documents fully scored (the rest were pruned)
	// Notes say what the answer may lack, for usage.notes (a remote
	// backend whose ranking of recent writes is approximate).
	Notes []string
}

// Filter is a metadata filter a Backend compiled from a validated filter
// tree (Backend.CompileFilter). It is opaque to everyone else: the engine
// passes it back in Query.Filter to the backend that compiled it.
type Filter any
