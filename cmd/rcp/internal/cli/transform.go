package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rcpgo/rcpgo/rcp"
)

func init() {
	commands["transform"] = command{"rewrite, expand or split a query (query/transform)", runTransform}
	commands["feedback"] = command{"report how hits fared (used, cited, helpful, reward, poison, injection); feedback quarantine list|lift", runFeedback}
}

func runTransform(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("transform", env, `"QUERY TEXT" [flags] [target]`)
	var t target
	t.register(fs)
	method := fs.String("method", "rewrite", "rewrite | multi-query | decompose | step-back | hyde (as advertised)")
	n := fs.Int("n", 0, "queries wanted (multi-query, decompose; 0: server default)")
	seed := fs.Int64("seed", 0, "fix the choice among equally good variants (0: none)")
	jsonOut := fs.Bool("json", false, "print the raw result as JSON")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("a query text is required")
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	p := &rcp.TransformParams{Query: strings.Join(pos, " "), Method: *method}
	if *n > 0 {
		p.N = n
	}
	if *seed != 0 {
		p.Seed = seed
	}
	res, err := c.Transform(ctx, p)
	if err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	for _, q := range res.Queries {
		fmt.Fprintln(env.Stdout, q)
	}
	if res.Hypothetical != "" {
		fmt.Fprintf(env.Stdout, "hypothetical (generated, not evidence):\n%s\n", res.Hypothetical)
	}
	return nil
}

func runFeedback(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && args[0] == "quarantine" {
		return runQuarantine(ctx, env, args[1:])
	}
	fs := newFlags("feedback", env, `--signal 'HIT_ID:helpful,used,cited,reward=0.5,unhelpful,poison,injection' … [flags] [target]`)
	var t target
	t.register(fs)
	session := fs.String("session", "", "sessionId of the trajectory the hits came from")
	query := fs.String("query", "", "the query the hits answered")
	jsonOut := fs.Bool("json", false, "print the raw result as JSON")
	var signals multiFlag
	fs.Var(&signals, "signal", "HIT_ID:FLAG,… with flags used, cited, helpful, unhelpful, reward=X (in [-1,1]), poison, injection; repeatable")
	pos, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q (signals go in --signal)", pos[0])
	}
	if len(signals) == 0 {
		return usageErr("at least one --signal is required")
	}
	p := &rcp.FeedbackParams{SessionID: *session, Query: *query}
	for _, s := range signals {
		sg, err := parseSignal(s)
		if err != nil {
			return err
		}
		p.Signals = append(p.Signals, sg)
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Feedback(ctx, p)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, res)
	}
	fmt.Fprintf(env.Stdout, "accepted %d of %d signals\n", res.Accepted, len(p.Signals))
	return nil
}

// parseSignal reads HIT_ID:flag,flag,reward=X (the id is everything before
// the last colon, so ids may contain colons).
func parseSignal(s string) (rcp.FeedbackSignal, error) {
	var sg rcp.FeedbackSignal
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return sg, usageErr("--signal %q: want HIT_ID:FLAG[,FLAG…]", s)
	}
	sg.HitID = rcp.StringID(s[:i])
	yes, no := true, false
	for _, f := range strings.Split(s[i+1:], ",") {
		switch f = strings.TrimSpace(f); {
		case f == "used":
			sg.Used = &yes
		case f == "cited":
			sg.Cited = &yes
		case f == "helpful":
			sg.Helpful = &yes
		case f == "unhelpful":
			sg.Helpful = &no
		case f == "poison":
			sg.PoisonSuspected = &yes
		case f == "injection":
			sg.InjectionSuspected = &yes
		case strings.HasPrefix(f, "reward="):
			r, err := strconv.ParseFloat(strings.TrimPrefix(f, "reward="), 64)
			if err != nil || r < -1 || r > 1 {
				return sg, usageErr("--signal %q: reward must be a number in [-1, 1]", s)
			}
			sg.Reward = &r
		default:
			return sg, usageErr("--signal %q: unknown flag %q (want used, cited, helpful, unhelpful, reward=X, poison, injection)", s, f)
		}
	}
	return sg, nil
}
