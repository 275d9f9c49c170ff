package repocheck

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/testutil/childtest"
)

// The README's shell blocks whose info string is "sh demo" claim to run
// against the demo; "→ TEXT" at the end of a command's comment names what
// it prints.
const demoFence = "```sh demo"

// demoCommand is one command line of a demo block.
type demoCommand struct {
	line   int    // in README.md
	shell  string // the command, comments stripped
	expect string // the text after "# →", if any
}

// demoCommands returns the commands of README's demo blocks: one per line
// (a trailing backslash continues it), comment-only lines skipped.
func demoCommands(t *testing.T, readme []byte) []demoCommand {
	var out []demoCommand
	in, pending := false, ""
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			in = line == demoFence
			continue
		case !in || strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "":
			continue
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line = pending + line
		pending = ""
		c := demoCommand{line: n, shell: line}
		if i := strings.Index(line, " #"); i >= 0 {
			c.shell = line[:i]
			if _, after, ok := strings.Cut(line[i:], "→"); ok {
				c.expect = strings.TrimSpace(after)
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatalf("README.md has no %s blocks", demoFence)
	}
	return out
}

// TestReadmeRuns runs the README's demo blocks as written against built
// rcpd and rcp binaries and `rcpd serve --demo` on a loopback port, in a
// fresh HOME: each command must exit 0 and print something other than "No
// hits", and what its "# → TEXT" comment names. The commands run with
// `go run ./cmd/rcp` and `./cmd/rcpd` replaced by the built binaries and the
// README's 127.0.0.1:7700 by the test server's address ($RCP_URL too).
func TestReadmeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rcpd and rcp and runs the README's demo commands; skipped with -short")
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := demoCommands(t, readme)
	bin := t.TempDir()
	goCmd(t, root, 10*time.Minute, nil, "build", "-o", bin, "./cmd/rcpd", "./cmd/rcp")
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	addr := startDemo(t, filepath.Join(bin, "rcpd"), env)
	env = append(env, "RCP_URL=http://"+addr+"/rcp")
	replacer := strings.NewReplacer("go run ./cmd/rcpd ", "rcpd ", "go run ./cmd/rcp ", "rcp ",
		"127.0.0.1:7700", addr, "localhost:7700", addr)
	for _, c := range cmds {
		shell := replacer.Replace(c.shell)
		out, err := runDemoCommand(env, root, shell)
		text := strings.TrimSpace(out)
		switch {
		case err != nil:
			t.Errorf("README.md:%d: %s: %v\n%s", c.line, c.shell, err, out)
		case text == "" || strings.HasPrefix(strings.ToLower(text), "no hits"):
			t.Errorf("README.md:%d: %s: printed no result (%q)", c.line, c.shell, text)
		case c.expect != "" && !strings.Contains(out, c.expect):
			t.Errorf("README.md:%d: %s: does not print %q:\n%s", c.line, c.shell, c.expect, out)
		default:
			t.Logf("README.md:%d: %s: ok (%d lines)", c.line, c.shell, strings.Count(out, "\n"))
		}
	}
}

// runDemoCommand runs shell with bash -o pipefail, bounded by a deadline,
// and returns its stdout (and stderr, after it, for the failure message).
func runDemoCommand(env []string, dir, shell string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", shell)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// startDemo runs `rcpd serve --demo` on a free loopback port until the test
// ends and returns its address.
func startDemo(t *testing.T, rcpd string, env []string) string {
	t.Helper()
	cmd := exec.Command(rcpd, "serve", "--demo", "--http", "127.0.0.1:0", "--log-level", "info")
	cmd.Env = env
	return childtest.Start(t, cmd, regexp.MustCompile(`console=http://(\S+)/`))
}

// The README's Go blocks are the SDK's Example functions (rcp/example_test.go),
// so they compile and, where they print, run: each block's lines appear in
// that file in order.
func TestReadmeGoIsExamples(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile(filepath.Join(root, "rcp", "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no go blocks")
	}
	for _, b := range blocks {
		rest := string(examples)
		for _, line := range strings.Split(strings.TrimSpace(string(b[1])), "\n") {
			line = strings.TrimSpace(line)
			i := strings.Index(rest, line)
			if i < 0 {
				t.Errorf("README.md's Go line %q is not in rcp/example_test.go (in order): the README shows the Example functions", line)
				break
			}
			rest = rest[i+len(line):]
		}
	}
}
