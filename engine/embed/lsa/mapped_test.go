package lsa

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/embed"
)

// TestLoadVersion1Model (issue 15): a model file of format version 1
// still loads, says it is outdated and embeds as the model it was written
// from (same identity); Save rewrites it as version 2, which is mapped and
// keeps the identity.
func TestLoadVersion1Model(t *testing.T) {
	ctx := context.Background()
	docs := topicCorpus(30, 9)
	want, err := FitTexts(ctx, docs, simpleTokenize, Options{Dimension: 3, Snapshot: "golden", TokenizerID: "simple", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	old, err := Load("testdata/v1.model", simpleTokenize)
	if err != nil {
		t.Fatal(err)
	}
	if !old.Outdated() || old.Identity() != want.Identity() || old.Identity() != "lsa-3:fit=81671ce00238c703" {
		t.Fatalf("version-1 model: outdated %v identity %q, want %q", old.Outdated(), old.Identity(), want.Identity())
	}
	path := filepath.Join(t.TempDir(), "v2.model")
	if err := old.Save(path); err != nil {
		t.Fatal(err)
	}
	cur, err := Load(path, simpleTokenize)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Outdated() || cur.rows == nil || cur.Identity() != want.Identity() {
		t.Fatalf("rewritten model: outdated %v mapped %v identity %q", cur.Outdated(), cur.rows != nil, cur.Identity())
	}
	if h, err := ReadHeader(path); err != nil || h.Dimension != 3 || h.NumDocs != 30 {
		t.Fatalf("header of the rewritten model: %+v %v", h, err)
	}
	a, _ := want.Embed(ctx, docs, embed.KindDocument)
	b, err := cur.Embed(ctx, docs, embed.KindDocument)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("vector %d differs", i)
		}
	}
	if err := cur.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestModelDamage (issue 15): a mapped model checks its projection block by
// block as Embed reads it, so Load reads only the header and meta; a
// damaged block, or a file whose identity does not hash from its
// contents, is found by the Embed that reads it or by Verify, and from
// then on the model refuses to embed or be saved.
func TestModelDamage(t *testing.T) {
	ctx := context.Background()
	// A vocabulary of 300 words: several blocks of rows.
	docs := make([]string, 400)
	for i := range docs {
		var words []string
		for j := range 12 {
			words = append(words, fmt.Sprintf("w%d", (i*7+j*31+j*j)%300))
		}
		docs[i] = strings.Join(words, " ")
	}
	m, err := FitTexts(ctx, docs, simpleTokenize, Options{Dimension: 16, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	blocks := (m.VocabularySize() + blockRows - 1) / blockRows
	if blocks < 3 {
		t.Fatalf("%d terms: want several blocks", m.VocabularySize())
	}
	projEnd := len(data) - 4*blocks - 4
	load := func(t *testing.T, b []byte) *Model {
		t.Helper()
		path := filepath.Join(t.TempDir(), "m.model")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path, simpleTokenize)
		if err != nil {
			t.Fatalf("Load read the projection: %v", err)
		}
		return got
	}
	t.Run("block", func(t *testing.T) {
		bad := bytes.Clone(data)
		bad[projEnd-8] ^= 0x01 // the last term's row
		got := load(t, bad)
		if got.rows.unchecked.Load() != int64(blocks) {
			t.Fatal("Load checked blocks")
		}
		if _, err := got.Embed(ctx, []string{got.terms[0]}, embed.KindQuery); err != nil {
			t.Fatalf("embedding from an intact block: %v", err)
		}
		if _, err := got.Embed(ctx, []string{got.terms[len(got.terms)-1]}, embed.KindQuery); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("embedding from the damaged block: %v", err)
		}
		if _, err := got.Embed(ctx, []string{got.terms[0]}, embed.KindQuery); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("embedding after the damage was found: %v", err)
		}
		if err := got.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("verify: %v", err)
		}
		if _, err := got.MarshalBinary(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("re-encoding a damaged model: %v", err)
		}
	})
	t.Run("identity", func(t *testing.T) {
		// Another identity of the same length, with the meta checksum
		// recomputed: only the contents' hash can tell.
		bad := bytes.Clone(data)
		i := bytes.Index(bad, []byte(m.Identity()))
		copy(bad[i+len(m.Identity())-16:], "0000000000000000")
		h := len(magic) + 2 + 4*4 + 8 + 4
		metaLen := int(binary.LittleEndian.Uint64(bad[h:]))
		end := h + 8 + metaLen
		binary.LittleEndian.PutUint32(bad[end:], crc32.Checksum(bad[:end], castagnoli))
		got := load(t, bad)
		if got.Identity() == m.Identity() {
			t.Fatal("identity not forged")
		}
		if err := got.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("verify of a forged identity: %v", err)
		}
	})
}
