package repocheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/schematest"
)

// sdkModule is the SDK's module path (its directory is rcp/).
const sdkModule = "github.com/rcpgo/rcpgo/rcp"

// repoRoot returns the directory of the root module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/rcpgo/rcpgo\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/rcpgo/rcpgo above the working directory")
		}
		dir = parent
	}
}

// goCmd runs the go command in dir with extra environment, failing t with
// its output when it fails or outlives its deadline.
func goCmd(t *testing.T, dir string, timeout time.Duration, env []string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("go %s: no answer within %v\n%s%s", strings.Join(args, " "), timeout, out, stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// TestSDKOnlyProgramHasNoThirdPartyModules: the SDK's go.mod requires
// nothing, and a program importing every public SDK package — built in a
// module of its own, with the SDK replaced by this checkout and the module
// proxy off — has the SDK alone in its module graph and in its build. (With
// one module for everything, such a program had 73 third-party modules in
// `go list -m all`.)
func TestSDKOnlyProgramHasNoThirdPartyModules(t *testing.T) {
	root := repoRoot(t)
	sdkDir := filepath.Join(root, "rcp")
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(goCmd(t, root, time.Minute, nil, "mod", "edit", "-json", filepath.Join(sdkDir, "go.mod")), &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != sdkModule || len(mod.Require) != 0 {
		t.Fatalf("rcp/go.mod: module %s requiring %v; want module %s requiring nothing", mod.Module.Path, mod.Require, sdkModule)
	}

	// Every public package of the SDK module.
	var imports []string
	for _, p := range strings.Fields(string(goCmd(t, sdkDir, time.Minute, []string{"GOWORK=off"}, "list", "./..."))) {
		if !strings.Contains(p, "/internal/") {
			imports = append(imports, p)
		}
	}
	if len(imports) < 4 {
		t.Fatalf("public SDK packages: %v", imports)
	}
	prog := t.TempDir()
	gomod := fmt.Sprintf("module example.com/sdkonly\n\ngo 1.26.8\n\nrequire %s v0.0.0\n\nreplace %s => %s\n", sdkModule, sdkModule, sdkDir)
	var src strings.Builder
	src.WriteString("// Command sdkonly imports every public package of the RCP SDK.\npackage main\n\nimport (\n")
	for _, p := range imports {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	for name, text := range map[string]string{"go.mod": gomod, "main.go": src.String()} {
		if err := os.WriteFile(filepath.Join(prog, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}
	for _, m := range strings.Split(strings.TrimSpace(string(goCmd(t, prog, time.Minute, env, "list", "-m", "all"))), "\n") {
		if m != "example.com/sdkonly" && !strings.HasPrefix(m, sdkModule+" ") {
			t.Errorf("go list -m all of a program importing only the SDK lists %q", m)
		}
	}
	deps := goCmd(t, prog, time.Minute, env, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	for _, p := range strings.Fields(string(deps)) {
		if p != "example.com/sdkonly" && p != sdkModule && !strings.HasPrefix(p, sdkModule+"/") {
			t.Errorf("a program importing only the SDK builds %s", p)
		}
	}
	goCmd(t, prog, 5*time.Minute, env, "build", "-o", filepath.Join(prog, "sdkonly"), ".")
}

// TestSDKWireMatchesSchema runs the SDK package's tests with their wire
// log on (rcp/internal/wiretest) and validates every frame, result and
// value they checked against our schema (internal/rcpschema; and the
// normative one when ../shared has it, see schematest): the SDK's tests can
// only check that frames are JSON-RPC, having no validator to depend on.
func TestSDKWireMatchesSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the SDK's tests again with their wire log on; skipped with -short")
	}
	root := repoRoot(t)
	keyCacheOn(t, filepath.Join(root, "rcp"))
	dir := t.TempDir()
	goCmd(t, root, 10*time.Minute, []string{"RCPGO_WIRE_LOG=" + dir}, "test", "-count=1", sdkModule)

	f, err := os.Open(filepath.Join(dir, "frames.jsonl"))
	if err != nil {
		t.Fatalf("the SDK's tests logged nothing: %v", err)
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var e struct{ Check, Method, Def, JSON string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("wire log: %v", err)
		}
		switch e.Check {
		case "message":
			schematest.ValidateMessage(t, []byte(e.JSON))
		case "result":
			schematest.ValidateResult(t, e.Method, []byte(e.JSON))
		case "value":
			schematest.Validate(t, e.Def, []byte(e.JSON))
		default:
			t.Fatalf("wire log: unknown check %q", e.Check)
		}
		counts[e.Check]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The SDK's tests check hundreds of frames; far fewer means the
	// log was not written where the checks run.
	if counts["message"] < 300 || counts["result"] < 100 || counts["value"] < 5 {
		t.Errorf("validated %v: fewer than the SDK's tests check", counts)
	}
	t.Logf("validated %v", counts)
}

// keyCacheOn stats every file of the SDK module, so that go test's result
// cache — which records the files a test opens, not those a go command it
// runs reads — reruns this test when the SDK changes.
func keyCacheOn(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
