package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	n, d, f := 0, time.Duration(-1), 2.5
	Positive(&n, 7)
	Positive(&d, time.Minute)
	Positive(&f, 9)
	if n != 7 || d != time.Minute || f != 2.5 {
		t.Fatalf("got %d %v %v, want 7 1m0s 2.5", n, d, f)
	}
}

func TestClock(t *testing.T) {
	var now func() time.Time
	Clock(&now)
	if now == nil {
		t.Fatal("Clock left now nil")
	}
	fixed := func() time.Time { return time.Unix(1, 0) }
	now = fixed
	Clock(&now)
	if !now().Equal(time.Unix(1, 0)) {
		t.Fatal("Clock replaced a set clock")
	}
}
