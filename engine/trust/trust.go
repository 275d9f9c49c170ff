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
	"regexp"
	"strings"
)

// Threshold is the screen score at which a passage is flagged.
const Threshold = 0.5

type rule struct {
	name   string
	weight float64
	re     *regexp.Regexp
}

// The patterns are matched against lower-cased text with runs of white space
// collapsed to one space.
var rules = []rule{
	{"override-instructions", 0.9, regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass|skip)\b[^.!?\n]{0,40}\b(previous|prior|above|earlier|preceding|all|any|your|the system|original)\b[^.!?\n]{0,30}\b(instructions?|prompts?|rules|directions|guidelines|context|messages?)\b`)},
	{"new-instructions", 0.7, regexp.MustCompile(`\b(new|updated|real|actual|true) (instructions?|system prompt|directives?)\b\s*(:|are|follow)`)},
	{"role-redefinition", 0.6, regexp.MustCompile(`\byou are (now|no longer|actually|henceforth) (an?|the|my|in|bound|free|dan|unrestricted)\b|\bfrom now on,? you\b|\bact as (an? )?(unrestricted|jailbroken|different|evil|dan)\b|\bpretend (that )?you are\b`)},
	{"address-the-model", 0.6, regexp.MustCompile(`\b(attention|note|message|instructions?) (to|for) (the )?(ai|assistant|language model|llm|chatbot|model|gpt|claude|agent)\b|\b(dear|hey|hi) (ai|assistant|chatgpt|claude|llm|language model)\b|\bif you are an? (ai|language model|llm|assistant)\b|\bas an ai (language )?model,? you (must|should|will)\b`)},
	{"prompt-exfiltration", 0.8, regexp.MustCompile(`\b(reveal|print|repeat|output|show|leak|disclose)\b[^.!?\n]{0,30}\b(system prompt|your (instructions|prompt|rules)|hidden prompt|initial prompt)\b`)},
	{"role-markers", 0.8, regexp.MustCompile(`<\|?(im_start|im_end|system|endoftext)\|?>|\[/?inst\]|<<sys>>|^\s*(system|assistant)\s*:|\n\s*(system|assistant)\s*:|###\s*(system|instruction)s?\s*:?`)},
	{"covert-action", 0.6, regexp.MustCompile(`\b(do not|don't|never) (tell|inform|mention|reveal)[^.!?\n]{0,20}\b(the )?(user|human)\b|\bwithout (telling|informing|the user knowing)\b`)},
	{"tool-abuse", 0.6, regexp.MustCompile(`\b(send|email|post|upload|forward|transmit)\b[^.!?\n]{0,40}\b(password|credentials|api key|secret|token|conversation|chat history)s?\b[^.!?\n]{0,40}\b(to|at)\b`)},
	{"jailbreak", 0.7, regexp.MustCompile(`\b(jailbreak|developer mode|dan mode|do anything now)\b`)},
	{"must-respond", 0.4, regexp.MustCompile(`\b(you must|you will|always) (respond|reply|answer|say|output)\b`)},
}

// Result is the outcome of Screen.
type Result struct {
	Suspected bool
	Score     float64  // in [0,1]
	Rules     []string // names of the rules that fired
}

var space = regexp.MustCompile(`[ \t\r\f\v]+`)

// Screen scores text for indirect prompt injection.
func Screen(text string) Result {
	t := space.ReplaceAllString(strings.ToLower(text), " ")
	keep := 1.0
	var fired []string
	for _, r := range rules {
		if r.re.MatchString(t) {
			keep *= 1 - r.weight
			fired = append(fired, r.name)
		}
	}
	score := 1 - keep
	return Result{Suspected: score >= Threshold, Score: score, Rules: fired}
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
