package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rcpgo/rcpgo/rcp"
)

const quarantineSynopsis = `feedback quarantine list [flags] [target] | feedback quarantine lift ID… [flags] [target]`

// runQuarantine is `rcp feedback quarantine list|lift`: the units client
// reports quarantined (x-rcpgo/quarantine/list) and lifting them
// (x-rcpgo/quarantine/lift; rcpd needs a token with the admin scope).
func runQuarantine(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErr("%s", quarantineSynopsis)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printSubcommands(env.Stderr, quarantineSynopsis, "rcp feedback quarantine SUBCOMMAND",
			[2]string{"list", "the units quarantined on client reports: who reported them, until when"},
			[2]string{"lift ID…", "lift their quarantine (logged by the server with your token's name)"})
		return nil
	}
	switch args[0] {
	case "list", "ls":
		return runQuarantineList(ctx, env, args[1:])
	case "lift":
		return runQuarantineLift(ctx, env, args[1:])
	}
	return usageErr("unknown feedback quarantine subcommand %q (want list or lift)", args[0])
}

// connectQuarantine connects and checks the server serves method.
func connectQuarantine(ctx context.Context, env *Env, t *target, method string) (*rcp.Client, error) {
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return nil, err
	}
	v, err := rcp.ReadRCPGoCap(c.Capabilities())
	if err != nil || !v.Has(method) {
		c.Close()
		return nil, errors.New("the server does not serve " + method + " (rcpd does)")
	}
	return c, nil
}

func runQuarantineList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("feedback quarantine list", env, "[flags] [target]")
	var t target
	t.register(fs)
	jsonOut := fs.Bool("json", false, "print the raw result as JSON")
	if rest, err := parse(fs, &t, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return usageErr("unexpected arguments %q", rest)
	}
	c, err := connectQuarantine(ctx, env, &t, rcp.MethodRCPGoQuarantineList)
	if err != nil {
		return err
	}
	defer c.Close()
	var res rcp.QuarantineListResult
	if err := c.Call(ctx, rcp.MethodRCPGoQuarantineList, rcp.QuarantineListParams{}, &res); err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, res)
	}
	if len(res.Units) == 0 {
		fmt.Fprintln(env.Stdout, "no unit is quarantined")
		return nil
	}
	for _, q := range res.Units {
		kind := "poison"
		if q.Injection {
			kind = "injection"
		}
		fmt.Fprintf(env.Stdout, "%s\t%s\tsince %s until %s\treported by %s\n", q.ID, kind, q.Since, q.Until, strings.Join(q.Reporters, ", "))
	}
	return nil
}

func runQuarantineLift(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("feedback quarantine lift", env, "ID… [flags] [target]")
	var t target
	t.register(fs)
	jsonOut := fs.Bool("json", false, "print the raw result as JSON")
	ids, err := parse(fs, &t, args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usageErr("name the units to lift: rcp feedback quarantine lift ID…")
	}
	c, err := connectQuarantine(ctx, env, &t, rcp.MethodRCPGoQuarantineLift)
	if err != nil {
		return err
	}
	defer c.Close()
	var res rcp.QuarantineLiftResult
	if err := c.Call(ctx, rcp.MethodRCPGoQuarantineLift, rcp.QuarantineLiftParams{IDs: ids}, &res); err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, res)
	}
	for _, id := range ids {
		state := "was not quarantined"
		for _, l := range res.Lifted {
			if l == id {
				state = "lifted"
			}
		}
		fmt.Fprintf(env.Stdout, "%s\t%s\n", id, state)
	}
	return nil
}
