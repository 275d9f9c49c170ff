package chunk

import (
	"strings"
	"testing"
)

const doc = `# Guide

Intro sentence one. Intro sentence two is a little longer than the first one!

## Setup

Install the package. Configure the service with a file. Start it and check the logs? Yes.

## Usage

Run the query tool against the index and read the ranked list of results carefully.
`

func TestSplitOffsetsAndStructure(t *testing.T) {
	for _, opts := range []Options{{Size: 12, Overlap: 4}, {Size: 25, Overlap: -1}, {}, {Size: 3, Overlap: 1}} {
		chunks := Split(doc, opts)
		if len(chunks) == 0 {
			t.Fatalf("%+v: no chunks", opts)
		}
		prevStart := -1
		for i, c := range chunks {
			if c.Index != i || c.Text != doc[c.Start:c.End] || c.Text != strings.TrimSpace(c.Text) || c.Text == "" {
				t.Fatalf("%+v: chunk %d %+v", opts, i, c)
			}
			if c.Start <= prevStart {
				t.Fatalf("%+v: chunk %d does not advance", opts, i)
			}
			prevStart = c.Start
		}
	}
	chunks := Split(doc, Options{Size: 12, Overlap: 4})
	var sawSetup bool
	for _, c := range chunks {
		if strings.Contains(c.Text, "Install the package") {
			sawSetup = true
			if len(c.Section) != 2 || c.Section[0] != "Guide" || c.Section[1] != "Setup" {
				t.Fatalf("section %v", c.Section)
			}
		}
		if strings.Contains(c.Text, "Intro") && strings.Contains(c.Text, "Install") {
			t.Fatal("chunk spans a heading")
		}
	}
	if !sawSetup {
		t.Fatal("setup text lost")
	}
}

func TestOverlap(t *testing.T) {
	text := strings.Repeat("Alpha beta gamma delta. ", 20)
	chunks := Split(text, Options{Size: 20, Overlap: 8})
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i := 1; i < len(chunks); i++ {
		if chunks[i].Start >= chunks[i-1].End {
			t.Fatalf("chunks %d and %d do not overlap", i-1, i)
		}
		if Tokens(chunks[i].Text) > 20 {
			t.Fatalf("chunk %d has %d tokens", i, Tokens(chunks[i].Text))
		}
	}
	// Coverage: every byte of non-space text is in some chunk.
	covered := make([]bool, len(text))
	for _, c := range chunks {
		for j := c.Start; j < c.End; j++ {
			covered[j] = true
		}
	}
	for j, ok := range covered {
		if !ok && text[j] != ' ' {
			t.Fatalf("byte %d not covered", j)
		}
	}
}

func TestHardSplitLongSentence(t *testing.T) {
	text := strings.Repeat("word ", 100) + "end"
	chunks := Split(text, Options{Size: 10, Overlap: -1})
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for _, c := range chunks {
		if Tokens(c.Text) > 10 || c.Text != text[c.Start:c.End] {
			t.Fatalf("%q", c.Text)
		}
	}
	if Split("   \n\n ", Options{}) != nil {
		t.Fatal("chunks for blank text")
	}
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"hello, world!", 4},
		{"internationalization", 4},
		{"naïve café", 2},
		{"東京", 1},
		{"a-b", 3},
	} {
		if got := Tokens(tc.s); got != tc.want {
			t.Errorf("Tokens(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}
