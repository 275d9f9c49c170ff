package rcp

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// A frame followed by a blank line must be answered at once, not when the
// next frame or EOF arrives (§5.1: readers tolerate blank lines).
func TestStdioAnswerNotHeldByTrailingBlankLine(t *testing.T) {
	checkNoLeaks(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := NewServer(newTestHandler(), nil)
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), inR, outW); outW.Close() }()

	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":"blank-1","method":"ping","params":{}}`+"\n\n")
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if !strings.Contains(s, `"id":"blank-1"`) {
			t.Fatalf("answer = %q", s)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the answer was held back while the input stayed open")
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
