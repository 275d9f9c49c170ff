package session

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestDedupByIDAndContent(t *testing.T) {
	s := New(Options{})
	a, b, c := s.IDHash("a"), s.IDHash("b"), s.IDHash("c")
	s.Record("s1", []uint64{a, b}, []uint64{s.ContentHash("Lift and  DRAG"), 0})
	got := s.Seen("s1", []uint64{a, c, c}, []uint64{0, s.ContentHash("lift and drag"), s.ContentHash("other")})
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("Seen = %v, want [true true false] (id, same content, new)", got)
	}
	if s.Seen("s2", []uint64{a}, nil)[0] {
		t.Fatal("another session sees s1's hits")
	}
	if s.Remembered("s1") != 2 || s.Remembered("nope") != 0 {
		t.Fatalf("Remembered = %d", s.Remembered("s1"))
	}
}

func TestTTLWithFakeClock(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	s := New(Options{TTL: time.Minute, Now: clk.Now})
	id := s.IDHash("a")
	s.Record("s", []uint64{id}, nil)
	s.SetPlan("s", "rewrite|q", []string{"q2"})
	clk.Add(59 * time.Second)
	if !s.Seen("s", []uint64{id}, nil)[0] {
		t.Fatal("forgot a hit before the TTL")
	}
	clk.Add(59 * time.Second) // idle time restarts at each use
	if _, ok := s.Plan("s", "rewrite|q"); !ok {
		t.Fatal("forgot the plan before the TTL (the last use restarted it)")
	}
	clk.Add(61 * time.Second)
	if s.Seen("s", []uint64{id}, nil)[0] {
		t.Fatal("remembered a hit after the TTL")
	}
	if s.Len() != 0 || s.Entries() != 0 {
		t.Fatalf("expired session kept: %d sessions, %d entries", s.Len(), s.Entries())
	}
}

func TestBounds(t *testing.T) {
	s := New(Options{MaxSessions: 3, MaxSeen: 4, MaxEntries: 10})
	for i := range 10 {
		s.Record(fmt.Sprint("s", i), []uint64{1, 2}, nil)
	}
	if s.Len() != 3 || s.Entries() != 6 {
		t.Fatalf("%d sessions, %d entries; want 3, 6", s.Len(), s.Entries())
	}
	if s.Remembered("s9") != 2 || s.Remembered("s0") != 0 {
		t.Fatal("LRU evicted the wrong session")
	}
	s.Record("s9", []uint64{3, 4, 5, 6, 7}, nil)
	if got := s.Seen("s9", []uint64{1, 7}, nil); got[0] || !got[1] {
		t.Fatalf("per-session bound: Seen = %v, want oldest forgotten", got)
	}
	// One session cannot exceed the global bound.
	big := make([]uint64, 50)
	for i := range big {
		big[i] = uint64(100 + i)
	}
	s2 := New(Options{MaxSeen: 100, MaxEntries: 10})
	s2.Record("x", big, nil)
	if s2.Entries() > 10 {
		t.Fatalf("entries %d over the global bound", s2.Entries())
	}
	for range 20 {
		s.SetPlan("s9", fmt.Sprint(time.Now().UnixNano()), []string{"q"})
	}
	if n := len(s.byID["s9"].Value.(*state).plans); n > maxPlans {
		t.Fatalf("%d plans kept", n)
	}
}

// TestMemoryBound records 100 000 distinct session ids, ten hits each,
// with the default options and checks the live heap stays under 32 MiB
// (the bound documented in docs/rcpd.md).
func TestMemoryBound(t *testing.T) {
	const bound = 32 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New(Options{})
	ids, hashes := make([]uint64, 10), make([]uint64, 10)
	for i := range 100000 {
		for j := range ids {
			ids[j], hashes[j] = uint64(i*10+j+1), uint64(i*10+j+1)<<20
		}
		s.Record(fmt.Sprintf("session-%08d-with-a-longish-client-chosen-id", i), ids, hashes)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("100000 sessions: %d kept, %d entries, heap +%.1f MiB", s.Len(), s.Entries(), float64(grown)/(1<<20))
	if s.Len() != DefaultMaxSessions {
		t.Fatalf("%d sessions kept, want %d", s.Len(), DefaultMaxSessions)
	}
	if grown > bound {
		t.Fatalf("heap grew %d bytes, over the %d bound", grown, bound)
	}
	runtime.KeepAlive(s)
}

func TestConcurrent(t *testing.T) {
	s := New(Options{MaxSessions: 50})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				sid := fmt.Sprint(g, i%60)
				s.Record(sid, []uint64{uint64(i)}, []uint64{uint64(i)})
				s.Seen(sid, []uint64{uint64(i)}, nil)
			}
		}()
	}
	wg.Wait()
	if s.Len() > 50 {
		t.Fatal("bound broken under concurrency")
	}
}
