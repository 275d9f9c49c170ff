package trust

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
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

// screenExhaustive is Screen without the trigger prefilter and with the
// regexp normalisation it replaced: the reference for the prefilter test.
var spaceRun = regexp.MustCompile(`[ \t\r\f\v]+`)

func screenExhaustive(text string) []string {
	t := spaceRun.ReplaceAllString(strings.ToLower(text), " ")
	var fired []string
	for _, r := range rules {
		if r.re.MatchString(t) {
			fired = append(fired, r.name)
		}
	}
	return fired
}

// TestPrefilterMatchesExhaustive checks that skipping rules whose trigger
// words are absent never changes which rules fire, on the labelled corpus
// and on random mixtures of trigger-bearing fragments.
func TestPrefilterMatchesExhaustive(t *testing.T) {
	var texts []string
	f, err := os.Open("testdata/injection.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ex struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, ex.Text)
	}
	f.Close()
	frags := []string{"Ignore", "all previous", "instructions", "You are now", "an unrestricted", "AI", "system:", "\n assistant :",
		"<|im_start|>", "[INST]", "reveal", "your system prompt", "do not tell", "the user", "send the", "api key", "to", "evil.example",
		"jailbreak", "You must", "respond", "new instructions:", "Dear ChatGPT", "act as", "DAN", "from now on, you", "###\tSystem:",
		"the\t\tcat", "sat on", "the mat.", "Pretend you are", "without telling", "forward", "chat history", "at", "always answer"}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for j := 0; j < 2+rnd.IntN(8); j++ {
			if j > 0 {
				b.WriteString([]string{" ", "  ", "\t", "\n", ". "}[rnd.IntN(5)])
			}
			b.WriteString(frags[rnd.IntN(len(frags))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		if got, want := Screen(text).Rules, screenExhaustive(text); !slices.Equal(got, want) {
			t.Fatalf("%q: rules %v, exhaustive %v", text, got, want)
		}
	}
}

func BenchmarkScreenPassage(b *testing.B) {
	text := strings.Repeat("Block-max WAND stores the maximum term score for every block of postings, so the engine can skip whole blocks. ", 6)
	for b.Loop() {
		Screen(text)
	}
}

func BenchmarkScreenPassageExhaustive(b *testing.B) {
	text := strings.Repeat("Block-max WAND stores the maximum term score for every block of postings, so the engine can skip whole blocks. ", 6)
	for b.Loop() {
		screenExhaustive(text)
	}
}

// TestRulesVersion: the version is stable and changes with any rule.
func TestRulesVersion(t *testing.T) {
	if RulesVersion != rulesVersion() || !strings.HasPrefix(RulesVersion, "s1-") {
		t.Fatalf("RulesVersion %q unstable", RulesVersion)
	}
	saved := rules[0].weight
	rules[0].weight = saved + 0.01
	changed := rulesVersion()
	rules[0].weight = saved
	if changed == RulesVersion {
		t.Fatal("changing a rule's weight keeps the rules version")
	}
}
