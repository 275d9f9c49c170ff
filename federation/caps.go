package federation

import (
	"encoding/json"
	"slices"

	"github.com/rcpgo/rcpgo/rcp"
)

// unionCaps is the §16.4 effective set: a key is present when any engine
// advertises it. The first engine's object (in the order given, which is
// priority order) describes it, except that retrieve modes/units/
// modalities and graph ops are merged and retrieve.maxK is the largest.
func unionCaps(all []rcp.Capabilities) rcp.Capabilities {
	maps := capMaps(all)
	out := map[string]json.RawMessage{}
	for _, m := range maps {
		for k, v := range m {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	c := fromMap(out)
	if c.Retrieve != nil {
		r := *c.Retrieve
		for _, o := range all {
			if o.Retrieve == nil {
				continue
			}
			r.MaxK = max(r.MaxK, o.Retrieve.MaxK)
			r.Modes = unionList(r.Modes, o.Retrieve.Modes)
			r.Units = unionList(r.Units, o.Retrieve.Units)
			r.Modalities = unionList(r.Modalities, o.Retrieve.Modalities)
		}
		c.Retrieve = &r
	}
	if c.Graph != nil {
		g := *c.Graph
		for _, o := range all {
			if o.Graph != nil {
				g.Ops = unionList(g.Ops, o.Graph.Ops)
			}
		}
		c.Graph = &g
	}
	return c
}

// intersectCaps is the §16.4 guaranteed set: a key is present when every
// engine advertises it, described by the first engine's object with
// retrieve modes and graph ops intersected and retrieve.maxK the smallest.
func intersectCaps(all []rcp.Capabilities) rcp.Capabilities {
	if len(all) == 0 {
		return rcp.Capabilities{}
	}
	maps := capMaps(all)
	out := map[string]json.RawMessage{}
	for k, v := range maps[0] {
		every := true
		for _, m := range maps[1:] {
			if _, ok := m[k]; !ok {
				every = false
				break
			}
		}
		if every {
			out[k] = v
		}
	}
	c := fromMap(out)
	if c.Retrieve != nil {
		r := *c.Retrieve
		for _, o := range all[1:] {
			if o.Retrieve.MaxK > 0 && (r.MaxK == 0 || o.Retrieve.MaxK < r.MaxK) {
				r.MaxK = o.Retrieve.MaxK
			}
			r.Modes = intersectList(r.Modes, o.Retrieve.Modes)
		}
		c.Retrieve = &r
	}
	if c.Graph != nil {
		g := *c.Graph
		for _, o := range all[1:] {
			g.Ops = intersectList(g.Ops, o.Graph.Ops)
		}
		c.Graph = &g
	}
	return c
}

func capMaps(all []rcp.Capabilities) []map[string]json.RawMessage {
	out := make([]map[string]json.RawMessage, 0, len(all))
	for _, c := range all {
		b, err := json.Marshal(c)
		if err != nil {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		out = append(out, m)
	}
	return out
}

func fromMap(m map[string]json.RawMessage) rcp.Capabilities {
	var c rcp.Capabilities
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &c)
	return c
}

func unionList(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func intersectList(a, b []string) []string {
	if len(a) == 0 || len(b) == 0 {
		// an absent list means "no restriction" (§6.1): the other one rules
		if len(a) == 0 {
			return slices.Clone(b)
		}
		return a
	}
	var out []string
	for _, v := range a {
		if slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}
