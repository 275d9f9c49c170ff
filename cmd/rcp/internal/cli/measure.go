package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rcpgo/rcpgo/bench"
	"github.com/rcpgo/rcpgo/cmd/rcp/internal/benchcmd"
	"github.com/rcpgo/rcpgo/cmd/rcp/internal/evalcmd"
	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/internal/buildinfo"
	"github.com/rcpgo/rcpgo/rcp"
)

func init() {
	commands["eval"] = command{"measure retrieval quality on a BEIR dataset (nDCG, recall, MRR, MAP)", runEval}
	commands["score"] = command{"score TREC run files against qrels (trec_eval conventions)", runScore}
	commands["bench"] = command{"load-test one server, or two side by side (A/B)", runBench}
	commands["gen"] = command{"generate a reproducible synthetic BEIR corpus", runGen}
}

// dialTarget connects to a target written as one string:
//
//	http://host:port/rcp        an HTTP server
//	stdio:CMD ARG…              spawn CMD and speak over stdio (fields split on spaces)
//	FILE.json#ENGINE            an engine of an rcp.json registry
func dialTarget(ctx context.Context, target string) (*rcp.Client, error) {
	opts := &rcp.ClientOptions{Info: rcp.PeerInfo{Name: "rcp-cli", Version: buildinfo.Version()}}
	switch {
	case strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://"):
		opts.BearerToken = os.Getenv("RCP_TOKEN")
		return rcp.ConnectHTTP(ctx, target, opts)
	case strings.HasPrefix(target, "stdio:"):
		argv := strings.Fields(strings.TrimPrefix(target, "stdio:"))
		if len(argv) == 0 {
			return nil, fmt.Errorf("target %q: empty command", target)
		}
		opts.InheritEnv = true // the user typed this command
		opts.Env = quietServer(os.Getenv, false)
		return rcp.ConnectStdio(ctx, argv, opts)
	case strings.Contains(target, ".json#"):
		file, id, _ := strings.Cut(target, "#")
		reg, err := federation.LoadRegistry(file)
		if err != nil {
			return nil, err
		}
		spec, ok := reg.Engine(id)
		if !ok {
			return nil, fmt.Errorf("registry %s has no engine %q", file, id)
		}
		return spec.Connect(ctx, opts)
	default:
		return nil, fmt.Errorf("target %q: want http(s)://…, stdio:CMD ARGS or FILE.json#ENGINE", target)
	}
}

func dialCaller(ctx context.Context, target string) (bench.Caller, func() error, error) {
	c, err := dialTarget(ctx, target)
	if err != nil {
		return nil, nil, err
	}
	return bench.FromCall(c.Call), c.Close, nil
}

// targetArgs rewrites the common target flags (--http URL, --registry F
// --engine ID, -- CMD ARGS…) into the -target form the measuring commands
// take, so `rcp eval … -- rcpd serve --stdio` works like every other command.
func targetArgs(args []string) []string {
	var out []string
	var registry, engine string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, "-target", "stdio:"+strings.Join(args[i+1:], " "))
		case (a == "--http" || a == "-http") && i+1 < len(args):
			out = append(out, "-target", args[i+1])
			i++
		case (a == "--registry" || a == "-registry") && i+1 < len(args):
			registry = args[i+1]
			i++
		case (a == "--engine" || a == "-engine") && i+1 < len(args):
			engine = args[i+1]
			i++
		default:
			out = append(out, a)
		}
	}
	if registry != "" {
		out = append(out, "-target", registry+"#"+engine)
	}
	return out
}

// modePresets are the names `rcp eval --modes a,b,c` understands.
var modePresets = map[string]string{
	"sparse":          `{"mode":"sparse"}`,
	"dense":           `{"mode":"dense"}`,
	"hybrid":          `{"mode":"hybrid"}`,
	"hybrid-rrf":      `{"mode":"hybrid","fusion":{"method":"rrf"}}`,
	"hybrid-weighted": `{"mode":"hybrid","fusion":{"method":"weighted"}}`,
	"hybrid-convex":   `{"mode":"hybrid","fusion":{"method":"convex"}}`,
	"hybrid-mmr":      `{"mode":"hybrid","mmr":{"lambda":0.7}}`,
}

// expandModes turns --modes sparse,dense,… into -mode NAME=JSON flags; a
// --modes value naming a file is passed through.
func expandModes(args []string) ([]string, error) {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--modes" || a == "-modes") && i+1 < len(args) {
			v := args[i+1]
			if _, err := os.Stat(v); err == nil {
				out = append(out, a, v)
				i++
				continue
			}
			for _, name := range strings.Split(v, ",") {
				js, ok := modePresets[strings.TrimSpace(name)]
				if !ok {
					return nil, usageErr("--modes: unknown mode %q (known: sparse, dense, hybrid, hybrid-rrf, hybrid-weighted, hybrid-convex, hybrid-mmr; or a JSON file)", name)
				}
				out = append(out, "-mode", strings.TrimSpace(name)+"="+js)
			}
			i++
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// bareJSON lets the measuring commands take --json like every other rcp
// command: a bare --json (the last argument, or followed by another flag)
// means "-", the JSON report on stdout; --json PATH still writes a file.
func bareJSON(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...) // a spawned command's own flags
		}
		if a == "--json" || a == "-json" {
			if i+1 == len(args) || strings.HasPrefix(args[i+1], "-") && args[i+1] != "-" {
				out = append(out, "-")
			}
		}
	}
	return out
}

func runEval(_ context.Context, env *Env, args []string) error {
	args, err := expandModes(targetArgs(bareJSON(args)))
	if err != nil {
		return err
	}
	dial := func(ctx context.Context, target string) (eval.Caller, func() error, error) {
		return dialCaller(ctx, target)
	}
	return exitStatus(evalcmd.Main(args, env.Stdout, env.Stderr, dial))
}

func runScore(_ context.Context, env *Env, args []string) error {
	return exitStatus(evalcmd.Score(bareJSON(args), env.Stdout, env.Stderr))
}

func runBench(_ context.Context, env *Env, args []string) error {
	return exitStatus(benchcmd.Main(targetArgs(bareJSON(args)), env.Stdout, env.Stderr, dialCaller))
}

func runGen(_ context.Context, env *Env, args []string) error {
	return exitStatus(benchcmd.Gen(args, env.Stdout, env.Stderr))
}

// exitStatus maps an entry point's status to the CLI's error convention:
// those commands print their own diagnostics.
func exitStatus(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}
