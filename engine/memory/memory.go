// Package memory holds the memories of memory/build and memory/recall
// (RCP §7.17) built over inline documents: each is a knowledge graph
// (package graph) of its documents, from which recall draws clues — the
// entities a query's entities lead to, as surrogate queries and seed ids.
// The memory over the live index is the engine's own graph and does not
// live here.
//
// Global-scope memories persist as graph snapshots in the store's
// directory (one file per memory, written atomically); session-scope ones
// live in memory only and expire after the TTL. Both are bounded in count
// (the least recently used goes first) and in documents per memory, and
// all of them together in bytes (MaxBytes, the text they were built from
// — a memory's graph and terms take ≈ 2.5 times that): a build that would
// go over evicts the least recently used other memories, and one that
// alone would exceed it is refused. Extraction runs outside the store's
// lock and stops when the build's context ends.
package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/graph"
	"github.com/rcpgo/rcpgo/internal/defaults"
)

// Scopes of §7.17.
const (
	ScopeGlobal  = "global"
	ScopeSession = "session"
)

// Defaults of Options.
const (
	DefaultMaxMemories = 64
	DefaultMaxSession  = 256
	DefaultMaxDocs     = 10000
	DefaultSessionTTL  = 30 * time.Minute
	DefaultMaxBytes    = 64 << 20
	// MaxDocBytes bounds one document: extraction is checked for
	// cancellation between documents, so this bounds the work done after
	// a client gives up.
	MaxDocBytes = 256 << 10
)

// Options bound a Store.
type Options struct {
	MaxMemories int           // persisted memories (default 64)
	MaxSession  int           // session memories (default 256)
	MaxDocs     int           // documents per memory (default 10 000)
	SessionTTL  time.Duration // idle lifetime of a session memory (default 30 min)
	MaxBytes    int64         // text bytes of all memories together (default 64 MiB)
}

// Doc is one inline document.
type Doc struct {
	ID, Text string
}

// ErrNotFound reports an unknown (or expired) memory id.
var ErrNotFound = errors.New("memory: no such memory")

// ErrTooLarge reports a memory that would exceed MaxDocs, or a build whose
// text alone exceeds MaxBytes.
var ErrTooLarge = errors.New("memory: too large")

type entry struct {
	g     *graph.Graph
	scope string
	docs  int
	bytes int64 // text it was built from (a loaded one: its snapshot's size)
	used  time.Time
}

// Store is the set of inline-document memories. Safe for concurrent use.
type Store struct {
	dir  string
	an   *analysis.Analyzer
	opts Options
	now  func() time.Time

	mu   sync.Mutex
	mems map[string]*entry
}

const snapExt = ".snap"

// Open loads the persisted memories of dir (created when missing).
func Open(dir string, an *analysis.Analyzer, opts Options) (*Store, error) {
	defaults.Positive(&opts.MaxMemories, DefaultMaxMemories)
	defaults.Positive(&opts.MaxSession, DefaultMaxSession)
	defaults.Positive(&opts.MaxDocs, DefaultMaxDocs)
	defaults.Positive(&opts.SessionTTL, DefaultSessionTTL)
	defaults.Positive(&opts.MaxBytes, DefaultMaxBytes)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	s := &Store{dir: dir, an: an, opts: opts, now: time.Now, mems: map[string]*entry{}}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	for _, f := range files {
		id, ok := strings.CutSuffix(f.Name(), snapExt)
		if !ok || !validID(id) {
			continue
		}
		g := graph.New(an)
		if err := g.Load(filepath.Join(dir, f.Name())); err != nil {
			return nil, fmt.Errorf("memory: %s: %w", id, err)
		}
		info, _ := f.Info()
		used, size := s.now(), int64(0)
		if info != nil {
			used, size = info.ModTime(), info.Size()
		}
		s.mems[id] = &entry{g: g, scope: ScopeGlobal, docs: g.Stats().Units, bytes: size, used: used}
	}
	return s, nil
}

// validID accepts the ids this store mints (32 hex digits).
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// Build creates a memory of docs (id == "") or adds docs to memory id
// (a document with an id already in it replaces it). It returns the id
// and the memory's size in tokens (words of its units' summaries and node
// names — what recall draws on). It stops with ctx's error when ctx ends
// before the documents are extracted.
func (s *Store) Build(ctx context.Context, id, scope string, docs []Doc) (string, int, error) {
	var size int64
	for i, d := range docs {
		if len(d.Text) > MaxDocBytes {
			return "", 0, fmt.Errorf("%w: document %d is %d bytes; a memory's documents are at most %d (split it)", ErrTooLarge, i, len(d.Text), MaxDocBytes)
		}
		size += int64(len(d.Text))
	}
	if size > s.opts.MaxBytes {
		return "", 0, fmt.Errorf("%w: %d bytes of text > the %d all memories may hold", ErrTooLarge, size, s.opts.MaxBytes)
	}
	e, err := s.prepare(id, scope, len(docs))
	if err != nil {
		return "", 0, err
	}
	exs := make([]graph.Extraction, len(docs))
	for i, d := range docs { // the CPU work, outside the lock
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
		exs[i] = graph.Extract("", d.Text, false)
		exs[i].Terms = s.an.Terms(d.Text) // recall finds the document by its words
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		id = mintID()
	} else if s.mems[id] != e {
		return "", 0, fmt.Errorf("%w: %q (evicted while it was built)", ErrNotFound, id)
	}
	for i, d := range docs {
		did := d.ID
		if did == "" {
			did = fmt.Sprintf("doc%d", e.docs+i)
		}
		e.g.Put(did, did, exs[i])
	}
	e.docs = e.g.Stats().Units
	e.bytes += size
	e.used = s.now()
	if e.scope == ScopeGlobal {
		if err := e.g.Save(filepath.Join(s.dir, id+snapExt)); err != nil {
			return "", 0, err
		}
	}
	s.mems[id] = e
	s.evictLocked(e)
	return id, e.g.Tokens(), nil
}

// prepare returns the memory a build of n documents goes into: memory id,
// or a new one of scope (not yet in the store).
func (s *Store) prepare(id, scope string, n int) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	var e *entry
	if id != "" {
		var ok bool
		if e, ok = s.mems[id]; !ok {
			return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		if scope != "" && scope != e.scope {
			return nil, fmt.Errorf("memory: %q has scope %s, not %s", id, e.scope, scope)
		}
	} else {
		if scope == "" {
			scope = ScopeGlobal
		}
		e = &entry{g: graph.New(s.an), scope: scope}
	}
	if e.docs+n > s.opts.MaxDocs {
		return nil, fmt.Errorf("%w: %d + %d documents > %d", ErrTooLarge, e.docs, n, s.opts.MaxDocs)
	}
	return e, nil
}

// Get returns memory id's graph.
func (s *Store) Get(id string) (*graph.Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	e, ok := s.mems[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e.used = s.now()
	return e.g, nil
}

func (s *Store) expireLocked() {
	cut := s.now().Add(-s.opts.SessionTTL)
	for id, e := range s.mems {
		if e.scope == ScopeSession && e.used.Before(cut) {
			delete(s.mems, id)
		}
	}
}

// evictLocked drops the least recently used memories of each scope over
// its count bound, then the least recently used of all (never keep) while
// they hold more than MaxBytes; a persisted one goes with its file.
func (s *Store) evictLocked(keep *entry) {
	for scope, limit := range map[string]int{ScopeGlobal: s.opts.MaxMemories, ScopeSession: s.opts.MaxSession} {
		for s.count(scope) > limit {
			if !s.dropOldest(func(e *entry) bool { return e.scope == scope && e != keep }) {
				break
			}
		}
	}
	for s.total() > s.opts.MaxBytes {
		if !s.dropOldest(func(e *entry) bool { return e != keep }) {
			return
		}
	}
}

func (s *Store) count(scope string) int {
	n := 0
	for _, e := range s.mems {
		if e.scope == scope {
			n++
		}
	}
	return n
}

func (s *Store) total() int64 {
	var n int64
	for _, e := range s.mems {
		n += e.bytes
	}
	return n
}

// dropOldest drops the least recently used memory that may go and reports
// whether there was one.
func (s *Store) dropOldest(may func(*entry) bool) bool {
	oldest := ""
	for id, e := range s.mems {
		if may(e) && (oldest == "" || e.used.Before(s.mems[oldest].used)) {
			oldest = id
		}
	}
	if oldest == "" {
		return false
	}
	e := s.mems[oldest]
	delete(s.mems, oldest)
	if e.scope == ScopeGlobal {
		_ = os.Remove(filepath.Join(s.dir, oldest+snapExt)) // a leftover file is loaded, and evicted, next time
	}
	return true
}

func mintID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
