package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/cmd/rcp/internal/settle"
	"github.com/rcpgo/rcpgo/internal/wording"
	"github.com/rcpgo/rcpgo/rcp"
)

// printInfo renders an info answer for people: identity, what retrieve
// offers, the index, and every other capability in a line each.
func printInfo(w io.Writer, info *rcp.InitializeResult) {
	conf := ""
	var level string
	if info.Meta.Get("conformance", &level) && level != "" {
		conf = " · conformance " + level
	}
	fmt.Fprintf(w, "%s %s · RCP/%d%s\n", info.Server.Name, info.Server.Version, info.ProtocolVersion, conf)
	c := &info.Capabilities
	if r := c.Retrieve; r != nil {
		var parts []string
		modes := strings.Join(r.Modes, ", ")
		if r.DefaultMode != "" {
			modes += " (default " + r.DefaultMode + ")"
		}
		parts = append(parts, "modes "+modes)
		if len(r.Units) > 0 {
			parts = append(parts, "units "+strings.Join(r.Units, ", "))
		}
		if len(r.Fusion) > 0 {
			parts = append(parts, "fusion "+strings.Join(r.Fusion, ", "))
		}
		if r.MaxK > 0 {
			parts = append(parts, fmt.Sprintf("maxK %d", r.MaxK))
		}
		for name, on := range map[string]bool{"mmr": r.MMR, "rerank": r.RerankBuiltin, "tokenBudget": r.TokenBudget} {
			if on {
				parts = append(parts, name)
			}
		}
		slices.Sort(parts[1:])
		fmt.Fprintf(w, "retrieve: %s\n", strings.Join(parts, " · "))
	}
	vendor, _ := rcp.ReadRCPGoCap(c)
	fmt.Fprintf(w, "index:    %s\n", indexLine(c, vendor))
	if f := c.Filter; f != nil {
		types := f.FieldTypes()
		var fields []string
		for _, n := range slices.Sorted(maps.Keys(types)) {
			if types[n] != "" {
				n += " (" + types[n] + ")"
			}
			fields = append(fields, n)
		}
		fmt.Fprintf(w, "filter:   %s\n", strings.Join(fields, ", "))
	}
	fmt.Fprintf(w, "also:     %s\n", strings.Join(otherCaps(c), " · "))
	if r, ok := rcp.ReadReadiness(info.Meta); ok && len(r) > 0 {
		fmt.Fprintf(w, "derived:  %s\n", readinessLine(r))
	}
	fmt.Fprintln(w, "(rcp info --json prints the whole answer)")
}

// indexLine says whether the index takes writes (and why not), and with
// which options and limits.
func indexLine(c *rcp.Capabilities, vendor *rcp.RCPGoCap) string {
	ix := c.Index
	switch {
	case ix == nil:
		return "none (no index capability: this server only reads)"
	case !ix.Writable:
		why := "it does not say why"
		if vendor != nil && vendor.ReadOnly != "" {
			why = vendor.ReadOnly
		}
		return "read-only: " + why
	}
	s := "writable"
	if ix.Chunking {
		s += ", chunking"
	}
	if ix.Contextual {
		s += ", contextual"
	}
	if vendor != nil && vendor.Limits != nil {
		l := vendor.Limits
		if l.RequestBytes > 0 {
			s += fmt.Sprintf(" · requests up to %s", humanBytes(l.RequestBytes))
		}
		if l.AddDocuments > 0 {
			s += fmt.Sprintf(" · %s per index/add", wording.Plural(l.AddDocuments, "document", "documents"))
		}
	}
	return s
}

// otherCaps names the capabilities besides retrieve, index and filter,
// with their chief parameter.
func otherCaps(c *rcp.Capabilities) []string {
	var out []string
	add := func(on bool, name string, detail []string) {
		if !on {
			return
		}
		if len(detail) > 0 {
			name += " (" + strings.Join(detail, ", ") + ")"
		}
		out = append(out, name)
	}
	add(c.Embed != nil, "embed", nil)
	add(c.Rerank != nil, "rerank", methodsOf(c.Rerank))
	if c.Transform != nil {
		add(true, "transform", c.Transform.Methods)
	}
	if c.Graph != nil {
		add(true, "graph", c.Graph.Ops)
	}
	if c.Memory != nil {
		add(true, "memory", c.Memory.Scopes)
	}
	add(c.Session != nil, "session", nil)
	add(c.Feedback != nil, "feedback", nil)
	add(c.Streaming != nil, "streaming", nil)
	add(c.Pagination != nil, "pagination", nil)
	add(c.Citations != nil, "citations", nil)
	add(c.Log != nil, "log", nil)
	if c.Catalog != nil {
		add(true, "catalog", []string{wording.Plural(c.Catalog.Engines, "engine", "engines")})
	}
	return append(out, slices.Sorted(maps.Keys(c.Extra))...)
}

func methodsOf(r *rcp.RerankCap) []string {
	if r == nil {
		return nil
	}
	return r.Methods
}

// readinessLine is "dense ready · graph building 40% (extract)".
func readinessLine(r rcp.Readiness) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(r)) {
		s := r[name]
		p := name + " " + s.State
		if s.Total > 0 && !s.Settled() {
			p += fmt.Sprintf(" %d%%", s.Done*100/s.Total)
		}
		if s.Phase != "" && !s.Settled() {
			p += " (" + s.Phase + ")"
		}
		if s.Detail != "" && s.State == rcp.StateWaiting {
			p += ": " + s.Detail
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

// waitDerived waits (at most waitFor) until the server's derived
// structures are settled, with a progress bar on stderr unless quiet.
func waitDerived(ctx context.Context, env *Env, c *rcp.Client, waitFor time.Duration, quiet bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	var w io.Writer = env.Stderr
	if quiet {
		w = nil
	}
	_, err := settle.Wait(ctx, settle.ClientInfo(c), w, settle.Poll)
	return err
}

// indexStatus is `rcp index status --json`.
type indexStatus struct {
	Writable     bool             `json:"writable"`
	ReadOnly     string           `json:"readOnly,omitempty"`
	Documents    *int             `json:"documents,omitempty"` // counted with x-rcpgo/list, when served
	IndexVersion string           `json:"indexVersion,omitempty"`
	Limits       *rcp.RCPGoLimits `json:"limits,omitempty"`
	Readiness    rcp.Readiness    `json:"readiness,omitempty"`
}

func runIndexStatus(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("index status", env, "[--wait] [--json] [target]")
	var t target
	t.register(fs)
	jsonOut := fs.Bool("json", false, "print the status as JSON")
	wait := fs.Bool("wait", false, "block until every derived structure is ready (a progress bar on stderr while one is built)")
	waitFor := fs.Duration("wait-timeout", time.Hour, "--wait: give up after this long")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected arguments %q", pos)
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if *wait {
		if err := waitDerived(ctx, env, c, *waitFor, false); err != nil {
			return err
		}
	}
	st, err := readStatus(ctx, c)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, st)
	}
	info := &rcp.InitializeResult{Capabilities: *c.Capabilities()}
	vendor, _ := rcp.ReadRCPGoCap(c.Capabilities())
	fmt.Fprintf(env.Stdout, "index:     %s\n", indexLine(&info.Capabilities, vendor))
	if st.Documents != nil {
		fmt.Fprintf(env.Stdout, "documents: %d\n", *st.Documents)
	}
	if st.IndexVersion != "" {
		fmt.Fprintf(env.Stdout, "version:   %s\n", st.IndexVersion)
	}
	if len(st.Readiness) > 0 {
		fmt.Fprintf(env.Stdout, "derived:   %s\n", readinessLine(st.Readiness))
	}
	return nil
}

// readStatus gathers the index status: from the capabilities, info's
// readiness, and the x-rcpgo methods when served.
func readStatus(ctx context.Context, c *rcp.Client) (*indexStatus, error) {
	caps := c.Capabilities()
	st := &indexStatus{Writable: caps.Index != nil && caps.Index.Writable}
	vendor, _ := rcp.ReadRCPGoCap(caps)
	if vendor != nil {
		st.ReadOnly, st.Limits = vendor.ReadOnly, vendor.Limits
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	st.Readiness, _ = rcp.ReadReadiness(info.Meta)
	if vendor.Has(rcp.MethodRCPGoGet) {
		var res rcp.GetDocumentsResult
		if err := c.Call(ctx, rcp.MethodRCPGoGet, rcp.GetDocumentsParams{IDs: []string{}}, &res); err != nil {
			return nil, err
		}
		st.IndexVersion = res.IndexVersion
	}
	if vendor.Has(rcp.MethodRCPGoList) {
		n := 0
		if err := listAll(ctx, c, "", func(rcp.DocumentRef) { n++ }); err != nil {
			return nil, err
		}
		st.Documents = &n
	}
	return st, nil
}
