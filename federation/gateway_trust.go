package federation

import (
	"github.com/rcpgo/rcpgo/engine/trust"
	"github.com/rcpgo/rcpgo/rcp"
)

// Trust levels in increasing order; the index is the rank.
var trustLevels = []string{rcp.TrustUntrusted, rcp.TrustCommunity, rcp.TrustTrusted}

// trustRank ranks a registry trust ceiling ("" is untrusted; -1: invalid).
func trustRank(level string) int {
	if level == "" {
		return 0
	}
	for i, l := range trustLevels {
		if l == level {
			return i
		}
	}
	return -1
}

// vouch applies the gateway's own judgement to hits fused from engines
// (issue 33 item 8; §15.1: a client MUST NOT assume a server is honest
// about trust or citations, and a gateway is such a client). Each hit's
// trust.level is capped at its engine's ceiling (rcp.json "trust",
// default untrusted; a hit that claims nothing gets the ceiling), its
// text is screened for prompt injection again (a suspected hit becomes
// untrusted with trust.injectionSuspected), and its citation names the
// engine it came from (citation.source "ENGINE" or "ENGINE:SOURCE"),
// so a citation uri of another engine's document is attributed to the
// engine that served it.
func (g *Gateway) vouch(hits []rcp.Hit) {
	for i := range hits {
		h := &hits[i]
		id, _ := h.Meta["engine"].(string)
		ceiling := 0
		if e, ok := g.fed.Engine(id); ok {
			ceiling = max(trustRank(e.Spec().Trust), 0)
		}
		claimed := ceiling
		if h.Trust != nil {
			if r := trustRank(h.Trust.Level); r >= 0 {
				claimed = r
			} else {
				claimed = 0 // a level RCP does not define
			}
		}
		t := rcp.Trust{}
		if h.Trust != nil {
			t = *h.Trust
		}
		t.Level = trustLevels[min(claimed, ceiling)]
		if text := h.TextOf(); text != "" && trust.Screen(text).Suspected {
			yes := true
			t.Level, t.InjectionSuspected = rcp.TrustUntrusted, &yes
		}
		h.Trust = &t
		if id != "" {
			c := rcp.Citation{}
			if h.Citation != nil {
				c = *h.Citation
			}
			if c.Source == "" {
				c.Source = id
			} else {
				c.Source = id + ":" + c.Source
			}
			h.Citation = &c
		}
	}
}
