package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rcpgo/rcpgo/cmd/rcp/internal/conformancecmd"
)

func runInfo(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("info", env, "[target]")
	var t target
	t.register(fs)
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
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(info)
}

func runPing(ctx context.Context, env *Env, args []string) error {
	fs := newFlags("ping", env, "[-n COUNT] [target]")
	var t target
	t.register(fs)
	n := fs.Int("n", 3, "number of pings")
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
		fmt.Fprintf(env.Stdout, "pong nonce=%s time=%.3fms\n", res.Nonce, float64(time.Since(start).Microseconds())/1000)
	}
	return nil
}

func runConformance(_ context.Context, env *Env, args []string) error {
	if code := conformancecmd.Main(args, env.Stdout, env.Stderr); code != 0 {
		return exitCode(code)
	}
	return nil
}
