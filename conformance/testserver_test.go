package conformance

// An in-process RCP/1 server used only by the tests. Its baseline behaviour
// is conformant; each "bad" knob (named after the check it should trip)
// breaks exactly one rule so the suite can be shown to catch it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

type tsConfig struct {
	caps  map[string]any
	token string
	bad   map[string]bool
}

func baselineCaps() map[string]any {
	return map[string]any{
		"embed":       map[string]any{"dimension": 8, "identity": "ts-hash-8", "encodings": []any{"json", "f32-base64"}},
		"sparseEmbed": map[string]any{"identity": "ts-sparse"},
		"multiVector": map[string]any{"dimension": 4, "identity": "ts-multi", "similarity": "dot"},
		"rerank":      map[string]any{"methods": []any{"cross-encoder"}},
		"retrieve": map[string]any{"maxK": 20, "modes": []any{"dense", "sparse", "hybrid"}, "fusion": []any{"rrf"}, "mmr": true,
			"rerankBuiltin": true, "deterministic": true, "snapshots": true, "tokenBudget": true, "confidence": true, "scoreFloor": 0.0,
			"units": []any{"chunk", "document", "path", "community", "tree-node"}, "levels": 2},
		"transform":  map[string]any{"methods": []any{"rewrite"}},
		"graph":      map[string]any{"ops": []any{"local", "global"}},
		"index":      map[string]any{"writable": true},
		"filter":     map[string]any{"fields": map[string]any{"year": "int", "lang": "keyword"}, "operators": []any{"eq", "gt", "gte", "lt", "in", "exists"}},
		"streaming":  map[string]any{},
		"pagination": map[string]any{},
		"citations":  map[string]any{},
		"log":        map[string]any{"levels": []any{"debug", "info", "error"}},
		"feedback":   map[string]any{},
		"session":    map[string]any{"dedup": true},
		"memory":     map[string]any{"scopes": []any{"global"}},
	}
}

type tdoc struct {
	id   string
	text string
	meta map[string]any
}

type tserver struct {
	cfg             tsConfig
	mu              sync.Mutex
	docs            []tdoc
	version         int
	minted          int
	idem            map[string]any
	httpInitialized bool
	seen            map[string]map[string]bool // sessionId → hit ids returned
	perturbed       int                        // feedback.concurrent-retrieve: retrieves left to disturb
	quarantined     map[string]bool            // ids hidden: after reports from two sessions, or one with the feedback.advisory mutation
	reporters       map[string]map[string]bool // hit id → sessions that reported it poisoned
	snaps           map[int][]tdoc             // the corpus of each past version (cursors page their snapshot)
	rebuilding      bool                       // derived.no-empty-while-building: graph answers are empty after a write
}

func newTServer(cfg tsConfig) *tserver {
	if cfg.caps == nil {
		cfg.caps = baselineCaps()
	}
	if cfg.bad == nil {
		cfg.bad = map[string]bool{}
	}
	srv := &tserver{cfg: cfg, idem: map[string]any{}, version: 1, seen: map[string]map[string]bool{}, quarantined: map[string]bool{},
		reporters: map[string]map[string]bool{}, snaps: map[int][]tdoc{}}
	texts := []string{
		"The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
		"Paris is the capital of France on the river Seine.",
		"The tower was built for the 1889 world fair in Paris.",
		"France borders Spain, Italy and Germany.",
		"A lattice tower carries radio antennas.",
		"Photosynthesis converts light energy in plants.",
		"The Great Wall of China stretches across the north.",
		"Tokyo is the capital of Japan.",
	}
	for i, t := range texts {
		lang := "en"
		if i%3 == 2 {
			lang = "fr"
		}
		srv.docs = append(srv.docs, tdoc{id: fmt.Sprintf("d%d", i+1), text: t, meta: map[string]any{"year": 2000 + i, "lang": lang}})
	}
	return srv
}

func (srv *tserver) bad(names ...string) bool {
	for _, n := range names {
		if srv.cfg.bad[n] {
			return true
		}
	}
	return false
}

// tsession is one connection's state.
type tsession struct {
	srv         *tserver
	http        bool
	emit        func(v any) // writes one notification frame
	initialized bool
	failedInit  bool
	shutdown    bool
	logOptIn    bool
	logLevel    string
	answered    map[string]bool
	lastID      json.RawMessage
	requests    int
}

func (srv *tserver) newSession(emit func(any), httpMode bool) *tsession {
	return &tsession{srv: srv, emit: emit, http: httpMode, initialized: httpMode, answered: map[string]bool{}}
}

type rpcErr struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *rpcErr) Error() string { return e.Message }

func eParams(field, msg string) *rpcErr {
	return &rpcErr{Code: -32602, Message: msg, Data: map[string]any{"field": field}}
}
func eOption(opt, msg string) *rpcErr {
	return &rpcErr{Code: -32005, Message: msg, Data: map[string]any{"option": opt}}
}

func resp(id json.RawMessage, result any, err *rpcErr) map[string]any {
	m := map[string]any{"jsonrpc": "2.0"}
	if id == nil {
		m["id"] = nil
	} else {
		m["id"] = id
	}
	if err != nil {
		m["error"] = err
	} else {
		m["result"] = result
	}
	return m
}

// handleRaw handles one JSON text (object or batch); it returns the reply or nil.
func (ss *tsession) handleRaw(raw []byte) any {
	srv := ss.srv
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		if srv.bad("jsonrpc.blank-lines") {
			return resp(nil, nil, &rpcErr{Code: -32700, Message: "empty"})
		}
		return nil
	}
	if !utf8.Valid(t) || !json.Valid(t) {
		if srv.bad("jsonrpc.parse-error") {
			return nil
		}
		return resp(nil, nil, &rpcErr{Code: -32700, Message: "parse error"})
	}
	if t[0] == '[' {
		var members []json.RawMessage
		_ = json.Unmarshal(t, &members)
		if len(members) == 0 {
			if srv.bad("batch.empty") {
				return []any{}
			}
			return resp(nil, nil, &rpcErr{Code: -32600, Message: "empty batch"})
		}
		var out []any
		for _, m := range members {
			r := ss.handleOne(m, true)
			if r == nil {
				if srv.bad("batch.notification-member") {
					out = append(out, resp(nil, map[string]any{}, nil))
				}
				continue
			}
			if rm, ok := r.(map[string]any); ok && srv.bad("batch.gating") {
				if e, ok := rm["error"].(*rpcErr); ok && e.Code == -32004 {
					return rm
				}
			}
			out = append(out, r)
		}
		if srv.bad("batch.basic") && len(out) > 0 {
			return out[0]
		}
		if len(out) == 0 {
			if srv.bad("batch.only-notifications") {
				return []any{}
			}
			return nil
		}
		return out
	}
	return ss.handleOne(t, false)
}

func (ss *tsession) handleOne(raw json.RawMessage, inBatch bool) any {
	srv := ss.srv
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &msg) != nil || msg == nil {
		if inBatch && srv.bad("batch.invalid-member") {
			return nil
		}
		return resp(nil, nil, &rpcErr{Code: -32600, Message: "not a request object"})
	}
	id, hasID := msg["id"]
	if hasID {
		if string(id) == "null" {
			if srv.bad("jsonrpc.null-id") {
				return resp(nil, map[string]any{}, nil)
			}
			return resp(nil, nil, &rpcErr{Code: -32600, Message: "null id"})
		}
		if c := bytes.TrimSpace(id)[0]; c == '{' || c == '[' || c == 't' || c == 'f' {
			return resp(nil, nil, &rpcErr{Code: -32600, Message: "bad id"})
		}
	}
	invalid := func(m string) any {
		if inBatch && srv.bad("batch.invalid-member") {
			return nil
		}
		if hasID {
			return resp(id, nil, &rpcErr{Code: -32600, Message: m})
		}
		return resp(nil, nil, &rpcErr{Code: -32600, Message: m})
	}
	var ver string
	_ = json.Unmarshal(msg["jsonrpc"], &ver)
	if _, ok := msg["jsonrpc"]; !ok && !srv.bad("jsonrpc.missing-version") {
		return invalid("missing jsonrpc")
	} else if ok && ver != "2.0" && !srv.bad("jsonrpc.bad-version") {
		return invalid("jsonrpc must be 2.0")
	}
	var method string
	if err := json.Unmarshal(msg["method"], &method); err != nil {
		if srv.bad("jsonrpc.method-not-string") && hasID {
			return resp(id, nil, &rpcErr{Code: -32004, Message: "unknown method"})
		}
		return invalid("method must be a string")
	}
	params := map[string]json.RawMessage{}
	if p, ok := msg["params"]; ok && string(p) != "null" {
		if json.Unmarshal(p, &params) != nil {
			if !srv.bad("jsonrpc.params-array") {
				if hasID {
					return resp(id, nil, &rpcErr{Code: -32602, Message: "params must be an object"})
				}
				return nil
			}
			params = map[string]json.RawMessage{}
		}
	}
	if !hasID {
		return ss.notification(method, params)
	}
	if ss.shutdown && !srv.bad("session.no-work-after-shutdown") {
		return nil
	}
	// id mutations
	if s, isStr := strOf(id); isStr {
		if s == "" && srv.bad("jsonrpc.id-string-empty") {
			return nil
		}
		if s == "42" && srv.bad("jsonrpc.id-numeric-string") {
			id = json.RawMessage("42")
		}
	} else if n, err := strconv.ParseFloat(string(id), 64); err == nil {
		switch {
		case n == 0 && srv.bad("jsonrpc.id-zero"):
			return nil
		case n < 0 && srv.bad("jsonrpc.id-negative"):
			id = json.RawMessage(strconv.Itoa(int(-n)))
		case n > 1<<31 && srv.bad("jsonrpc.id-large-int"):
			id = json.RawMessage(strconv.FormatFloat(n+1, 'f', -1, 64))
		case n == 31337 && srv.bad("jsonrpc.id-int"):
			id = json.RawMessage(`"31337"`)
		}
	}
	if srv.bad("deadline.tiny") {
		var meta map[string]any
		_ = json.Unmarshal(params["_meta"], &meta)
		if _, ok := meta["deadlineMs"]; ok {
			return nil
		}
	}
	if method == "notifications/cancel" && srv.bad("cancel.as-request") {
		return nil
	}
	ss.requests++
	result, err := ss.dispatch(method, params, id)
	outID := id
	if s, isStr := strOf(id); isStr {
		switch {
		case srv.bad("jsonrpc.id-string") && s == "str-id-1":
			outID = json.RawMessage(`"x-str-id-1"`)
		case srv.bad("jsonrpc.id-string-unicode") && !isASCII(s):
			outID = mustJSON(strings.Map(func(r rune) rune {
				if r > 127 {
					return '?'
				}
				return r
			}, s))
		}
	}
	if err != nil && srv.bad("jsonrpc.id-on-error") {
		outID = nil
	}
	ss.answered[idKey(id)] = true
	ss.lastID = id
	r := resp(outID, result, err)
	if method == "info" && err == nil {
		switch {
		case srv.bad("global.jsonrpc-version"):
			r["jsonrpc"] = "2"
		case srv.bad("global.schema"):
			r["error"] = nil
		}
	}
	return r
}

func strOf(id json.RawMessage) (string, bool) {
	var s string
	if len(id) > 0 && id[0] == '"' && json.Unmarshal(id, &s) == nil {
		return s, true
	}
	return "", false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > 127 {
			return false
		}
	}
	return true
}

func (ss *tsession) notification(method string, params map[string]json.RawMessage) any {
	srv := ss.srv
	switch {
	case method == "retrieve" && srv.bad("preinit.notification-gated"):
		return resp(nil, nil, &rpcErr{Code: -32001, Message: "not initialized"})
	case method == "info" && srv.bad("preinit.notification-open"):
		return resp(nil, map[string]any{}, nil)
	case method == "does/not/exist" && srv.bad("preinit.notification-unknown"):
		return resp(nil, nil, &rpcErr{Code: -32004, Message: "unknown"})
	case strings.HasPrefix(method, "notifications/x-") && srv.bad("preinit.notification-reserved"):
		return resp(nil, nil, &rpcErr{Code: -32004, Message: "unknown notification"})
	case method == "notifications/cancel":
		var target json.RawMessage = params["id"]
		known := ss.answered[idKey(target)]
		if !known && srv.bad("preinit.cancel-unknown") {
			return resp(nil, nil, &rpcErr{Code: -32602, Message: "unknown id"})
		}
		if known && srv.bad("cancel.inflight") && idKey(target) == idKey(ss.lastID) {
			return resp(target, nil, &rpcErr{Code: -32006, Message: "cancelled"})
		}
		if known && srv.bad("cancel.answered-noop") {
			return resp(nil, nil, &rpcErr{Code: -32600, Message: "already answered"})
		}
	}
	return nil
}

var defined = map[string]string{"initialize": "", "info": "", "ping": "", "shutdown": "", "embed": "embed", "embed/sparse": "sparseEmbed",
	"embed/multi": "multiVector", "rerank": "rerank", "retrieve": "retrieve", "query/transform": "transform", "graph": "graph",
	"index/add": "index", "index/delete": "index", "catalog/list": "catalog", "feedback": "feedback", "memory/build": "memory", "memory/recall": "memory"}

func (ss *tsession) caps() map[string]any { return ss.srv.cfg.caps }

func (ss *tsession) initResult(post bool) map[string]any {
	srv := ss.srv
	caps := maps.Clone(ss.caps())
	if post && srv.bad("init.info-stable", "global.capabilities-stable") {
		delete(caps, "rerank")
	}
	if post && srv.bad("session.capabilities-stable") && ss.requests > 3 {
		delete(caps, "graph")
	}
	if srv.bad("retrieve.l1-profile") {
		delete(caps, "citations")
	}
	if srv.bad("init.capability-objects") {
		caps["citations"] = true
	}
	if srv.bad("init.schema") {
		caps["embed"] = map[string]any{"dimension": "eight", "identity": "x"}
	}
	if srv.bad("init.retrieval-capability") {
		caps = map[string]any{"streaming": map[string]any{}}
	}
	name := "conformance-test-server"
	if srv.bad("init.identity") {
		name = ""
	}
	r := map[string]any{"protocolVersion": 1, "server": map[string]any{"name": name, "version": "0.1"}, "capabilities": caps}
	if !srv.bad("init.declares-level") {
		r["_meta"] = map[string]any{"conformance": "L2"}
	}
	if srv.bad("init.ok") {
		r["protocolVersion"] = 2
	}
	return r
}

func (ss *tsession) dispatch(method string, p map[string]json.RawMessage, id json.RawMessage) (any, *rpcErr) {
	srv := ss.srv
	if method == "initialize" && ss.initialized && !ss.http && !srv.bad("init.repeat-rejected") {
		return nil, &rpcErr{Code: -32600, Message: "already initialized"}
	}
	switch method {
	case "initialize":
		if ss.failedInit && srv.bad("session.init-after-failed") {
			return nil, &rpcErr{Code: -32600, Message: "initialize already attempted"}
		}
		var ip struct {
			ProtocolVersion *int           `json:"protocolVersion"`
			Capabilities    map[string]any `json:"capabilities"`
			Meta            map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(mustJSON(p), &ip); err != nil || ip.ProtocolVersion == nil {
			return nil, eParams("protocolVersion", "protocolVersion required")
		}
		if ip.Capabilities == nil && srv.bad("session.init-no-client-caps") {
			return nil, eParams("capabilities", "capabilities required")
		}
		for k := range ip.Capabilities {
			if k != "log" && k != "streaming" && srv.bad("session.init-extras") {
				return nil, eParams("capabilities."+k, "unknown capability")
			}
		}
		if *ip.ProtocolVersion < 1 && !srv.bad("preinit.version-mismatch") {
			ss.failedInit = true
			if srv.bad("preinit.failed-handshake-locked") {
				ss.initialized = true
			}
			return nil, &rpcErr{Code: -32002, Message: "no common version"}
		}
		if *ip.ProtocolVersion > 1 && srv.bad("session.version-negotiation") {
			return nil, &rpcErr{Code: -32002, Message: "unsupported version"}
		}
		_, ss.logOptIn = ip.Capabilities["log"]
		ss.logLevel, _ = ip.Meta["logLevel"].(string)
		ss.initialized = true
		if srv.bad("global.no-unsolicited-log") {
			ss.emit(map[string]any{"jsonrpc": "2.0", "method": "notifications/log", "params": map[string]any{"level": "info", "message": "hello"}})
		}
		if srv.bad("global.stdout-protocol-only") {
			ss.emit(rawLine("debug: initialized"))
		}
		return ss.initResult(false), nil
	case "info":
		if !ss.initialized && srv.bad("preinit.info") {
			return nil, &rpcErr{Code: -32001, Message: "not initialized"}
		}
		if srv.bad("jsonrpc.unknown-fields") {
			for k := range p {
				if k != "_meta" {
					return nil, eParams(k, "unknown field")
				}
			}
		}
		if srv.bad("global.no-unsolicited-progress") {
			ss.emit(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": "server-made", "progress": 0.5}})
		}
		return ss.initResult(ss.initialized), nil
	case "ping":
		if !ss.initialized && srv.bad("preinit.ping") {
			return nil, &rpcErr{Code: -32001, Message: "not initialized"}
		}
		if srv.bad("jsonrpc.meta-tolerated") {
			var meta map[string]any
			_ = json.Unmarshal(p["_meta"], &meta)
			if len(meta) > 0 {
				return nil, eParams("_meta", "unknown _meta")
			}
		}
		if srv.bad("global.answered-once") {
			ss.emit(resp(id, map[string]any{}, nil))
		}
		r := map[string]any{}
		if _, ok := p["nonce"]; !ok && srv.bad("global.result-schema") {
			r["nonce"] = []int{1}
		}
		if n, ok := p["nonce"]; ok {
			switch {
			case n[0] == '"' && srv.bad("preinit.ping-nonce-string"):
			case n[0] != '"' && srv.bad("preinit.ping-nonce-number"):
				r["nonce"] = string(n)
			default:
				r["nonce"] = n
			}
		}
		return r, nil
	case "shutdown":
		if !ss.initialized && srv.bad("session.shutdown-preinit") {
			return nil, &rpcErr{Code: -32001, Message: "not initialized"}
		}
		ss.shutdown = true
		return map[string]any{}, nil
	}
	if !ss.initialized && !srv.bad("preinit.gated-rejected") {
		return nil, &rpcErr{Code: -32001, Message: "not initialized"}
	}
	capKey, ok := defined[method]
	if !ok {
		if strings.HasPrefix(method, "x-") && strings.Contains(method, "/") {
			if srv.bad("gating.vendor-method") {
				return map[string]any{}, nil
			}
			return nil, &rpcErr{Code: -32003, Message: "vendor capability not advertised"}
		}
		if srv.bad("jsonrpc.unknown-method") || (srv.bad("jsonrpc.unknown-method-plain") && !strings.Contains(method, "/")) {
			return nil, &rpcErr{Code: -32601, Message: "method not found"}
		}
		if srv.bad("global.error-codes") {
			return nil, &rpcErr{Code: -32050, Message: "custom"}
		}
		return nil, &rpcErr{Code: -32004, Message: "unknown method"}
	}
	if _, adv := ss.caps()[capKey]; !adv {
		switch {
		case srv.bad("gating.capability-missing") && len(p) == 0:
			return nil, eParams("", "params missing")
		case srv.bad("gating.capability-missing-valid-params") && len(p) > 0:
		default:
			return nil, &rpcErr{Code: -32003, Message: capKey + " not advertised"}
		}
	}
	if method == "index/add" && !ss.has("index.writable") && !srv.bad("index.read-only") {
		return nil, &rpcErr{Code: -32003, Message: "index is read-only"}
	}
	ss.progress(p)
	ss.log("info", method+" called")
	switch method {
	case "retrieve":
		return ss.retrieve(p)
	case "embed":
		return ss.embed(p)
	case "embed/sparse":
		return ss.sparse(p)
	case "embed/multi":
		return ss.multi(p)
	case "rerank":
		return ss.rerank(p)
	case "query/transform":
		return ss.transform(p)
	case "graph":
		return ss.graph(p)
	case "index/add":
		return ss.indexAdd(p)
	case "index/delete":
		return ss.indexDelete(p)
	case "catalog/list":
		if srv.bad("catalog.list") {
			return map[string]any{"engines": map[string]any{}}, nil
		}
		return map[string]any{"engines": []any{}}, nil
	case "feedback":
		var fp struct {
			Signals []any `json:"signals"`
		}
		if json.Unmarshal(mustJSON(p), &fp) != nil || fp.Signals == nil {
			return nil, eParams("signals", "signals required")
		}
		n := len(fp.Signals)
		if srv.bad("feedback.accepted") {
			n++
		}
		ss.feedbackEffects(p)
		return map[string]any{"accepted": n}, nil
	case "memory/build":
		if srv.bad("memory.build-recall") {
			return map[string]any{"memoryId": 7}, nil
		}
		return map[string]any{"memoryId": "mem-1"}, nil
	case "memory/recall":
		return map[string]any{"clues": []any{map[string]any{"query": "clue"}}}, nil
	}
	return nil, &rpcErr{Code: -32603, Message: "unreachable"}
}

type rawLine string

func (ss *tsession) has(path string) bool {
	var cur any = ss.caps()
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		cur, ok = m[part]
		if !ok {
			return false
		}
	}
	if b, ok := cur.(bool); ok {
		return b
	}
	return cur != nil
}

func (ss *tsession) capList(path string) []string {
	var cur any = ss.caps()
	for _, part := range strings.Split(path, ".") {
		m, _ := cur.(map[string]any)
		cur = m[part]
	}
	list, _ := cur.([]any)
	var out []string
	for _, v := range list {
		out = append(out, v.(string))
	}
	return out
}

func (ss *tsession) progress(p map[string]json.RawMessage) {
	srv := ss.srv
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(p["_meta"], &meta)
	tok, ok := meta["progressToken"]
	if !ok {
		if srv.bad("progress.none-without-token") {
			ss.emit(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": "auto", "progress": 0.1}})
		}
		return
	}
	if !ss.has("streaming") {
		return
	}
	out := tok
	if _, isStr := strOf(tok); isStr && srv.bad("progress.token-string") {
		out = json.RawMessage(`"tok"`)
	} else if !isStr && srv.bad("progress.token-int") {
		out = mustJSON(string(tok))
	}
	for _, pr := range []float64{0.3, 0.8} {
		ss.emit(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": out, "progress": pr, "stage": "recall"}})
	}
}

var logRank = map[string]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4}

func (ss *tsession) log(level, msg string) {
	if !ss.logOptIn {
		return
	}
	if ss.logLevel != "" && logRank[level] < logRank[ss.logLevel] && !ss.srv.bad("log.level-honoured") {
		return
	}
	if ss.srv.bad("log.opt-in") {
		level = "verbose"
	}
	ss.emit(map[string]any{"jsonrpc": "2.0", "method": "notifications/log", "params": map[string]any{"level": level, "message": msg}})
}

// ---------------------------------------------------------------- retrieve

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127) })
}

func intParam(raw json.RawMessage, field string, min int) (int, *rpcErr) {
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, eParams(field, field+" must be an integer")
	}
	if n != math.Trunc(n) || n < float64(min) {
		return 0, eParams(field, fmt.Sprintf("%s must be an integer ≥ %d", field, min))
	}
	return int(n), nil
}

func present(p map[string]json.RawMessage, k string) bool {
	v, ok := p[k]
	return ok && string(v) != "null"
}

func (ss *tsession) queryText(p map[string]json.RawMessage) (string, *rpcErr) {
	srv := ss.srv
	if !present(p, "query") {
		if srv.bad("retrieve.missing-query") {
			return "", nil
		}
		return "", eParams("query", "query required")
	}
	var q string
	if json.Unmarshal(p["query"], &q) == nil {
		if !isASCII(q) && srv.bad("retrieve.unicode") {
			return "", eParams("query", "ASCII only")
		}
		return q, nil
	}
	var block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(p["query"], &block) == nil && block.Type != "" {
		if block.Type == "text" {
			return block.Text, nil
		}
		if srv.bad("gating.modality-unsupported") {
			return "", eParams("query", "unsupported block")
		}
		return "", eOption("modality", "only text is advertised")
	}
	if srv.bad("retrieve.query-wrong-type") {
		return string(p["query"]), nil
	}
	return "", eParams("query", "query must be a string or content block")
}

type scored struct {
	doc   tdoc
	score float64
}

func (srv *tserver) rank(q string) []scored { return rankDocs(q, srv.docs) }

// rankDocs ranks docs by the query's token overlap, earlier documents first
// among equals.
func rankDocs(q string, docs []tdoc) []scored {
	qt := tokens(q)
	var out []scored
	for i, d := range docs {
		dt := tokens(d.text)
		overlap := 0
		for _, t := range qt {
			if slices.Contains(dt, t) {
				overlap++
			}
		}
		if overlap == 0 {
			continue
		}
		out = append(out, scored{d, float64(overlap) + float64(len(docs)-i)/100})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	return out
}

func (ss *tsession) retrieve(p map[string]json.RawMessage) (any, *rpcErr) {
	srv := ss.srv
	strict := true
	if present(p, "strict") {
		_ = json.Unmarshal(p["strict"], &strict)
	}
	if srv.bad("retrieve.unknown-fields") {
		for k := range p {
			if strings.HasPrefix(k, "x-") || k == "futureOption" {
				return nil, eParams(k, "unknown field")
			}
		}
	}
	q, err := ss.queryText(p)
	if err != nil {
		return nil, err
	}
	maxK := 20
	k := 10
	if !present(p, "k") {
		if !srv.bad("retrieve.missing-k") {
			return nil, eParams("k", "k required")
		}
	} else {
		var kerr *rpcErr
		var raw = p["k"]
		switch {
		case raw[0] == '"' && srv.bad("retrieve.k-string"):
			var s string
			_ = json.Unmarshal(raw, &s)
			k, _ = strconv.Atoi(s)
		case bytes.Contains(raw, []byte(".")) && srv.bad("retrieve.k-fractional"):
			f, _ := strconv.ParseFloat(string(raw), 64)
			k = int(f)
		case bytes.HasPrefix(raw, []byte("-")) && srv.bad("retrieve.k-negative"):
			k = 10
		case string(raw) == "0" && srv.bad("retrieve.k-zero"):
			k = 10
		default:
			k, kerr = intParam(raw, "k", 1)
		}
		if kerr != nil {
			return nil, kerr
		}
	}
	if k > maxK {
		if srv.bad("retrieve.clamp-k") {
			return nil, eParams("k", "k exceeds maxK")
		}
		k = maxK
	}
	candK := max(k, 10)
	if present(p, "candidateK") {
		c, err := intParam(p["candidateK"], "candidateK", 1)
		if err != nil {
			return nil, err
		}
		if c > maxK && srv.bad("retrieve.clamp-candidatek") {
			return nil, eParams("candidateK", "candidateK exceeds maxK")
		}
		if c < k && !srv.bad("retrieve.funnel-candidatek") {
			return nil, eParams("candidateK", "candidateK < k")
		}
		candK = max(c, k)
	}
	candK = min(candK, maxK)
	var notes []string
	mode := ""
	if present(p, "mode") {
		_ = json.Unmarshal(p["mode"], &mode)
		if !slices.Contains(ss.capList("retrieve.modes"), mode) && !srv.bad("gating.mode-unsupported") {
			if strict {
				e := eOption("mode", "mode not advertised")
				if srv.bad("gating.option-data") {
					e.Data = nil
				}
				return nil, e
			}
			if !srv.bad("gating.strict-false") {
				notes = append(notes, "mode "+mode+" unsupported; used dense")
			}
		}
		if (mode == "dense" && srv.bad("retrieve.modes")) || (mode == "hybrid" && srv.bad("retrieve.hybrid")) {
			return nil, &rpcErr{Code: -32010, Message: "mode offline"}
		}
	} else if srv.bad("retrieve.null-as-absent") && p["mode"] != nil {
		return nil, eOption("mode", "mode null")
	}
	if present(p, "fusion") {
		var f struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(p["fusion"], &f)
		if srv.bad("retrieve.fusion") || (!slices.Contains(ss.capList("retrieve.fusion"), f.Method) && !srv.bad("gating.fusion-unsupported")) {
			return nil, eOption("fusion", "fusion not advertised")
		}
	}
	if present(p, "rerank") && string(p["rerank"]) != "false" {
		var rr struct {
			Method string `json:"method"`
			TopN   *int   `json:"topN"`
		}
		if json.Unmarshal(p["rerank"], &rr) != nil {
			return nil, eParams("rerank", "bad rerank")
		}
		if rr.Method != "" && !slices.Contains(ss.capList("rerank.methods"), rr.Method) {
			return nil, eOption("rerank.method", "rerank method not advertised")
		}
		if rr.TopN != nil && !srv.bad("retrieve.funnel-topn") {
			if *rr.TopN < k {
				return nil, eParams("rerank.topN", "rerank.topN < k")
			}
			if present(p, "candidateK") && candK < *rr.TopN {
				return nil, eParams("candidateK", "candidateK < rerank.topN")
			}
		}
	}
	if present(p, "mmr") && srv.bad("retrieve.mmr") {
		return nil, eOption("mmr", "no mmr")
	}
	if present(p, "seed") && srv.bad("retrieve.seed-tolerated") {
		return nil, eOption("seed", "no seed")
	}
	unit, level, uerr := ss.unitParams(p)
	if uerr != nil {
		return nil, uerr
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	version := fmt.Sprintf("v%d", srv.version)
	if present(p, "indexVersion") {
		var v string
		_ = json.Unmarshal(p["indexVersion"], &v)
		if v != version && !srv.bad("retrieve.snapshot-unknown", "retrieve.snapshot-pin-after-write") {
			return nil, &rpcErr{Code: -32010, Message: "snapshot gone"}
		}
		if srv.bad("retrieve.snapshot-pin-after-write") {
			version = v // claims the pinned snapshot but serves the live index
		}
		if srv.bad("retrieve.snapshot-pin") {
			version += "-other"
		}
	}
	cur, cerr := srv.parseCursor(p, mode)
	if cerr != nil {
		return nil, cerr
	}
	ranked := srv.rank(q)
	if cur.version != 0 && cur.version != srv.version && !srv.bad("derived.pages-under-writes") {
		ranked = rankDocs(q, srv.snaps[cur.version]) // the cursor's snapshot
		version = fmt.Sprintf("v%d", cur.version)
	}
	if srv.bad("derived.read-your-writes") && mode == "dense" {
		ranked = slices.DeleteFunc(ranked, func(r scored) bool { return !strings.HasPrefix(r.doc.id, "d") || len(r.doc.id) > 3 }) // writes never embedded
	}
	if srv.rebuilding && slices.Contains([]string{"path", "community", "tree-node"}, unit) {
		ranked = nil // the graph rebuilding after a write: an empty success
	}
	if present(p, "filter") {
		f, err := ss.compileFilter(p["filter"])
		if err != nil {
			return nil, err
		}
		var kept []scored
		for _, r := range ranked {
			if f(r.doc.meta) {
				kept = append(kept, r)
			}
		}
		ranked = kept
	} else if srv.bad("retrieve.null-as-absent") && p["filter"] != nil {
		return nil, eOption("filter", "filter null")
	}
	if present(p, "minScore") && !srv.bad("retrieve.min-score") {
		var ms float64
		if json.Unmarshal(p["minScore"], &ms) != nil {
			return nil, eParams("minScore", "minScore must be a number")
		}
		var kept []scored
		for _, r := range ranked {
			if r.score >= ms {
				kept = append(kept, r)
			}
		}
		ranked = kept
	}
	if e := ss.rewriteGate(p, strict); e != nil {
		return nil, e
	}
	ranked = ss.agenticFilter(p, ranked)
	if len(ranked) > candK {
		ranked = ranked[:candK]
	}
	candidates := len(ranked)
	offset := cur.offset
	if offset > len(ranked) {
		offset = len(ranked)
	}
	page := ranked[offset:]
	next := ""
	if len(page) > k {
		page = page[:k]
		nextOff := offset + k
		if srv.bad("retrieve.pagination") {
			nextOff--
		}
		if srv.bad("retrieve.pagination-gaps") {
			nextOff++
		}
		v := srv.version
		if cur.version != 0 {
			v = cur.version
		}
		next = base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("off:%d:v%d", nextOff, v)))
	}
	if present(p, "tokenBudget") && !srv.bad("retrieve.token-budget") {
		budget, err := intParam(p["tokenBudget"], "tokenBudget", 1)
		if err != nil {
			return nil, err
		}
		used, n := 0, 0
		for _, r := range page {
			t := len(tokens(r.doc.text))
			if used+t > budget {
				break
			}
			used += t
			n++
		}
		page = page[:n]
	}
	tokensUsed := 0
	hits := []any{}
	for _, r := range page {
		score := r.score
		if srv.bad("retrieve.score-floor") {
			score -= 10
		}
		h := map[string]any{"id": r.doc.id, "score": score, "text": r.doc.text, "meta": r.doc.meta}
		if !srv.bad("retrieve.citations") {
			h["citation"] = map[string]any{"source": r.doc.id}
		}
		if !srv.bad("retrieve.confidence") {
			h["confidence"] = math.Min(1, r.score/10)
		}
		if srv.bad("retrieve.basic") {
			delete(h, "score")
		}
		ss.annotateUnit(h, unit, level)
		tokensUsed += len(tokens(r.doc.text))
		hits = append(hits, h)
	}
	switch {
	case srv.bad("retrieve.k-ceiling") && len(ranked) > len(hits):
		hits = append(hits, hits[0])
	case srv.bad("retrieve.unique-ids") && len(hits) > 0:
		hits = append(hits[:len(hits)-1:len(hits)-1], hits[0])
	case srv.bad("retrieve.ordered"):
		slices.Reverse(hits)
	case srv.bad("retrieve.deterministic") && present(p, "seed"):
		if ss.requests%2 == 0 {
			slices.Reverse(hits)
		}
	}
	ss.recordSession(p, hits)
	if srv.perturbed > 0 {
		srv.perturbed--
		slices.Reverse(hits)
	}
	res := map[string]any{"hits": hits}
	if srv.bad("rewrite.methods") && present(p, "rewrite") {
		res["rewrittenQuery"] = 7
	}
	usage := map[string]any{"candidates": candidates, "tokens": tokensUsed}
	if srv.bad("retrieve.usage-funnel") {
		usage["candidates"] = 0
	}
	if len(notes) > 0 {
		usage["notes"] = notes
	}
	if !srv.bad("retrieve.usage-reported") {
		res["usage"] = usage
	}
	if next != "" {
		res["nextCursor"] = next
	}
	if !srv.bad("retrieve.snapshot-echo") {
		res["indexVersion"] = version
	}
	return res, nil
}

// tcursor is a decoded cursor: the offset of the next page and the version
// of the corpus its list was ranked on (0: none given).
type tcursor struct{ offset, version int }

// parseCursor reads p's cursor ("off:N:vV", base64; older "off:N").
func (srv *tserver) parseCursor(p map[string]json.RawMessage, mode string) (tcursor, *rpcErr) {
	var c tcursor
	if !present(p, "cursor") {
		return c, nil
	}
	if srv.bad("derived.pages-every-mode") && mode == "dense" {
		return c, eParams("cursor", "malformed cursor") // a cursor this server issued itself
	}
	var s string
	_ = json.Unmarshal(p["cursor"], &s)
	b, err := base64.StdEncoding.DecodeString(s)
	parts := strings.Split(strings.TrimPrefix(string(b), "off:"), ":v")
	n, err2 := strconv.Atoi(parts[0])
	if err != nil || err2 != nil || !strings.HasPrefix(string(b), "off:") {
		if !srv.bad("retrieve.bad-cursor") {
			return c, eParams("cursor", "bad cursor")
		}
		return c, nil
	}
	c.offset = n
	if len(parts) == 2 {
		c.version, _ = strconv.Atoi(parts[1])
	}
	return c, nil
}

// keepSnapshot keeps the corpus of the current version before a write
// changes it (srv.mu held).
func (srv *tserver) keepSnapshot() {
	srv.snaps[srv.version] = slices.Clone(srv.docs)
}

// compileFilter validates a §8 filter tree against the advertised fields/operators.
func (ss *tsession) compileFilter(raw json.RawMessage) (func(map[string]any) bool, *rpcErr) {
	srv := ss.srv
	fields := ss.caps()["filter"].(map[string]any)["fields"].(map[string]any)
	ops := ss.capList("filter.operators")
	var node map[string]json.RawMessage
	if json.Unmarshal(raw, &node) != nil {
		return nil, eParams("filter", "filter must be an object")
	}
	for _, comb := range []string{"and", "or"} {
		if sub, ok := node[comb]; ok {
			var kids []json.RawMessage
			if json.Unmarshal(sub, &kids) != nil {
				return nil, eParams("filter."+comb, "must be an array")
			}
			if len(kids) == 0 && !srv.bad("filter.empty-combinator") {
				return nil, eParams("filter."+comb, "empty combinator")
			}
			var fs []func(map[string]any) bool
			for _, k := range kids {
				f, err := ss.compileFilter(k)
				if err != nil {
					return nil, err
				}
				fs = append(fs, f)
			}
			return func(m map[string]any) bool {
				for _, f := range fs {
					if f(m) != (comb == "and") {
						return comb != "and"
					}
				}
				return comb == "and"
			}, nil
		}
	}
	if sub, ok := node["not"]; ok {
		if srv.bad("filter.combinators") {
			return nil, eParams("filter.not", "not unsupported")
		}
		f, err := ss.compileFilter(sub)
		if err != nil {
			return nil, err
		}
		return func(m map[string]any) bool { return !f(m) }, nil
	}
	var c struct {
		Field string          `json:"field"`
		Op    string          `json:"op"`
		Value json.RawMessage `json:"value"`
	}
	_ = json.Unmarshal(raw, &c)
	if c.Op == "" {
		if !srv.bad("filter.malformed") {
			return nil, eParams("filter", "clause needs field, op and value")
		}
		c.Op = "eq"
	}
	typ, ok := fields[c.Field].(string)
	if !ok {
		if srv.bad("filter.unknown-field") {
			return func(map[string]any) bool { return true }, nil
		}
		e := eParams("filter."+c.Field, "unknown filter field")
		if srv.bad("filter.unknown-field-data") {
			e.Data = nil
		}
		return nil, e
	}
	if !slices.Contains([]string{"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "exists"}, c.Op) {
		return nil, eParams("filter."+c.Field, "unknown operator")
	}
	if !slices.Contains(ops, c.Op) {
		if srv.bad("filter.op-unsupported") {
			return nil, eParams("filter."+c.Field, "operator")
		}
		return nil, eOption("filter.op", "operator not advertised")
	}
	ordered := c.Op == "gt" || c.Op == "gte" || c.Op == "lt" || c.Op == "lte"
	if ordered && typ != "int" && srv.bad("filter.op-not-for-type") {
		return func(map[string]any) bool { return true }, nil
	}
	if ordered && typ != "int" && !srv.bad("filter.op-not-for-type") {
		return nil, eParams("filter."+c.Field, "ordered comparison needs a numeric field")
	}
	var v any
	_ = json.Unmarshal(c.Value, &v)
	okType := func(x any) bool {
		switch typ {
		case "int":
			f, ok := x.(float64)
			return ok && f == math.Trunc(f)
		case "keyword":
			_, ok := x.(string)
			return ok
		}
		return true
	}
	switch c.Op {
	case "exists":
		if _, ok := v.(bool); !ok {
			return nil, eParams("filter."+c.Field, "exists takes a boolean")
		}
	case "in", "nin":
		arr, ok := v.([]any)
		if !ok {
			return nil, eParams("filter."+c.Field, "in takes an array")
		}
		for _, x := range arr {
			if !okType(x) {
				return nil, eParams("filter."+c.Field, "value type")
			}
		}
	default:
		if !okType(v) && !srv.bad("filter.type-mismatch") {
			return nil, eParams("filter."+c.Field, "value type does not match the field type")
		}
	}
	if c.Op == "eq" && srv.bad("filter.valid") {
		return nil, eParams("filter."+c.Field, "eq unsupported")
	}
	return func(m map[string]any) bool {
		got, has := m[c.Field]
		switch c.Op {
		case "exists":
			return has == v.(bool)
		case "eq":
			return has && fmt.Sprint(got) == fmt.Sprint(v)
		case "in":
			for _, x := range v.([]any) {
				if fmt.Sprint(got) == fmt.Sprint(x) {
					return true
				}
			}
			return false
		case "gt", "gte", "lt":
			g, _ := got.(int)
			f, _ := v.(float64)
			switch c.Op {
			case "gt":
				return float64(g) > f
			case "gte":
				return float64(g) >= f
			}
			return float64(g) < f
		}
		return true
	}, nil
}

// ---------------------------------------------------------------- embed, rerank, transform, graph, index

func hashVec(text string, dim int) []float64 {
	v := make([]float64, dim)
	for _, t := range tokens(text) {
		h := fnv.New32a()
		h.Write([]byte(t))
		v[h.Sum32()%uint32(dim)] += 1
	}
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	if n > 0 {
		for i := range v {
			v[i] /= math.Sqrt(n)
		}
	}
	return v
}

func stringList(raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	var out []string
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
			continue
		}
		var b struct {
			Type, Text string
		}
		if json.Unmarshal(it, &b) != nil || b.Type != "text" {
			return nil, false
		}
		out = append(out, b.Text)
	}
	return out, true
}

func (ss *tsession) embed(p map[string]json.RawMessage) (any, *rpcErr) {
	srv := ss.srv
	field := "inputs"
	if !present(p, "inputs") && present(p, "texts") {
		if srv.bad("embed.legacy-texts") {
			return nil, eParams("inputs", "inputs required")
		}
		field = "texts"
	}
	if !present(p, field) {
		if srv.bad("embed.missing-inputs") {
			return map[string]any{"vectors": []any{}}, nil
		}
		return nil, eParams("inputs", "inputs required")
	}
	inputs, ok := stringList(p[field])
	if !ok {
		return nil, eParams(field, "inputs must be an array of strings")
	}
	dim := 8
	enc := "json"
	if present(p, "encoding") {
		_ = json.Unmarshal(p["encoding"], &enc)
	}
	advertised := append([]string{"json"}, ss.capList("embed.encodings")...)
	if !slices.Contains(advertised, enc) || (enc == "json" && srv.bad("embed.json-explicit") && present(p, "encoding")) {
		if !srv.bad("gating.encoding-unsupported") || enc == "json" {
			return nil, eOption("encoding", "encoding not advertised")
		}
		enc = "json"
	}
	var vecs []any
	for _, in := range inputs {
		v := hashVec(in, dim)
		if srv.bad("embed.basic") {
			v = append(v, 0)
		}
		if enc == "f32-base64" {
			b := make([]byte, 4*len(v))
			for i, x := range v {
				if srv.bad("embed.f32-matches-json") {
					binary.BigEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
				} else {
					binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
				}
			}
			if srv.bad("embed.f32-base64") {
				vecs = append(vecs, base64.RawStdEncoding.EncodeToString(b))
			} else {
				vecs = append(vecs, base64.StdEncoding.EncodeToString(b))
			}
			continue
		}
		vecs = append(vecs, v)
	}
	r := map[string]any{"vectors": vecs}
	if enc != "json" {
		r["encoding"], r["dimension"] = enc, dim
	}
	return r, nil
}

func (ss *tsession) sparse(p map[string]json.RawMessage) (any, *rpcErr) {
	texts, ok := stringList(p["texts"])
	if !ok {
		return nil, eParams("texts", "texts required")
	}
	var out []any
	for _, t := range texts {
		idx, vals := []int{}, []float64{}
		for i, tok := range tokens(t) {
			h := fnv.New32a()
			h.Write([]byte(tok))
			idx = append(idx, int(h.Sum32()%30000)+i)
			vals = append(vals, 1)
		}
		if ss.srv.bad("sparse.basic") && len(vals) > 0 {
			vals = vals[1:]
		}
		out = append(out, map[string]any{"indices": idx, "values": vals})
	}
	return map[string]any{"sparse": out}, nil
}

func (ss *tsession) multi(p map[string]json.RawMessage) (any, *rpcErr) {
	inputs, ok := stringList(p["inputs"])
	if !ok {
		return nil, eParams("inputs", "inputs required")
	}
	dim := 4
	var out []any
	for _, in := range inputs {
		var m []any
		for _, t := range tokens(in) {
			v := hashVec(t, dim)
			if ss.srv.bad("multi.basic") {
				v = v[:dim-1]
			}
			m = append(m, v)
		}
		out = append(out, m)
	}
	return map[string]any{"matrices": out, "dimension": dim}, nil
}

func (ss *tsession) rerank(p map[string]json.RawMessage) (any, *rpcErr) {
	srv := ss.srv
	var q string
	if json.Unmarshal(p["query"], &q) != nil {
		return nil, eParams("query", "query required")
	}
	if !present(p, "passages") {
		if srv.bad("rerank.missing-passages") {
			return map[string]any{"scores": []any{}}, nil
		}
		return nil, eParams("passages", "passages required")
	}
	passages, ok := stringList(p["passages"])
	if !ok {
		return nil, eParams("passages", "passages must be an array")
	}
	if present(p, "method") {
		var m string
		_ = json.Unmarshal(p["method"], &m)
		if srv.bad("rerank.methods") {
			return nil, &rpcErr{Code: -32010, Message: "model offline"}
		}
		if !slices.Contains(ss.capList("rerank.methods"), m) && !srv.bad("gating.rerank-method-unsupported") {
			return nil, eOption("method", "rerank method not advertised")
		}
	}
	qt := tokens(q)
	scores := make([]float64, len(passages))
	for i, ps := range passages {
		for _, t := range tokens(ps) {
			if slices.Contains(qt, t) {
				scores[i]++
			}
		}
		scores[i] -= float64(i) / 1000
	}
	order := make([]int, len(passages))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	if srv.bad("rerank.order") {
		slices.Reverse(order)
	}
	if present(p, "topN") {
		n, err := intParam(p["topN"], "topN", 1)
		if err != nil {
			return nil, err
		}
		if n < len(order) {
			order = order[:n]
		}
	}
	if srv.bad("rerank.basic") && len(scores) > 0 {
		scores = scores[:len(scores)-1]
	}
	return map[string]any{"scores": scores, "order": order}, nil
}

func (ss *tsession) transform(p map[string]json.RawMessage) (any, *rpcErr) {
	var tp struct {
		Query  string `json:"query"`
		Method string `json:"method"`
	}
	if json.Unmarshal(mustJSON(p), &tp) != nil || tp.Method == "" {
		return nil, eParams("method", "query and method required")
	}
	if !slices.Contains(ss.capList("transform.methods"), tp.Method) && !ss.srv.bad("transform.unsupported") {
		return nil, eOption("method", "transform method not advertised")
	}
	if ss.srv.bad("transform.methods") {
		return map[string]any{"queries": tp.Query}, nil
	}
	return map[string]any{"queries": []any{tp.Query}}, nil
}

func (ss *tsession) graph(p map[string]json.RawMessage) (any, *rpcErr) {
	var op string
	if json.Unmarshal(p["op"], &op) != nil {
		return nil, eParams("op", "op required")
	}
	if !slices.Contains(ss.capList("graph.ops"), op) && !ss.srv.bad("graph.op-unsupported") {
		return nil, eOption("op", "graph op not advertised")
	}
	ss.srv.mu.Lock()
	rebuilding := ss.srv.rebuilding
	ss.srv.mu.Unlock()
	if rebuilding {
		return map[string]any{"hits": []any{}, "communities": []any{}, "summary": ""}, nil // an empty success
	}
	if op == "global" {
		if ss.srv.bad("graph.ops") {
			return map[string]any{"summary": "s", "communities": 3}, nil
		}
		return map[string]any{"summary": "s", "communities": []any{map[string]any{"id": "c1", "summary": "paris", "score": 1.0}}}, nil
	}
	return map[string]any{"hits": []any{map[string]any{"id": "d1", "score": 1.0}}}, nil
}

func (ss *tsession) indexAdd(p map[string]json.RawMessage) (any, *rpcErr) {
	srv := ss.srv
	var docs []map[string]json.RawMessage
	if json.Unmarshal(p["documents"], &docs) != nil {
		if srv.bad("index.add-invalid") {
			return map[string]any{"ids": []any{}}, nil
		}
		return nil, eParams("documents", "documents must be an array")
	}
	var meta map[string]any
	_ = json.Unmarshal(p["_meta"], &meta)
	key, _ := meta["idempotencyKey"].(string)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if key != "" && !srv.bad("index.idempotency-key") {
		if r, ok := srv.idem[key]; ok {
			return r, nil
		}
	}
	srv.keepSnapshot()
	srv.rebuilding = srv.bad("derived.no-empty-while-building")
	ids := []string{}
	for i, d := range docs {
		var text, id string
		if json.Unmarshal(d["text"], &text) != nil {
			return nil, eParams(fmt.Sprintf("documents[%d].text", i), "text required")
		}
		_ = json.Unmarshal(d["id"], &id)
		if id == "" {
			srv.minted++
			id = fmt.Sprintf("minted-%d", srv.minted)
		}
		replaced := false
		for j := range srv.docs {
			if srv.docs[j].id == id {
				if srv.bad("index.repeat-identical") && srv.docs[j].text == text {
					return nil, eParams("documents", "duplicate")
				}
				if !srv.bad("index.upsert") {
					srv.docs[j].text = text
					replaced = true
				}
				break
			}
		}
		if !replaced {
			srv.docs = append(srv.docs, tdoc{id: id, text: text, meta: map[string]any{}})
		}
		ids = append(ids, id)
	}
	srv.version++
	if srv.bad("index.add-positional") {
		slices.Reverse(ids)
	}
	r := map[string]any{"ids": ids}
	if key != "" {
		srv.idem[key] = r
	}
	return r, nil
}

func (ss *tsession) indexDelete(p map[string]json.RawMessage) (any, *rpcErr) {
	srv := ss.srv
	var ids []string
	if json.Unmarshal(p["ids"], &ids) != nil {
		return nil, eParams("ids", "ids must be an array of strings")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.keepSnapshot()
	n := 0
	for _, id := range ids {
		found := false
		for j := 0; j < len(srv.docs); j++ {
			if srv.docs[j].id == id {
				if !srv.bad("index.deleted-gone") {
					srv.docs = append(srv.docs[:j], srv.docs[j+1:]...)
					j--
				}
				n++
				found = true
			}
		}
		if !found && srv.bad("index.delete-absent") {
			return nil, &rpcErr{Code: -32015, Message: "not found"}
		}
	}
	if srv.bad("index.delete-counts") {
		n = len(ids)
	}
	srv.version++
	return map[string]any{"deleted": n}, nil
}

// ---------------------------------------------------------------- transports

// servePipe runs one stdio session over an in-memory pipe pair.
func (srv *tserver) servePipe(ctx context.Context, stderr io.Writer) (io.WriteCloser, io.Reader, func() error, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var wmu sync.Mutex
	first := true
	write := func(v any) {
		wmu.Lock()
		defer wmu.Unlock()
		var b []byte
		if rl, ok := v.(rawLine); ok {
			b = []byte(rl)
		} else {
			b = mustJSON(v)
		}
		if first && srv.bad("global.no-bom") {
			b = append([]byte("\xef\xbb\xbf"), b...)
		}
		first = false
		_, _ = outW.Write(append(b, '\n'))
	}
	ss := srv.newSession(write, false)
	if srv.bad("global.stderr-no-protocol") {
		inner := ss.emit
		ss.emit = func(v any) {
			if _, raw := v.(rawLine); !raw {
				fmt.Fprintf(stderr, "%s\n", mustJSON(v))
			}
			inner(v)
		}
		fmt.Fprintf(stderr, "starting\n%s\n", mustJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/log", "params": map[string]any{"level": "info", "message": "up"}}))
	}
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		defer outW.Close()
		defer inR.CloseWithError(io.ErrClosedPipe) // like a process that exited: writes now fail
		buf := make([]byte, 64<<10)
		var pending []byte
		for {
			n, err := inR.Read(buf)
			chunk := buf[:n]
			if srv.bad("jsonrpc.split-writes") && n > 0 && !bytes.HasSuffix(chunk, []byte("\n")) {
				chunk = append(append([]byte{}, chunk...), '\n')
			}
			pending = append(pending, chunk...)
			processed := 0
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				line := pending[:i]
				pending = pending[i+1:]
				if srv.bad("jsonrpc.pipelining") && processed > 0 && len(bytes.TrimSpace(line)) > 0 {
					continue
				}
				if len(bytes.TrimSpace(line)) > 0 {
					processed++
				}
				if r := ss.handleRaw(line); r != nil {
					write(r)
				}
				if srv.bad("jsonrpc.survives-garbage") && !json.Valid(bytes.TrimSpace(line)) && len(bytes.TrimSpace(line)) > 0 {
					return
				}
				if ss.shutdown && !srv.bad("session.exit-after-shutdown", "session.no-work-after-shutdown") {
					return
				}
			}
			if err != nil {
				if srv.bad("session.eof-flush") {
					select {
					case <-ctx.Done():
					case <-stop:
					}
				}
				return
			}
		}
	}()
	cleanup := func() error {
		close(stop)
		_ = inR.CloseWithError(io.EOF)
		_ = outR.Close()
		<-done
		return nil
	}
	return inW, outR, cleanup, nil
}

// ServeHTTP implements POST <base>/<method> (base /rcp).
func (srv *tserver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/rcp" && !strings.HasPrefix(r.URL.Path, "/rcp/") && !srv.bad("http.unknown-base") {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	pathMethod := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/rcp"), "/")
	ct := "application/json"
	if srv.bad("http.response") {
		ct = "text/plain"
	}
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", ct)
		if m, ok := v.(map[string]any); ok && m["error"] != nil && srv.bad("http.error-200") {
			status = 500
		}
		if m, ok := v.(map[string]any); ok && m["result"] != nil && srv.bad("global.http-200") {
			status = 202
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if !json.Valid(body) {
		if srv.bad("http.bad-json") {
			w.WriteHeader(500)
			_, _ = w.Write([]byte("boom"))
			return
		}
		writeJSON(200, resp(nil, nil, &rpcErr{Code: -32700, Message: "parse error"}))
		return
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params struct {
			Token string `json:"token"`
			Meta  struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	isObj := bytes.HasPrefix(bytes.TrimSpace(body), []byte("{"))
	if isObj {
		_ = json.Unmarshal(body, &head)
	}
	if srv.cfg.token != "" {
		var method string
		_ = json.Unmarshal(head.Method, &method)
		authOK := r.Header.Get("Authorization") == "Bearer "+srv.cfg.token ||
			(srv.bad("http.auth-missing") && r.Header.Get("Authorization") == "") ||
			(srv.bad("http.auth-wrong") && r.Header.Get("Authorization") != "") ||
			(srv.bad("http.auth-before-initialize") && method == "initialize") ||
			(srv.bad("http.auth-not-in-params") && head.Params.Token == srv.cfg.token)
		if srv.bad("http.auth-before-gating") && !authOK {
			if _, ok := defined[method]; !ok {
				writeJSON(200, resp(head.ID, nil, &rpcErr{Code: -32004, Message: "unknown"}))
				return
			}
		}
		if !authOK {
			writeJSON(401, resp(head.ID, nil, &rpcErr{Code: -32012, Message: "unauthorized"}))
			return
		}
	}
	if isObj && pathMethod != "" && !srv.bad("http.path-mismatch") {
		var method string
		if json.Unmarshal(head.Method, &method) == nil && method != pathMethod {
			writeJSON(200, resp(head.ID, nil, &rpcErr{Code: -32600, Message: "path/method mismatch"}))
			return
		}
	}
	if srv.bad("http.initialize-per-client", "init.ok") && bytes.Contains(head.Method, []byte(`"initialize"`)) {
		srv.mu.Lock()
		again := srv.httpInitialized
		srv.httpInitialized = true
		srv.mu.Unlock()
		if again || srv.bad("init.ok") {
			writeJSON(200, resp(head.ID, nil, &rpcErr{Code: -32600, Message: "already initialized"}))
			return
		}
	}
	var frames []any
	var fmu sync.Mutex
	ss := srv.newSession(func(v any) { fmu.Lock(); frames = append(frames, v); fmu.Unlock() }, true)
	out := ss.handleRaw(body)
	sse := (strings.Contains(r.Header.Get("Accept"), "text/event-stream") || (srv.bad("http.no-sse-unless-asked") && len(head.Params.Meta.ProgressToken) > 0)) &&
		len(head.Params.Meta.ProgressToken) > 0 && out != nil
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		all := append(frames, out)
		if srv.bad("http.sse-framing") {
			all = append(all, frames[0])
		}
		for _, f := range all {
			fmt.Fprintf(w, "data: %s\n\n", mustJSON(f))
		}
		return
	}
	if out == nil {
		if srv.bad("http.notification-no-body") {
			writeJSON(200, resp(nil, nil, &rpcErr{Code: -32600, Message: "notification"}))
			return
		}
		if srv.bad("http.notification-204") {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(204)
		return
	}
	writeJSON(200, out)
}

var _ = bufio.NewReader

// rewriteGate rejects an un-advertised retrieve.rewrite method under strict.
func (ss *tsession) rewriteGate(p map[string]json.RawMessage, strict bool) *rpcErr {
	var m any
	if !present(p, "rewrite") || json.Unmarshal(p["rewrite"], &m) != nil || m == false {
		return nil
	}
	name, _ := m.(string)
	if slices.Contains(ss.capList("transform.methods"), name) || !strict || ss.srv.bad("rewrite.unsupported") {
		return nil
	}
	return eOption("rewrite", "rewrite method not advertised")
}

// agenticFilter drops hits the session returned before (session.dedup) and
// quarantined ones (the feedback.advisory mutation). Called with srv.mu held.
func (ss *tsession) agenticFilter(p map[string]json.RawMessage, ranked []scored) []scored {
	srv := ss.srv
	var sid string
	_ = json.Unmarshal(p["sessionId"], &sid)
	seen := srv.seen[sid]
	var kept []scored
	for i, r := range ranked {
		if srv.quarantined[r.doc.id] {
			continue
		}
		if sid != "" && seen[r.doc.id] && !srv.bad("session.dedup") {
			continue
		}
		if sid != "" && i == 0 && srv.bad("session.id-correct") {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

func (ss *tsession) recordSession(p map[string]json.RawMessage, hits []any) {
	var sid string
	if json.Unmarshal(p["sessionId"], &sid) != nil || sid == "" {
		return
	}
	if ss.srv.seen[sid] == nil {
		ss.srv.seen[sid] = map[string]bool{}
	}
	for _, h := range hits {
		ss.srv.seen[sid][h.(map[string]any)["id"].(string)] = true
	}
}

// feedbackEffects applies the feedback mutations: a transient disturbance
// of the next retrieves, or quarantine on a single report.
func (ss *tsession) feedbackEffects(p map[string]json.RawMessage) {
	srv := ss.srv
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.bad("feedback.concurrent-retrieve") {
		srv.perturbed = 2
	}
	var fp struct {
		SessionID string `json:"sessionId"`
		Signals   []struct {
			HitID           any  `json:"hitId"`
			PoisonSuspected bool `json:"poisonSuspected"`
		} `json:"signals"`
	}
	_ = json.Unmarshal(mustJSON(p), &fp)
	for _, sg := range fp.Signals {
		id, ok := sg.HitID.(string)
		if !ok || !sg.PoisonSuspected {
			continue
		}
		// Conformant: a hit is quarantined once two sessions corroborate
		// the report (rcpd waits for three by default); the mutation
		// quarantines on one.
		if srv.reporters[id] == nil {
			srv.reporters[id] = map[string]bool{}
		}
		srv.reporters[id][fp.SessionID] = true
		if len(srv.reporters[id]) >= 2 || srv.bad("feedback.advisory") {
			srv.quarantined[id] = true
		}
	}
}

// unitParams reads retrieve's unit and level (§7.7.2): an un-advertised
// unit is -32005.
func (ss *tsession) unitParams(p map[string]json.RawMessage) (string, int, *rpcErr) {
	unit, level := "chunk", 0
	if present(p, "unit") {
		_ = json.Unmarshal(p["unit"], &unit)
		units := ss.capList("retrieve.units")
		if len(units) == 0 {
			units = []string{"chunk", "passage"} // absent (§6.1)
		}
		if !slices.Contains(units, unit) && !ss.srv.bad("retrieve.unit-unsupported") {
			return "", 0, eOption("unit", "unit not advertised")
		}
	}
	if present(p, "level") {
		l, err := intParam(p["level"], "level", 0)
		if err != nil {
			return "", 0, err
		}
		level = min(l, 1)
	}
	return unit, level, nil
}

// annotateUnit makes a hit of unit (at level) echo both, with the lineage
// graph and tree units carry.
func (ss *tsession) annotateUnit(h map[string]any, unit string, level int) {
	bad := ss.srv.bad
	h["unit"] = unit
	if bad("retrieve.units") {
		h["unit"] = "chunk"
	}
	if unit == "community" || unit == "tree-node" {
		h["level"] = level
		if bad("retrieve.levels") {
			h["level"] = level + 5
		}
	}
	if bad("retrieve.provenance") {
		return
	}
	switch unit {
	case "path":
		h["provenance"] = map[string]any{"path": []any{"a", "b"}, "edges": []any{map[string]any{"src": "a", "dst": "b"}}}
	case "community", "tree-node":
		h["provenance"] = map[string]any{"leaves": []any{h["id"]}}
	}
}
