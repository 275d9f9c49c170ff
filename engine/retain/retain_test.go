package retain

import (
	"slices"
	"testing"
	"time"
)

type gen struct{ n int }

func newSet(o Options) (*Set[*gen], *time.Time) {
	s := New[*gen](o)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	return s, &now
}

// A session keeps the generation it negotiated after newer ones are
// published; new sessions get the newest.
func TestKeepsWhatSessionsUse(t *testing.T) {
	s, now := newSet(Options{})
	g1, g2, g3 := &gen{1}, &gen{2}, &gen{3}
	if d := s.Publish("a", g1, 10); len(d) != 0 {
		t.Fatal(d)
	}
	s.Touch("a") // a session negotiated a
	*now = now.Add(time.Minute)
	if d := s.Publish("b", g2, 10); len(d) != 0 {
		t.Fatalf("dropped %v", d)
	}
	if g, ok := s.Get("a"); !ok || g != g1 {
		t.Fatal("the session's generation is gone")
	}
	if g, _ := s.Current(); g != g2 {
		t.Fatal("current")
	}
	*now = now.Add(time.Minute)
	s.Publish("c", g3, 10)
	if !slices.Equal(s.Kept(), []*gen{g1, g2}) {
		t.Fatalf("kept %v", s.Kept())
	}
	if st := s.Stats(); st.Kept != 2 || st.Bytes != 20 {
		t.Fatalf("%+v", st)
	}
}

// Bounds: at most Max kept, at most Budget bytes, the oldest dropped
// first; a generation idle past the grace period is dropped.
func TestBounds(t *testing.T) {
	t.Run("max", func(t *testing.T) {
		s, _ := newSet(Options{Max: 1})
		g := []*gen{{0}, {1}, {2}}
		s.Publish("0", g[0], 1)
		s.Publish("1", g[1], 1)
		d := s.Publish("2", g[2], 1)
		if !slices.Equal(d, []*gen{g[0]}) || !slices.Equal(s.Kept(), []*gen{g[1]}) {
			t.Fatalf("dropped %v kept %v", d, s.Kept())
		}
		if _, ok := s.Get("0"); ok {
			t.Fatal("dropped generation still served")
		}
	})
	t.Run("budget", func(t *testing.T) {
		s, _ := newSet(Options{Budget: 100})
		g := []*gen{{0}, {1}, {2}}
		s.Publish("0", g[0], 60)
		s.Publish("1", g[1], 60)
		d := s.Publish("2", g[2], 1000) // the current one does not count
		if !slices.Equal(d, []*gen{g[0]}) || !slices.Equal(s.Kept(), []*gen{g[1]}) {
			t.Fatalf("dropped %v kept %v", d, s.Kept())
		}
		if d := s.Resize(g[1], 101); !slices.Equal(d, []*gen{g[1]}) {
			t.Fatalf("a kept generation that outgrew the budget: dropped %v", d)
		}
	})
	t.Run("grace", func(t *testing.T) {
		s, now := newSet(Options{Grace: time.Minute})
		g1, g2 := &gen{1}, &gen{2}
		s.Publish("a", g1, 1)
		*now = now.Add(2 * time.Minute) // nobody used a since
		if d := s.Publish("b", g2, 1); !slices.Equal(d, []*gen{g1}) {
			t.Fatalf("an idle generation is not kept: dropped %v", d)
		}
		g3 := &gen{3}
		s.Get("b")
		s.Publish("c", g3, 1)
		*now = now.Add(30 * time.Second)
		if d := s.Sweep(); len(d) != 0 {
			t.Fatalf("swept %v within the grace period", d)
		}
		s.Get("b") // still used
		*now = now.Add(50 * time.Second)
		if d := s.Sweep(); len(d) != 0 {
			t.Fatalf("swept %v: used 50 s ago", d)
		}
		*now = now.Add(11 * time.Second)
		if d := s.Sweep(); !slices.Equal(d, []*gen{g2}) {
			t.Fatalf("swept %v", d)
		}
	})
	t.Run("none", func(t *testing.T) {
		s, _ := newSet(Options{Max: -1})
		g1 := &gen{1}
		s.Publish("a", g1, 1)
		if d := s.Publish("b", &gen{2}, 1); !slices.Equal(d, []*gen{g1}) {
			t.Fatalf("Max < 0 keeps nothing: dropped %v", d)
		}
	})
}

// Republishing a key (a rebuilt generation of the same identity) replaces
// it; a withdrawn generation is no longer served.
func TestReplaceAndWithdraw(t *testing.T) {
	s, _ := newSet(Options{})
	g1, g1b, g2 := &gen{1}, &gen{10}, &gen{2}
	s.Publish("a", g1, 1)
	if d := s.Publish("a", g1b, 1); !slices.Equal(d, []*gen{g1}) || len(s.Kept()) != 0 {
		t.Fatalf("dropped %v kept %v", d, s.Kept())
	}
	s.Publish("b", g2, 1)
	if !s.Withdraw(g1b) || len(s.Kept()) != 0 {
		t.Fatal("withdraw a kept generation")
	}
	if !s.Withdraw(g2) {
		t.Fatal("withdraw the current generation")
	}
	if _, ok := s.Current(); ok {
		t.Fatal("a withdrawn current generation")
	}
	if s.Withdraw(g2) {
		t.Fatal("withdrawn twice")
	}
}
