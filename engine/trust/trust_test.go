package trust

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// TestScreenPrecisionRecall measures the screen on the labelled corpus in
// testdata/injection.jsonl and holds it to precision ≥ 0.9, recall ≥ 0.85.
func TestScreenPrecisionRecall(t *testing.T) {
	f, err := os.Open("testdata/injection.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tp, fp, fn, tn int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ex struct {
			Label bool   `json:"label"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			t.Fatal(err)
		}
		r := Screen(ex.Text)
		if r.Score < 0 || r.Score > 1 {
			t.Fatalf("score %v", r.Score)
		}
		switch {
		case r.Suspected && ex.Label:
			tp++
		case r.Suspected && !ex.Label:
			fp++
			t.Logf("false positive %v: %s", r.Rules, ex.Text)
		case !r.Suspected && ex.Label:
			fn++
			t.Logf("false negative %v: %s", r.Rules, ex.Text)
		default:
			tn++
		}
	}
	precision := float64(tp) / float64(tp+fp)
	recall := float64(tp) / float64(tp+fn)
	t.Logf("injection screen: %d positives, %d negatives; precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)",
		tp+fn, fp+tn, precision, recall, tp, fp, fn, tn)
	if tp+fn < 20 || fp+tn < 20 {
		t.Fatal("labelled corpus too small")
	}
	if precision < 0.9 || recall < 0.85 {
		t.Fatalf("precision %.3f recall %.3f below 0.9 / 0.85", precision, recall)
	}
}

func TestPolicy(t *testing.T) {
	p := Policy{Sources: map[string]string{"docs": Trusted, "forum": Community, "x": "bogus"}}
	for _, tc := range []struct {
		source string
		wire   bool
		want   string
	}{
		{"docs", false, Trusted},
		{"docs", true, Community}, // wire writes never reach trusted
		{"forum", false, Community},
		{"x", false, Untrusted},
		{"", false, Untrusted},
		{"unknown", false, Untrusted},
	} {
		if got := p.Level(tc.source, tc.wire); got != tc.want {
			t.Errorf("Level(%q, %v) = %s, want %s", tc.source, tc.wire, got, tc.want)
		}
	}
}
