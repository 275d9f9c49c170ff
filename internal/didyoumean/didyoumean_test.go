package didyoumean

import (
	"slices"
	"testing"
)

func TestNearest(t *testing.T) {
	names := []string{"conformance", "index", "info", "ping", "query", "serve"}
	for _, tc := range []struct{ typed, want string }{
		{"querry", "query"}, {"idnex", "index"}, {"sevre", "serve"}, {"conformence", "conformance"},
		{"inf", "info"}, // one edit from info, two from index
		{"png", "ping"}, // a dropped letter
		{"xyzzy", ""},   // far from every name
		{"", ""},        // nothing typed
		{"index", "index"},
	} {
		if got := Nearest(tc.typed, slices.Values(names)); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"idnex", "index", 2}, {"query", "query", 0}} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
