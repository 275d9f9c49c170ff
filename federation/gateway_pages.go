package federation

// Paging the fused list (issue 31: the gateway advertised no pagination
// although its engines do). The engines' own cursors cannot be combined —
// each pages its own list, and a fused rank depends on all of them — so the
// gateway fuses one list at the first page, of a window of max(2·k, 20)
// hits (candidateK when the client sets it; the gateway's maxK at most),
// keeps it, and serves
// the later pages from it: no hit twice, none skipped, whatever the
// engines' indexes do meanwhile. A kept list expires pageTTL after its
// last page (at most pageLists of them); its cursor then gets -32015.

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rcpgo/rcpgo/rcp"
)

// Bounds of the kept fused lists.
const (
	pageTTL   = 10 * time.Minute
	pageLists = 1024
	// cursorPrefix names the gateway's cursor format.
	gatewayCursorPrefix = "gw1."
)

// gatewayCursor is the decoded form of a gateway cursor.
type gatewayCursor struct {
	List   string `json:"l"`
	Offset int    `json:"o"`
	Hash   string `json:"h"`
}

// firstPage fuses the window of p's list, keeps it when more than p.K
// hits follow, and returns the first page with its cursor.
func (g *Gateway) firstPage(ctx context.Context, p *rcp.RetrieveParams) (*rcp.RetrieveResult, error) {
	k := p.K
	q := *p
	window := max(2*k, 20)
	if p.CandidateK != nil {
		window = *p.CandidateK // the client's depth of the list
	}
	q.K = min(max(k, window), g.opts.MaxK)
	res, err := g.fed.Retrieve(ctx, &q)
	if err != nil || len(res.Hits) <= k {
		return res, err
	}
	key := g.pages.put(res.Hits)
	res.NextCursor = encodeGatewayCursor(gatewayCursor{List: key, Offset: k, Hash: pageHash(p)})
	res.Hits = res.Hits[:k]
	return res, nil
}

// nextPage serves a cursor's page from its kept list.
func (g *Gateway) nextPage(p *rcp.RetrieveParams, notes []string) (*rcp.RetrieveResult, error) {
	c, ok := decodeGatewayCursor(p.Cursor)
	if !ok {
		return nil, rcp.InvalidParams("cursor", "malformed cursor")
	}
	if c.Hash != pageHash(p) {
		return nil, rcp.InvalidParams("cursor", "the cursor belongs to a different query or options")
	}
	hits, ok := g.pages.get(c.List)
	if !ok {
		return nil, &rcp.Error{Code: rcp.CodeNotFound, Message: "cursor expired: its fused list is no longer kept",
			Data: &rcp.ErrorData{Field: "cursor", Detail: fmt.Sprintf("restart pagination (pages are kept %v after the last one)", pageTTL)}}
	}
	start := min(c.Offset, len(hits))
	end := min(start+p.K, len(hits))
	n := len(hits)
	res := &rcp.RetrieveResult{Hits: append([]rcp.Hit(nil), hits[start:end]...),
		Usage: &rcp.Usage{Candidates: &n, Notes: append(notes, "a page of the fused list kept at the first page")}}
	if end < len(hits) {
		res.NextCursor = encodeGatewayCursor(gatewayCursor{List: c.List, Offset: end, Hash: c.Hash})
	}
	stripUnasked(p, res)
	return res, nil
}

// pageHash identifies the list a request defines: everything but k,
// cursor and _meta.
func pageHash(p *rcp.RetrieveParams) string {
	q := *p
	q.K, q.Cursor, q.Meta = 0, "", nil
	b, _ := json.Marshal(&q)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

func encodeGatewayCursor(c gatewayCursor) string {
	b, _ := json.Marshal(c)
	return gatewayCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeGatewayCursor(s string) (gatewayCursor, bool) {
	var c gatewayCursor
	rest, ok := strings.CutPrefix(s, gatewayCursorPrefix)
	if !ok {
		return c, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Offset < 0 || c.List == "" {
		return c, false
	}
	return c, true
}

// keptPages holds fused lists for their later pages.
type keptPages struct {
	mu    sync.Mutex
	items map[string]*list.Element
	lru   list.List // of *keptPage, most recent first
}

type keptPage struct {
	key  string
	hits []rcp.Hit
	used time.Time
}

func (k *keptPages) put(hits []rcp.Hit) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	key := base64.RawURLEncoding.EncodeToString(b[:])
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.items == nil {
		k.items = map[string]*list.Element{}
	}
	k.items[key] = k.lru.PushFront(&keptPage{key: key, hits: hits, used: time.Now()})
	k.evict()
	return key
}

func (k *keptPages) get(key string) ([]rcp.Hit, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.evict()
	el, ok := k.items[key]
	if !ok {
		return nil, false
	}
	el.Value.(*keptPage).used = time.Now()
	k.lru.MoveToFront(el)
	return el.Value.(*keptPage).hits, true
}

// evict drops the lists beyond pageLists and those unused past pageTTL.
func (k *keptPages) evict() {
	for el := k.lru.Back(); el != nil; el = k.lru.Back() {
		p := el.Value.(*keptPage)
		if k.lru.Len() <= pageLists && time.Since(p.used) <= pageTTL {
			return
		}
		k.lru.Remove(el)
		delete(k.items, p.key)
	}
}
