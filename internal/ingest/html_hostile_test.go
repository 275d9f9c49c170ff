package ingest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Deeply nested and very long HTML is extracted in bounded time and
// memory (the parser caps nesting; the walk is linear).
func TestHostileHTML(t *testing.T) {
	for name, doc := range map[string]string{
		"100 000 nested divs": strings.Repeat("<div>", 100000) + "deep text" + strings.Repeat("</div>", 100000),
		"a million tags":      strings.Repeat("<p>x</p>", 1000000),
	} {
		start := time.Now()
		_, err := ReadUpload(context.Background(), "x.html", []byte(doc))
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: %v (%v)", name, d, err)
		}
	}
}
