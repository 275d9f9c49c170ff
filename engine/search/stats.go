package search

// Stats describes a backend's current state; a backend fills what it
// knows (Weaviate: Version and Docs).
type Stats struct {
	Version          string
	Docs             int          // live units (documents and chunks)
	Deleted          int          // deleted units still occupying segments
	Segments         int          // all segments
	MemSegments      int          // segments not yet flushed to disk
	SegmentBytes     int64        // bytes of segment images
	PositionBytes    int64        // of which positions (for phrase queries)
	SegmentParts     SegmentParts // SegmentBytes by what they hold
	Terms            int          // sum of per-segment dictionary sizes
	RetainedVersions int
}

// SegmentParts splits segment bytes by what they hold, summed over
// segments.
type SegmentParts struct {
	Documents int64 // sequence numbers, field lengths, ids
	Terms     int64 // the term dictionary
	Postings  int64
	Positions int64 // for phrase queries
	Keywords  int64 // metadata keyword dictionary and doc lists
	Numbers   int64 // numeric metadata columns
	Framing   int64 // header, section table, footer
}
