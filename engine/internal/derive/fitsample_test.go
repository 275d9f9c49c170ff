package derive

import "testing"

func TestFitSample(t *testing.T) {
	if fitSample(100, 100) != nil {
		t.Fatal("a corpus at the limit is sampled")
	}
	keep := fitSample(200_000, 10_000)
	n := 0
	for k := range uint64(200_000) {
		if keep(k + 1) {
			n++
		}
	}
	// Binomial(200 000, 0.05): 10 000 ± 97.
	if n < 9_500 || n > 10_500 {
		t.Fatalf("sampled %d of 200 000 at limit 10 000", n)
	}
	again := fitSample(200_000, 10_000)
	for k := range uint64(1000) {
		if keep(k) != again(k) {
			t.Fatalf("the sample of key %d differs between draws", k)
		}
	}
}
