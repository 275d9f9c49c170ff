// Package childproc stops a child process the way rcpgo's tools and tests
// stop an rcpd they started: a signal asking it to shut down cleanly, then
// SIGKILL once a grace period has passed.
package childproc

import (
	"os"
	"os/exec"
	"time"
)

// Stop sends sig to cmd's started process and waits for it to exit,
// killing it after grace. It reports whether it had to kill.
func Stop(cmd *exec.Cmd, sig os.Signal, grace time.Duration) (killed bool) {
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return false
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
		return true
	}
}
