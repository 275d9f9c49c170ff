package outcome

import (
	"context"
	"errors"
	"testing"
)

func TestOutcome(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name string
		err  error
	}{{"passed", nil}, {"failed", boom}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := New()
			if _, finished := o.Result(); finished {
				t.Fatal("finished before Finish")
			}
			cancelled, cancel := context.WithCancel(context.Background())
			cancel()
			if err := o.Wait(cancelled); !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait with an ended context before Finish: %v", err)
			}
			waited := make(chan error)
			go func() { waited <- o.Wait(context.Background()) }()
			o.Finish(tc.err)
			if err := <-waited; err != tc.err {
				t.Fatalf("Wait: %v, want %v", err, tc.err)
			}
			if err, finished := o.Result(); !finished || err != tc.err {
				t.Fatalf("Result: %v %v", err, finished)
			}
			<-o.Done()
			if o.Passed() != (tc.err == nil) {
				t.Fatalf("Passed: %v", o.Passed())
			}
			if err := Finished(tc.err).Wait(cancelled); err != tc.err {
				t.Fatalf("Finished(%v).Wait: %v", tc.err, err)
			}
		})
	}
}
