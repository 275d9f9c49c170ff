// Package progress draws a one-line progress bar with rate and ETA on a
// terminal. When the writer is not a terminal it prints a plain status line
// at a fixed interval instead (and nothing in between), so logs stay short.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Stats is a snapshot of a task's progress.
type Stats struct {
	Done    int64
	Total   int64 // 0 when unknown
	Elapsed time.Duration
	Rate    float64       // items per second since start
	ETA     time.Duration // 0 when unknown
}

// Compute derives rate and ETA from a count and the elapsed time.
func Compute(done, total int64, elapsed time.Duration) Stats {
	s := Stats{Done: done, Total: total, Elapsed: elapsed}
	if elapsed > 0 {
		s.Rate = float64(done) / elapsed.Seconds()
	}
	if total > 0 && s.Rate > 0 && done < total {
		s.ETA = time.Duration(float64(total-done) / s.Rate * float64(time.Second))
	}
	return s
}

// Bar is a progress indicator. Its methods are safe for concurrent use. The
// zero value is not usable; call New.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	unit     string
	total    int64
	done     int64
	tty      bool
	width    int
	start    time.Time
	last     time.Time
	interval time.Duration
	now      func() time.Time
	finished bool
	drawn    bool
}

// Option configures a Bar.
type Option func(*Bar)

// WithUnit names the counted items ("docs", "queries").
func WithUnit(unit string) Option { return func(b *Bar) { b.unit = unit } }

// WithInterval sets how often a non-terminal writer gets a status line
// (default 10s). Terminals are redrawn at most every 100ms.
func WithInterval(d time.Duration) Option { return func(b *Bar) { b.interval = d } }

// WithTTY forces terminal (true) or line (false) mode.
func WithTTY(tty bool) Option { return func(b *Bar) { b.tty = tty } }

// WithClock replaces time.Now (for tests).
func WithClock(now func() time.Time) Option { return func(b *Bar) { b.now = now } }

// New returns a bar writing to w (normally os.Stderr). total may be 0 when
// unknown. Terminal mode is chosen when w is a terminal.
func New(w io.Writer, label string, total int64, opts ...Option) *Bar {
	b := &Bar{w: w, label: label, total: total, interval: 10 * time.Second, now: time.Now, width: 80}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b.tty = true
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			b.width = cols
		}
	}
	for _, o := range opts {
		o(b)
	}
	b.start = b.now()
	b.last = b.start
	return b
}

// SetTotal changes the expected total.
func (b *Bar) SetTotal(total int64) {
	b.mu.Lock()
	b.total = total
	b.mu.Unlock()
}

// Add advances the bar by n.
func (b *Bar) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	b.maybeDraw()
}

// Set moves the bar to done.
func (b *Bar) Set(done int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = done
	b.maybeDraw()
}

// Stats returns the current snapshot.
func (b *Bar) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Compute(b.done, b.total, b.now().Sub(b.start))
}

// Finish draws the final state and ends the line. Later calls do nothing.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	line := b.render(b.now())
	if b.tty {
		fmt.Fprintf(b.w, "\r%s\x1b[K\n", line)
	} else {
		fmt.Fprintln(b.w, line)
	}
}

func (b *Bar) maybeDraw() {
	if b.finished {
		return
	}
	now := b.now()
	every := b.interval
	if b.tty {
		every = 100 * time.Millisecond
		if !b.drawn { // show something at once on a terminal
			every = 0
		}
	}
	if now.Sub(b.last) < every {
		return
	}
	b.last = now
	b.drawn = true
	line := b.render(now)
	if b.tty {
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
	} else {
		fmt.Fprintln(b.w, line)
	}
}

// render formats "label [=====>    ] 42% 420/1000 docs 35.1/s ETA 16s".
func (b *Bar) render(now time.Time) string {
	s := Compute(b.done, b.total, now.Sub(b.start))
	var sb strings.Builder
	if b.label != "" {
		sb.WriteString(b.label)
		sb.WriteByte(' ')
	}
	counts := fmt.Sprintf("%d", s.Done)
	if s.Total > 0 {
		counts = fmt.Sprintf("%d/%d", s.Done, s.Total)
	}
	if b.unit != "" {
		counts += " " + b.unit
	}
	tail := fmt.Sprintf(" %s %s/s", counts, FormatRate(s.Rate))
	switch {
	case b.finished:
		tail += " in " + FormatDuration(s.Elapsed)
	case s.ETA > 0:
		tail += " ETA " + FormatDuration(s.ETA)
	}
	if s.Total > 0 {
		frac := float64(s.Done) / float64(s.Total)
		frac = min(max(frac, 0), 1)
		pct := fmt.Sprintf("%.0f%%", frac*100)
		if b.tty {
			pct = fmt.Sprintf(" %3.0f%%", frac*100)
			barW := b.width - sb.Len() - len(tail) - len(pct) - 3
			if barW > 40 {
				barW = 40
			}
			if barW >= 10 {
				fill := int(frac * float64(barW))
				sb.WriteByte('[')
				sb.WriteString(strings.Repeat("=", fill))
				if fill < barW {
					sb.WriteByte('>')
					sb.WriteString(strings.Repeat(" ", barW-fill-1))
				}
				sb.WriteByte(']')
			}
		}
		sb.WriteString(pct)
	}
	sb.WriteString(tail)
	return sb.String()
}

// FormatRate prints a rate with three significant digits.
func FormatRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.2f", r)
	}
}

// FormatDuration prints d as "850ms", "42s", "3m07s" or "2h05m".
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
