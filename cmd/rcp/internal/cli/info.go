package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/rcpgo/rcpgo/cmd/rcp/internal/conformancecmd"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/internal/completion"
)

func runInfo(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("info", env, "[--json] [target]")
	var t target
	t.register(fs)
	jsonOut := fs.Bool("json", false, "print the info answer as JSON (identity, capabilities, _meta)")
	if _, err := parse(fs, &t, args); err != nil {
		return err
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(env.Stdout, info)
	}
	printInfo(env.Stdout, info)
	return nil
}

func runPing(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("ping", env, "[-n COUNT] [target]")
	var t target
	t.register(fs)
	n := fs.Int("n", 3, "number of pings")
	jsonOut := fs.Bool("json", false, "print one JSON object per ping (nonce, ms)")
	if _, err := parse(fs, &t, args); err != nil {
		return err
	}
	c, err := t.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := 0; i < *n; i++ {
		start := time.Now()
		res, err := c.Ping(ctx, i+1)
		if err != nil {
			return err
		}
		ms := float64(time.Since(start).Microseconds()) / 1000
		if *jsonOut {
			if err := json.NewEncoder(env.Stdout).Encode(map[string]any{"nonce": res.Nonce, "ms": ms}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(env.Stdout, "pong nonce=%s time=%.3fms\n", res.Nonce, ms)
	}
	return nil
}

func runConformance(_ context.Context, env *Env, args []string) error {
	if code := conformancecmd.Main(args, env.Stdout, env.Stderr); code != 0 {
		return exitCode(code)
	}
	return nil
}

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlags("version", env, "[--json]")
	jsonOut := fs.Bool("json", false, "print the version as JSON")
	if _, err := parse(fs, nil, args); err != nil {
		return err
	}
	info := buildinfo.Read()
	if *jsonOut {
		return writeJSON(env.Stdout, info)
	}
	fmt.Fprintln(env.Stdout, "rcp", info)
	return nil
}

// runCompletion prints a completion script whose flags come from every
// command's own -h output.
func runCompletion(ctx context.Context, env *Env, args []string) error {
	const synopsis = "rcp completion bash|zsh|fish  (bash: eval \"$(rcp completion bash)\" in ~/.bashrc)"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(env.Stderr, "Usage:", synopsis)
		return nil
	}
	if len(args) != 1 || !slices.Contains(completion.Shells, args[0]) {
		return usageErr("%s", synopsis)
	}
	return completion.Write(env.Stdout, args[0], "rcp", completionCommands(ctx))
}

func completionCommands(ctx context.Context) []completion.Command {
	help := func(run func(context.Context, *Env, []string) error, args ...string) []string {
		var b bytes.Buffer
		_ = run(ctx, &Env{Stdout: io.Discard, Stderr: &b, Getenv: func(string) string { return "" }}, args)
		return completion.FlagsFromHelp(b.String())
	}
	var out []completion.Command
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		c := completion.Command{Name: name}
		switch name {
		case "completion":
			c.Subs = []completion.Command{{Name: "bash"}, {Name: "zsh"}, {Name: "fish"}}
		case "index":
			for _, sub := range []string{"add", "sync", "list", "delete", "status"} {
				c.Subs = append(c.Subs, completion.Command{Name: sub, Flags: help(runIndex, sub, "-h")})
			}
		case "graph":
			for _, op := range graphOps {
				c.Subs = append(c.Subs, completion.Command{Name: op, Flags: help(runGraph, op, "-h")})
			}
		case "memory":
			for _, sub := range []string{"build", "recall"} {
				c.Subs = append(c.Subs, completion.Command{Name: sub, Flags: help(runMemory, sub, "-h")})
			}
		case "feedback":
			c.Flags = help(runFeedback, "-h")
			q := completion.Command{Name: "quarantine"}
			for _, sub := range []string{"list", "lift"} {
				q.Subs = append(q.Subs, completion.Command{Name: sub, Flags: help(runQuarantine, sub, "-h")})
			}
			c.Subs = []completion.Command{q}
		default:
			c.Flags = help(commands[name].run, "-h")
		}
		out = append(out, c)
	}
	return out
}
