// Package childtest runs a program as a child of a test: started, stopped
// when the test ends, and waited for until its log names the address it
// serves on.
package childtest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/internal/childproc"
	"github.com/rcpgo/rcpgo/internal/testutil/syncbuf"
)

// Start runs cmd until the test ends (an interrupt, then a kill after 10 s)
// and returns the first submatch of addr in its stderr, waiting up to 2
// minutes for the line; cmd.Stderr is set here.
func Start(t testing.TB, cmd *exec.Cmd, addr *regexp.Regexp) string {
	t.Helper()
	logs := &syncbuf.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { childproc.Stop(cmd, os.Interrupt, 10*time.Second) })
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := addr.FindStringSubmatch(logs.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("%s did not log its address within 2 minutes:\n%s", strings.Join(cmd.Args, " "), logs.String())
	return ""
}
