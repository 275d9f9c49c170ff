// Package didyoumean suggests the command a mistyped one was meant to be,
// for rcp's and rcpd's "unknown command" errors.
package didyoumean

import "iter"

// maxEdits is how far a typo may be from the name it suggests: two edits
// catch a swapped pair ("idnex") or a doubled and a dropped letter.
const maxEdits = 2

// Nearest is the name in names fewest edits from typed (the first in
// lexical order on a tie), or "" when none is within two edits.
func Nearest(typed string, names iter.Seq[string]) string {
	best, bestD := "", maxEdits+1
	for n := range names {
		if d := distance(typed, n); d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, by bytes (command
// names are ASCII).
func distance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
