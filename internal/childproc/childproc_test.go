package childproc

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A process that exits on the signal is not killed; one that ignores it
// is killed after the grace period.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		killed bool
	}{
		{"exits on SIGTERM", "echo ready; while :; do sleep 0.1; done", false},
		{"ignores SIGTERM", "trap '' TERM; echo ready; while :; do sleep 0.1; done", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" { // the trap is set
				t.Fatalf("child said %q", line)
			}
			if got := Stop(cmd, syscall.SIGTERM, time.Second); got != tc.killed {
				t.Fatalf("killed %v, want %v", got, tc.killed)
			}
			if cmd.ProcessState == nil {
				t.Fatal("Stop returned before the process was reaped")
			}
		})
	}
}
