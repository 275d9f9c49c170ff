// Package trust assigns provenance trust levels to retrieved passages and
// screens them for indirect prompt injection (RCP §15.2).
//
// # Levels
//
// Documents written over the wire (index/add) are never "trusted": their
// level is "untrusted" unless the operator configured their source as
// "community". Only sources the operator declares trusted in configuration
// (for example a corpus ingested from a vetted directory) are "trusted".
//
// # Injection screen
//
// Screen looks for text that addresses the model reading the passage rather
// than informing it: instructions to ignore/override earlier instructions,
// attempts to redefine the assistant's role or reveal its prompt, forged
// chat-role markers and special tokens, hidden directives aimed at "the AI"
// or "the assistant", and exfiltration requests. Each rule has a weight; the
// screen score is 1 − Π(1 − wᵢ) over the rules that fire, and a passage is
// suspected when the score reaches Threshold. The result is advisory
// (§15.2): absence of a flag is not proof of safety. Precision and recall on
// the labelled corpus in testdata/injection.jsonl are measured by the tests.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Threshold is the screen score at which a passage is flagged.
const Threshold = 0.5

type rule struct {
	name   string
	weight float64
	re     *regexp.Regexp
	// triggers are substrings of which every match of re contains at least
	// one: when none occurs in the text the regexp cannot match and is not
	// run. Go's regexp has no literal prefilter for these alternations, and
	// running all of them cost ≈ 2 ms per passage.
	triggers []string
}

// The patterns are matched against lower-cased text with runs of white space
// collapsed to one space.
var rules = []rule{
	{"override-instructions", 0.9, regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass|skip)\b[^.!?\n]{0,40}\b(previous|prior|above|earlier|preceding|all|any|your|the system|original)\b[^.!?\n]{0,30}\b(instructions?|prompts?|rules|directions|guidelines|context|messages?)\b`), []string{"ignore", "disregard", "forget", "override", "bypass", "skip"}},
	{"new-instructions", 0.7, regexp.MustCompile(`\b(new|updated|real|actual|true) (instructions?|system prompt|directives?)\b\s*(:|are|follow)`), []string{"instruction", "system prompt", "directive"}},
	{"role-redefinition", 0.6, regexp.MustCompile(`\byou are (now|no longer|actually|henceforth) (an?|the|my|in|bound|free|dan|unrestricted)\b|\bfrom now on,? you\b|\bact as (an? )?(unrestricted|jailbroken|different|evil|dan)\b|\bpretend (that )?you are\b`), []string{"you are", "from now on", "act as", "pretend"}},
	{"address-the-model", 0.6, regexp.MustCompile(`\b(attention|note|message|instructions?) (to|for) (the )?(ai|assistant|language model|llm|chatbot|model|gpt|claude|agent)\b|\b(dear|hey|hi) (ai|assistant|chatgpt|claude|llm|language model)\b|\bif you are an? (ai|language model|llm|assistant)\b|\bas an ai (language )?model,? you (must|should|will)\b`), []string{"ai", "assistant", "model", "llm", "chatbot", "gpt", "claude", "agent"}},
	{"prompt-exfiltration", 0.8, regexp.MustCompile(`\b(reveal|print|repeat|output|show|leak|disclose)\b[^.!?\n]{0,30}\b(system prompt|your (instructions|prompt|rules)|hidden prompt|initial prompt)\b`), []string{"prompt", "your instructions", "your rules"}},
	{"role-markers", 0.8, regexp.MustCompile(`<\|?(im_start|im_end|system|endoftext)\|?>|\[/?inst\]|<<sys>>|^\s*(system|assistant)\s*:|\n\s*(system|assistant)\s*:|###\s*(system|instruction)s?\s*:?`), []string{"im_start", "im_end", "system", "endoftext", "inst]", "<<sys>>", "assistant", "###"}},
	{"covert-action", 0.6, regexp.MustCompile(`\b(do not|don't|never) (tell|inform|mention|reveal)[^.!?\n]{0,20}\b(the )?(user|human)\b|\bwithout (telling|informing|the user knowing)\b`), []string{"do not", "don't", "never", "without"}},
	{"tool-abuse", 0.6, regexp.MustCompile(`\b(send|email|post|upload|forward|transmit)\b[^.!?\n]{0,40}\b(password|credentials|api key|secret|token|conversation|chat history)s?\b[^.!?\n]{0,40}\b(to|at)\b`), []string{"send", "email", "post", "upload", "forward", "transmit"}},
	{"jailbreak", 0.7, regexp.MustCompile(`\b(jailbreak|developer mode|dan mode|do anything now)\b`), []string{"jailbreak", "developer mode", "dan mode", "do anything now"}},
	{"must-respond", 0.4, regexp.MustCompile(`\b(you must|you will|always) (respond|reply|answer|say|output)\b`), []string{"you must", "you will", "always"}},
}

// RulesVersion identifies the screen's rules: a digest of every rule's
// name, weight and pattern, the triggers and the threshold. The index
// stores each document's verdict with the version it was computed under
// and re-screens its documents when the version changes, so editing a
// rule needs no manual step.
var RulesVersion = rulesVersion()

// normalizeVersion is bumped when normalize changes behaviour.
const normalizeVersion = 1

func rulesVersion() string {
	h := sha256.New()
	fmt.Fprintf(h, "normalize %d threshold %g\n", normalizeVersion, Threshold)
	for _, r := range rules {
		fmt.Fprintf(h, "%s %g %q %q\n", r.name, r.weight, r.re.String(), r.triggers)
	}
	return "s1-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// Result is the outcome of Screen.
type Result struct {
	Suspected bool
	Score     float64  // in [0,1]
	Rules     []string // names of the rules that fired
}

// Screen scores text for indirect prompt injection.
func Screen(text string) Result {
	t := normalize(text)
	keep := 1.0
	var fired []string
	for _, r := range rules {
		if r.mayMatch(t) && r.re.MatchString(t) {
			keep *= 1 - r.weight
			fired = append(fired, r.name)
		}
	}
	score := 1 - keep
	return Result{Suspected: score >= Threshold, Score: score, Rules: fired}
}

func (r *rule) mayMatch(t string) bool {
	for _, s := range r.triggers {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// normalize lower-cases text and collapses runs of spaces, tabs, carriage
// returns, form and vertical feeds to one space (newlines are kept: the
// role-marker rule anchors on them).
func normalize(text string) string {
	lower := strings.ToLower(text)
	var b strings.Builder
	b.Grow(len(lower))
	inSpace := false
	for i := 0; i < len(lower); i++ {
		switch c := lower[i]; c {
		case ' ', '\t', '\r', '\f', '\v':
			if !inSpace {
				b.WriteByte(' ')
			}
			inSpace = true
		default:
			b.WriteByte(c)
			inSpace = false
		}
	}
	return b.String()
}

// Trust levels of RCP §7.7.
const (
	Trusted   = "trusted"
	Community = "community"
	Untrusted = "untrusted"
)

// Policy maps a document's source to its trust level.
type Policy struct {
	// Sources maps a source name (Source.Name of ingested documents) to a
	// level. Unlisted sources, and every document written over the wire, are
	// Untrusted.
	Sources map[string]string
}

// Level returns the trust level of a document from source. Wire-written
// documents never reach Trusted: wire is true for them and caps the level at
// Community.
func (p Policy) Level(source string, wire bool) string {
	lvl, ok := p.Sources[source]
	if !ok || source == "" {
		return Untrusted
	}
	switch lvl {
	case Trusted:
		if wire {
			return Community
		}
		return Trusted
	case Community:
		return Community
	}
	return Untrusted
}
