package tree

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// topicLeaves makes n leaves per topic: each topic a direction in 16
// dimensions plus a little noise, so the clusters are known.
func topicLeaves(topics, n int) []Leaf {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []Leaf
	for t := 0; t < topics; t++ {
		for i := 0; i < n; i++ {
			v := make([]float32, 16)
			v[t] = 1
			for j := range v {
				v[j] += float32(rng.NormFloat64() * 0.05)
			}
			out = append(out, Leaf{ID: fmt.Sprintf("t%d-%d", t, i), Vec: v, Text: fmt.Sprintf("Topic %d item %d. More words.", t, i)})
		}
	}
	return out
}

func topicOf(id string) string { return strings.SplitN(id, "-", 2)[0] }

func TestBuildClustersByTopic(t *testing.T) {
	leaves := topicLeaves(4, 30)
	leaves = append(leaves, Leaf{ID: "zero", Vec: make([]float32, 16)}) // no usable vector: skipped
	tr, err := Build(context.Background(), "v1", leaves, Options{GroupSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Leaves() != 120 || tr.Depth() < 3 {
		t.Fatalf("leaves %d depth %d", tr.Leaves(), tr.Depth())
	}
	for l, nodes := range tr.Levels {
		total := 0
		for _, n := range nodes {
			total += n.Size
			if l == 0 && n.Size > 8 {
				t.Fatalf("level-1 node %s has %d leaves > group size", n.ID, n.Size)
			}
			if n.Level != l+1 || n.Summary == "" || len(n.Central) == 0 {
				t.Fatalf("node %+v", n)
			}
			if l == 0 { // a level-1 cluster never mixes topics
				for _, c := range n.Central {
					if topicOf(c) != topicOf(n.Central[0]) {
						t.Fatalf("node %s mixes %v", n.ID, n.Central)
					}
				}
			}
		}
		if total != 120 {
			t.Fatalf("level %d covers %d leaves, want a partition of 120", l+1, total)
		}
	}
	// A query matching topic 2's leaves ranks a topic-2 cluster first at every level.
	scores := map[string]float64{"t2-1": 3, "t2-5": 2, "t0-3": 0.5, "missing": 9}
	for l := 1; l < tr.Depth(); l++ {
		r := tr.Rank(l, scores, 3)
		if len(r) == 0 || topicOf(r[0].Central[0]) != "t2" {
			t.Fatalf("level %d rank %+v", l, r)
		}
		if n, ok := tr.NodeOf(l, "t2-1"); !ok || n.ID != r[0].ID {
			t.Fatalf("NodeOf level %d: %v %v", l, n, ok)
		}
	}
	if tr.Rank(0, scores, 3) != nil || tr.Rank(tr.Depth(), scores, 3) != nil {
		t.Fatal("rank outside the summary levels")
	}
	// Deterministic.
	again, _ := Build(context.Background(), "v1", topicLeaves(4, 30), Options{GroupSize: 8})
	if fmt.Sprint(again.Levels[0][0]) != fmt.Sprint(tr.Levels[0][0]) {
		t.Fatal("two builds differ")
	}
}

func TestBuildCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, "v", topicLeaves(3, 40), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestSaveLoad(t *testing.T) {
	tr, err := Build(context.Background(), "v9", topicLeaves(3, 20), Options{GroupSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tree.snap")
	if err := tr.Save(p); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "v9" || got.Depth() != tr.Depth() || got.Leaves() != tr.Leaves() {
		t.Fatalf("loaded %s depth %d leaves %d", got.Version, got.Depth(), got.Leaves())
	}
	if a, b := got.Rank(1, map[string]float64{"t1-3": 1}, 1), tr.Rank(1, map[string]float64{"t1-3": 1}, 1); a[0].ID != b[0].ID {
		t.Fatalf("rank after load %v vs %v", a, b)
	}
	data, _ := os.ReadFile(p)
	data[len(data)/2] ^= 0xff
	os.WriteFile(p, data, 0o644)
	if _, err := Load(p); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("damaged snapshot: %v", err)
	}
}

func FuzzLoad(f *testing.F) {
	tr, _ := Build(context.Background(), "v", topicLeaves(2, 10), Options{GroupSize: 4})
	p := filepath.Join(f.TempDir(), "seed.snap")
	if err := tr.Save(p); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(p)
	f.Add(seed)
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "t.snap")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p)
		if err != nil {
			return
		}
		for l := 1; l < got.Depth(); l++ { // a snapshot that loads must be usable
			got.Rank(l, map[string]float64{"x": 1}, 3)
		}
	})
}

func TestLead(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"One. Two.", "One."},
		{"Title line\nFirst sentence here. Second.", "Title line: First sentence here."},
		{"Ends with a stop.\nNext line.", "Ends with a stop."},
		{"3.5 percent rose. Then.", "3.5 percent rose."},
		{"", ""},
	} {
		if got := lead(c.in); got != c.want {
			t.Errorf("lead(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
