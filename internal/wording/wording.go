// Package wording holds the phrases rcp, rcpd and the MCP face share, so
// that one thing is said one way everywhere: counts that agree with their
// noun, and the one wording of an empty result.
package wording

import "strconv"

// NoHits is what every face says of a search that found nothing: rcp
// prints NoHits, the MCP face and the console (console.js) the sentence.
const (
	NoHits         = "no hits"
	NoHitsSentence = "No hits."
)

// Plural is "1 file", "2 files": n and the noun that agrees with it.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
