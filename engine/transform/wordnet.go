package transform

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultWordNetDir is where Debian's wordnet-base package installs the
// WordNet 3.0 database.
const DefaultWordNetDir = "/usr/share/wordnet"

// WordNet holds the synonym sets and hypernym links of the WordNet
// database, restricted to the synsets that contain a word of interest (the
// corpus vocabulary), so its size follows the corpus, not WordNet.
type WordNet struct {
	synsets map[string][]int // word → synset ordinals
	members [][]string       // synset → words (lower case, spaces for "_")
	hyper   [][]int          // synset → hypernym synset ordinals
}

// wordnetFiles are the data files of the four parts of speech.
var wordnetFiles = []string{"data.noun", "data.verb", "data.adj", "data.adv"}

// LoadWordNet parses the data.* files in dir, keeping synsets that hold at
// least one word for which keep returns true (keep nil keeps all).
// It returns an error wrapping os.ErrNotExist when dir holds none of them.
func LoadWordNet(dir string, keep func(string) bool) (*WordNet, error) {
	wn := &WordNet{synsets: map[string][]int{}}
	type raw struct {
		words []string
		hyper []string // "pos:offset"
	}
	byKey := map[string]int{}
	var raws []raw
	found := 0
	for _, name := range wordnetFiles {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("wordnet: %w", err)
		}
		found++
		err = parseWordNetData(f, func(key string, words, hyper []string) {
			if keep != nil && !anyOf(words, keep) {
				return
			}
			byKey[key] = len(raws)
			raws = append(raws, raw{words, hyper})
		})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("wordnet: %s: %w", name, err)
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("wordnet: no data files in %s: %w", dir, os.ErrNotExist)
	}
	wn.members = make([][]string, len(raws))
	wn.hyper = make([][]int, len(raws))
	for i, r := range raws {
		wn.members[i] = r.words
		for _, w := range r.words {
			wn.synsets[w] = append(wn.synsets[w], i)
		}
		for _, h := range r.hyper {
			if j, ok := byKey[h]; ok {
				wn.hyper[i] = append(wn.hyper[i], j)
			}
		}
	}
	return wn, nil
}

func anyOf(words []string, keep func(string) bool) bool {
	for _, w := range words {
		if keep(w) {
			return true
		}
	}
	return false
}

// parseWordNetData reads one data.pos file (wndb(5WN)): after the licence
// header (lines starting with a space), each line is
//
//	offset lex_filenum ss_type w_cnt(hex) {word lex_id} p_cnt {ptr_symbol offset pos source/target} [frames] | gloss
func parseWordNetData(r io.Reader, emit func(key string, words, hyper []string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || text[0] == ' ' {
			continue
		}
		if i := strings.Index(text, " | "); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) < 4 {
			return fmt.Errorf("line %d: too few fields", line)
		}
		pos := f[2]
		if pos == "s" {
			pos = "a" // satellite adjectives share the adjective file
		}
		wcnt, err := strconv.ParseUint(f[3], 16, 16)
		if err != nil || len(f) < 4+2*int(wcnt)+1 {
			return fmt.Errorf("line %d: bad word count %q", line, f[3])
		}
		words := make([]string, 0, wcnt)
		for i := range int(wcnt) {
			w := strings.ToLower(f[4+2*i])
			if j := strings.IndexByte(w, '('); j > 0 {
				w = w[:j] // adjective markers: (a), (p), (ip)
			}
			words = append(words, strings.ReplaceAll(w, "_", " "))
		}
		at := 4 + 2*int(wcnt)
		pcnt, err := strconv.Atoi(f[at])
		if err != nil || len(f) < at+1+4*pcnt {
			return fmt.Errorf("line %d: bad pointer count %q", line, f[at])
		}
		var hyper []string
		for i := range pcnt {
			p := f[at+1+4*i:]
			if p[0] == "@" || p[0] == "@i" {
				hp := p[2]
				if hp == "s" {
					hp = "a"
				}
				hyper = append(hyper, hp+":"+p[1])
			}
		}
		emit(pos+":"+f[0], words, hyper)
	}
	return sc.Err()
}

// Synonyms returns the other single-word members of word's synsets, in
// WordNet order (most frequent sense first), without duplicates.
func (wn *WordNet) Synonyms(word string) []string {
	return wn.collect(wn.synsets[word], word)
}

// Hypernyms returns the single-word members of the synsets one level above
// word's synsets.
func (wn *WordNet) Hypernyms(word string) []string {
	var up []int
	for _, s := range wn.synsets[word] {
		up = append(up, wn.hyper[s]...)
	}
	return wn.collect(up, word)
}

func (wn *WordNet) collect(synsets []int, exclude string) []string {
	var out []string
	seen := map[string]bool{exclude: true}
	for _, s := range synsets {
		for _, w := range wn.members[s] {
			if !seen[w] && !strings.Contains(w, " ") {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// Synsets is the number of synsets held.
func (wn *WordNet) Synsets() int { return len(wn.members) }
