package federation

// What the gateway advertises from its engines' capabilities (issue 31):
// the sound combination — what a call through the gateway really gets.

import "github.com/rcpgo/rcpgo/rcp"

// commonDefaultMode is the gateway's retrieve.defaultMode: a retrieve that
// names no mode is forwarded without one, so each engine runs its own
// default; the gateway can name a default only when every retrieving
// engine has the same one ("" otherwise: the mode then depends on the
// engine). It used to say hybrid whenever one engine offered hybrid, while
// sparse-default engines ran sparse.
func commonDefaultMode(all []rcp.Capabilities) string {
	mode := ""
	for i, c := range all {
		m := c.Retrieve.DefaultMode
		if m == "" && len(c.Retrieve.Modes) == 1 {
			m = c.Retrieve.Modes[0] // the only mode is the default
		}
		if m == "" || i > 0 && m != mode {
			return ""
		}
		mode = m
	}
	return mode
}

// commonSession advertises session when every retrieving engine does: a
// sessionId is forwarded to each engine, which keeps its own trajectory
// (dedup when all dedup; the shortest TTL).
func commonSession(all []rcp.Capabilities) *rcp.SessionCap {
	var out *rcp.SessionCap
	for _, c := range all {
		if c.Session == nil {
			return nil
		}
		if out == nil {
			s := *c.Session
			out = &s
			continue
		}
		out.Dedup = out.Dedup && c.Session.Dedup
		if t := c.Session.TTLSeconds; t > 0 && (out.TTLSeconds == 0 || t < out.TTLSeconds) {
			out.TTLSeconds = t
		}
	}
	return out
}

// levelOf is the conformance level the gateway can claim for caps (§14)
// with known engines reachable, by the profiles `rcp conformance`
// certifies: L0 with none (it still answers the protocol, but nothing
// behind it retrieves); L1 once a reachable engine retrieves; L2 with a
// §14.3 feature among what it advertises (it streams and pages itself). It
// used to declare L2 whatever its engines were, every one down included.
func levelOf(caps *rcp.Capabilities, known int) string {
	r := caps.Retrieve
	switch {
	case known == 0 || r == nil || len(r.Modes) == 0:
		return rcp.LevelL0
	case caps.Streaming != nil || caps.Pagination != nil || caps.Rerank != nil || caps.Transform != nil || caps.Graph != nil:
		return rcp.LevelL2
	}
	return rcp.LevelL1
}
