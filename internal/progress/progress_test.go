package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestCompute(t *testing.T) {
	tests := []struct {
		name        string
		done, total int64
		elapsed     time.Duration
		rate        float64
		eta         time.Duration
	}{
		{"half", 50, 100, 10 * time.Second, 5, 10 * time.Second},
		{"unknown total", 50, 0, 10 * time.Second, 5, 0},
		{"no time", 0, 100, 0, 0, 0},
		{"done", 100, 100, 4 * time.Second, 25, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Compute(tt.done, tt.total, tt.elapsed)
			if s.Rate != tt.rate || s.ETA != tt.eta {
				t.Fatalf("Compute = rate %v eta %v, want %v %v", s.Rate, s.ETA, tt.rate, tt.eta)
			}
		})
	}
}

func TestLineModeIsPeriodic(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	b := New(&buf, "ingest", 1000, WithUnit("docs"), WithClock(clk.now), WithInterval(10*time.Second))
	for i := 0; i < 100; i++ { // 100 adds over 25 s: lines at 10 s and 20 s only
		clk.t = clk.t.Add(250 * time.Millisecond)
		b.Add(5)
	}
	b.Finish()
	b.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), buf.String())
	}
	if strings.Contains(buf.String(), "\r") || strings.Contains(buf.String(), "\x1b") {
		t.Fatalf("line mode wrote terminal controls: %q", buf.String())
	}
	if want := "ingest 20% 200/1000 docs 20.0/s ETA 40s"; lines[0] != want {
		t.Fatalf("first line %q, want %q", lines[0], want)
	}
	if want := "ingest 50% 500/1000 docs 20.0/s in 25s"; lines[2] != want {
		t.Fatalf("final line %q, want %q", lines[2], want)
	}
}

func TestTTYModeRedraws(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	b := New(&buf, "eval", 10, WithTTY(true), WithClock(clk.now))
	b.Add(1) // drawn at once
	b.Add(1) // throttled (same instant)
	clk.t = clk.t.Add(time.Second)
	b.Add(3)
	b.Finish()
	out := buf.String()
	if n := strings.Count(out, "\r"); n != 3 {
		t.Fatalf("%d redraws, want 3: %q", n, out)
	}
	if !strings.Contains(out, "[") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("no bar or no final newline: %q", out)
	}
	if !strings.Contains(out, "5/10 5.00/s in 1s") {
		t.Fatalf("final state missing: %q", out)
	}
}

func TestNonFileWriterIsNotTTY(t *testing.T) {
	b := New(&bytes.Buffer{}, "", 0)
	if b.tty {
		t.Fatal("a buffer was taken for a terminal")
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		500 * time.Millisecond: "500ms", 42 * time.Second: "42s",
		187 * time.Second: "3m07s", 125 * time.Minute: "2h05m",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for r, want := range map[float64]string{1.234: "1.23", 12.34: "12.3", 123.4: "123", 12345: "12.3k", 2.5e6: "2.50M"} {
		if got := FormatRate(r); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", r, got, want)
		}
	}
}
