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
// (the least recently used goes first) and in documents per memory.
package memory

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/graph"
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
)

// Options bound a Store.
type Options struct {
	MaxMemories int           // persisted memories (default 64)
	MaxSession  int           // session memories (default 256)
	MaxDocs     int           // documents per memory (default 10 000)
	SessionTTL  time.Duration // idle lifetime of a session memory (default 30 min)
}

// Doc is one inline document.
type Doc struct {
	ID, Text string
}

// ErrNotFound reports an unknown (or expired) memory id.
var ErrNotFound = errors.New("memory: no such memory")

// ErrTooLarge reports a memory that would exceed MaxDocs.
var ErrTooLarge = errors.New("memory: too many documents")

type entry struct {
	g     *graph.Graph
	scope string
	docs  int
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
	if opts.MaxMemories <= 0 {
		opts.MaxMemories = DefaultMaxMemories
	}
	if opts.MaxSession <= 0 {
		opts.MaxSession = DefaultMaxSession
	}
	if opts.MaxDocs <= 0 {
		opts.MaxDocs = DefaultMaxDocs
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
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
		used := s.now()
		if info != nil {
			used = info.ModTime()
		}
		s.mems[id] = &entry{g: g, scope: ScopeGlobal, docs: g.Stats().Units, used: used}
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
// names — what recall draws on).
func (s *Store) Build(id, scope string, docs []Doc) (string, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	var e *entry
	if id != "" {
		var ok bool
		if e, ok = s.mems[id]; !ok {
			return "", 0, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		if scope != "" && scope != e.scope {
			return "", 0, fmt.Errorf("memory: %q has scope %s, not %s", id, e.scope, scope)
		}
	} else {
		if scope == "" {
			scope = ScopeGlobal
		}
		id = mintID()
		e = &entry{g: graph.New(s.an), scope: scope}
	}
	if e.docs+len(docs) > s.opts.MaxDocs {
		return "", 0, fmt.Errorf("%w: %d + %d > %d", ErrTooLarge, e.docs, len(docs), s.opts.MaxDocs)
	}
	for i, d := range docs {
		did := d.ID
		if did == "" {
			did = fmt.Sprintf("doc%d", e.docs+i)
		}
		ex := graph.Extract("", d.Text, false)
		ex.Terms = s.an.Terms(d.Text) // recall finds the document by its words
		e.g.Put(did, did, ex)
	}
	e.docs = e.g.Stats().Units
	e.used = s.now()
	if e.scope == ScopeGlobal {
		if err := e.g.Save(filepath.Join(s.dir, id+snapExt)); err != nil {
			return "", 0, err
		}
	}
	s.mems[id] = e
	s.evictLocked()
	return id, e.g.Tokens(), nil
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
// its bound (a persisted one with its file).
func (s *Store) evictLocked() {
	for scope, limit := range map[string]int{ScopeGlobal: s.opts.MaxMemories, ScopeSession: s.opts.MaxSession} {
		for {
			n, oldest := 0, ""
			for id, e := range s.mems {
				if e.scope != scope {
					continue
				}
				n++
				if oldest == "" || e.used.Before(s.mems[oldest].used) {
					oldest = id
				}
			}
			if n <= limit {
				break
			}
			delete(s.mems, oldest)
			if scope == ScopeGlobal {
				if err := os.Remove(filepath.Join(s.dir, oldest+snapExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return
				}
			}
		}
	}
}

func mintID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
