package within

import (
	"sync"
	"testing"
	"time"
)

// fakeTB records a Fatalf and ends the goroutine as testing.T does.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func fails(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	f := &fakeTB{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != f {
				panic(r)
			}
		}()
		fn(f)
	}()
	return f.msg
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, ch, "seven"); got != 7 {
		t.Fatalf("got %d", got)
	}
	if msg := fails(t, func(tb testing.TB) { RecvIn(tb, 10*time.Millisecond, make(chan int), "nothing") }); msg == "" {
		t.Fatal("a receive that never comes did not fail")
	}
}

func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	go wg.Done()
	Wait(t, &wg, "one goroutine")
}
