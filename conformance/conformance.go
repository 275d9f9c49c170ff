// Package conformance is a certifying RCP/1 conformance suite (spec §14.5).
//
// It drives a server at the wire level — NDJSON over a spawned process's
// stdio, or HTTP POSTs against a base URL — so it can send malformed frames,
// batches, odd ids and wrong paths that a well-behaved client never would.
// Every externally checkable MUST and SHOULD of the spec is a Check tagged
// with its level (L0/L1/L2), spec section, requirement strength and, where
// applicable, the capability it needs; checks for capabilities the server
// does not advertise are skipped, not failed.
//
// A level is certified only when every applicable MUST at that level and all
// lower levels passes and the server offers what the level is about (L1:
// retrieve; L2: at least one of the §14.3 features). The server's declared
// _meta.conformance is compared with the certified level; an overclaim fails
// certification.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// Level is a conformance level of §14.
type Level string

// The three conformance levels.
const (
	L0 Level = "L0"
	L1 Level = "L1"
	L2 Level = "L2"
)

var levels = []Level{L0, L1, L2}

func levelIndex(l Level) int { return slices.Index(levels, l) }

// Exceeds reports whether l is a higher level than m.
func (l Level) Exceeds(m Level) bool { return levelIndex(l) > levelIndex(m) }

// ParseLevel parses "L0", "L1" or "L2" (case-insensitive).
func ParseLevel(s string) (Level, error) {
	l := Level(strings.ToUpper(strings.TrimSpace(s)))
	if levelIndex(l) < 0 {
		return "", fmt.Errorf("unknown level %q (want L0, L1 or L2)", s)
	}
	return l, nil
}

// Requirement is the RFC 2119 strength of a check.
type Requirement string

// Requirement strengths. Only MUST failures block certification.
const (
	Must   Requirement = "MUST"
	Should Requirement = "SHOULD"
)

// Status of a check result.
type Status string

// Check statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Target names the server under test: either a command to spawn (stdio) or
// an HTTP base URL.
type Target struct {
	// Command is the server command line for stdio (Command[0] is the program).
	Command []string
	// Dir and Env optionally set the child's working directory and environment.
	Dir string
	Env []string

	// URL is the HTTP base URL, e.g. http://127.0.0.1:8000/rcp.
	URL string
	// Token, when set, is sent as "Authorization: Bearer <Token>". With a
	// token the auth checks (§5.2, §15.6) run unless SkipAuthProbe is set.
	Token         string
	SkipAuthProbe bool

	// pipe, when set, replaces Command: it opens a fresh in-process session
	// (used by the tests).
	pipe func(ctx context.Context, stderr io.Writer) (stdin io.WriteCloser, stdout io.Reader, cleanup func() error, err error)
}

func (t Target) isHTTP() bool { return t.URL != "" }

func (t Target) String() string {
	if t.isHTTP() {
		return t.URL
	}
	if t.pipe != nil {
		return "in-process"
	}
	return strings.Join(t.Command, " ")
}

// Options tune a run.
type Options struct {
	// MaxLevel limits the run to checks at or below this level (default L2).
	MaxLevel Level
	// Timeout bounds the whole run (default 5m).
	Timeout time.Duration
	// CallTimeout bounds one request/response exchange (default 5s).
	CallTimeout time.Duration
	// QuietWait is how long the suite listens to prove a server stays silent
	// (notifications, cancels; default 300ms).
	QuietWait time.Duration
	// StartTimeout bounds the first answer of a freshly spawned server (default 15s).
	StartTimeout time.Duration
	// Only, when non-empty, restricts the run to checks whose ID is listed.
	Only []string
	// Progress, when set, is called after each check completes.
	Progress func(Result)
	// HTTPClient overrides the client used for HTTP targets.
	HTTPClient *http.Client
	// SchemaPath names an RCP/1 JSON Schema file (draft 2020-12, with the
	// $defs names of the specification's schema: Message, ResultFor,
	// ProgressNotification, LogNotification) that every frame and result is
	// validated against as well as against the suite's own embedded schema,
	// such as the normative schema of the specification.
	SchemaPath string
	// NoWrites skips the checks that write to the index (index/add and
	// index/delete probes): for a live index the caller does not want
	// touched. Without it, every document a check adds is deleted before
	// the run ends.
	NoWrites bool
}

func (o *Options) defaults() {
	if o.MaxLevel == "" {
		o.MaxLevel = L2
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.QuietWait <= 0 {
		o.QuietWait = 300 * time.Millisecond
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 15 * time.Second
	}
}

// Result is the outcome of one check.
type Result struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Level       Level       `json:"level"`
	Section     string      `json:"section"`
	Requirement Requirement `json:"requirement"`
	Capability  string      `json:"capability,omitempty"`
	Status      Status      `json:"status"`
	Detail      string      `json:"detail,omitempty"`
	DurationMs  int64       `json:"durationMs"`
}

// Report is the outcome of a run.
type Report struct {
	Target            string   `json:"target"`
	Transport         string   `json:"transport"`
	Server            *Peer    `json:"server,omitempty"`
	ProtocolVersion   int      `json:"protocolVersion,omitempty"`
	Capabilities      []string `json:"capabilities,omitempty"`
	DeclaredLevel     *Level   `json:"declaredLevel"`
	CertifiedLevel    *Level   `json:"certifiedLevel"`
	DeclarationHonest bool     `json:"declarationHonest"`
	MaxLevel          Level    `json:"maxLevel"`
	// LevelNotes explains why a level above the certified one was not reached.
	LevelNotes   []string `json:"levelNotes,omitempty"`
	Passed       int      `json:"passed"`
	Failed       int      `json:"failed"`
	Skipped      int      `json:"skipped"`
	FailedMust   int      `json:"failedMust"`
	FailedShould int      `json:"failedShould"`
	DurationMs   int64    `json:"durationMs"`
	Checks       []Result `json:"checks"`
	// ServerStderr is the tail of the spawned server's stderr (stdio only).
	ServerStderr string `json:"serverStderr,omitempty"`
}

// Peer is the server identity reported by initialize.
type Peer struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// OK reports whether the run should exit zero: no failed MUST and no overclaim.
func (r *Report) OK() bool { return r.FailedMust == 0 && r.DeclarationHonest }

// Certifies reports whether the run certified the server at level l or above.
func (r *Report) Certifies(l Level) bool {
	return r.CertifiedLevel != nil && !l.Exceeds(*r.CertifiedLevel)
}

// Check is one conformance check.
type Check struct {
	ID          string
	Name        string
	Level       Level
	Section     string
	Requirement Requirement
	// Needs lists capability paths that must be advertised ("retrieve",
	// "index.writable", "retrieve.deterministic"); otherwise the check is skipped.
	Needs []string
	// Transport restricts the check to "stdio" or "http" ("" = both).
	Transport string
	run       func(ctx context.Context, s *suite) outcome
}

type outcome struct {
	status Status
	detail string
}

func pass() outcome                    { return outcome{status: Pass} }
func passf(f string, a ...any) outcome { return outcome{status: Pass, detail: fmt.Sprintf(f, a...)} }
func fail(f string, a ...any) outcome  { return outcome{status: Fail, detail: fmt.Sprintf(f, a...)} }
func skip(f string, a ...any) outcome  { return outcome{status: Skip, detail: fmt.Sprintf(f, a...)} }
func check(ok bool, f string, a ...any) outcome {
	if ok {
		return pass()
	}
	return fail(f, a...)
}

// Checks returns the catalogue of checks in execution order.
func Checks() []Check {
	var all []Check
	all = append(all, preInitChecks()...)
	all = append(all, initChecks()...)
	all = append(all, jsonrpcChecks()...)
	all = append(all, batchChecks()...)
	all = append(all, lifecycleChecks()...)
	all = append(all, httpChecks()...)
	all = append(all, gatingChecks()...)
	all = append(all, retrieveChecks()...)
	all = append(all, unitChecks()...)
	all = append(all, filterChecks()...)
	all = append(all, methodChecks()...)
	all = append(all, agenticChecks()...)
	all = append(all, indexChecks()...)
	all = append(all, derivedChecks()...)
	all = append(all, streamingChecks()...)
	all = append(all, freshSessionChecks()...)
	all = append(all, globalChecks()...)
	return all
}

// Run certifies target against the RCP/1 conformance checks.
func Run(ctx context.Context, target Target, opts Options) (*Report, error) {
	opts.defaults()
	if levelIndex(opts.MaxLevel) < 0 {
		return nil, fmt.Errorf("conformance: unknown level %q", opts.MaxLevel)
	}
	if !target.isHTTP() && len(target.Command) == 0 && target.pipe == nil {
		return nil, errors.New("conformance: target needs a command or an HTTP URL")
	}
	schemas, err := loadSchemas(opts.SchemaPath)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := time.Now()

	s := &suite{target: target, opts: opts, schemas: schemas}
	defer s.closeAll()
	stopWatchdog := context.AfterFunc(ctx, s.killAll)
	defer stopWatchdog()
	rep := &Report{Target: target.String(), Transport: "stdio", MaxLevel: opts.MaxLevel}
	if target.isHTTP() {
		rep.Transport = "http"
	}
	if err := s.openMain(ctx); err != nil {
		return nil, err
	}

	only := map[string]bool{}
	for _, id := range opts.Only {
		only[id] = true
	}
	initialized, settled := false, false
	for _, c := range Checks() {
		if len(only) > 0 && !only[c.ID] {
			continue
		}
		if !initialized && c.Level != "" && !strings.HasPrefix(c.ID, "preinit.") {
			s.initMain(ctx)
			initialized = true
		}
		if strings.HasPrefix(c.ID, "global.") && !settled {
			// let late frames (duplicates, stray notifications) arrive before judging the traffic
			settled = true
			if s.transport() == "stdio" && s.initRes != nil {
				_, _ = s.main.roundTrip(ctx, s, nil, rtOpts{quiet: s.opts.QuietWait})
			}
		}
		res := s.runCheck(ctx, c)
		if s.mainExited() {
			// A crash is a failure of the check that caused it; restart so the
			// remaining checks judge the server rather than the crash.
			res.Status = Fail
			res.Detail = strings.TrimPrefix(res.Detail+"; the server exited during this check (restarted for the remaining checks)", "; ")
			if err := s.restartMain(ctx); err != nil {
				return nil, err
			}
		}
		rep.Checks = append(rep.Checks, res)
		if opts.Progress != nil {
			opts.Progress(res)
		}
	}
	if !initialized {
		s.initMain(ctx)
	}
	s.runCleanup() // while the main session is still open
	s.shutdownMain(ctx)

	rep.DurationMs = time.Since(start).Milliseconds()
	if s.initRes != nil {
		rep.Server = &Peer{Name: s.initRes.Server.Name, Version: s.initRes.Server.Version}
		rep.ProtocolVersion = s.initRes.ProtocolVersion
		for k := range s.caps {
			rep.Capabilities = append(rep.Capabilities, k)
		}
		sort.Strings(rep.Capabilities)
		if d := s.declared; d != "" {
			l := Level(d)
			rep.DeclaredLevel = &l
		}
	}
	rep.ServerStderr = s.stderrTail()
	s.certify(rep)
	return rep, nil
}

func (s *suite) runCheck(ctx context.Context, c Check) (res Result) {
	res = Result{ID: c.ID, Name: c.Name, Level: c.Level, Section: c.Section,
		Requirement: c.Requirement, Capability: strings.Join(c.Needs, ",")}
	switch {
	case levelIndex(c.Level) > levelIndex(s.opts.MaxLevel):
		res.Status, res.Detail = Skip, "above --level "+string(s.opts.MaxLevel)
		return res
	case c.Transport != "" && c.Transport != s.transport():
		res.Status, res.Detail = Skip, "applies to the "+c.Transport+" transport only"
		return res
	case ctx.Err() != nil:
		res.Status, res.Detail = Fail, "run timed out before this check"
		return res
	}
	if !strings.HasPrefix(c.ID, "preinit.") && s.initRes == nil && c.ID != "init.ok" {
		res.Status, res.Detail = Fail, "initialize did not succeed: "+s.initErr
		if len(c.Needs) > 0 {
			res.Status, res.Detail = Skip, "initialize did not succeed; capabilities unknown"
		}
		return res
	}
	for _, need := range c.Needs {
		if !s.has(need) {
			res.Status, res.Detail = Skip, "server does not advertise "+need
			return res
		}
	}
	switch {
	case s.opts.NoWrites && slices.Contains(c.Needs, "index.writable"):
		res.Status, res.Detail = Skip, "writes to the index are off (rcp conformance --allow-writes runs them; every probe document is deleted afterwards)"
		return res
	}
	began := time.Now()
	defer func() { res.DurationMs = time.Since(began).Milliseconds() }()
	out := func() (o outcome) {
		defer func() {
			if r := recover(); r != nil {
				o = fail("check panicked: %v", r)
			}
		}()
		return c.run(ctx, s)
	}()
	res.Status, res.Detail = out.status, out.detail
	if res.Status == Pass && out.detail != "" {
		res.Detail = out.detail // informational note
	}
	return res
}

// certify computes the certified level and the honesty of the declaration.
func (s *suite) certify(rep *Report) {
	failedMust := map[Level]bool{}
	for _, r := range rep.Checks {
		switch r.Status {
		case Pass:
			rep.Passed++
		case Skip:
			rep.Skipped++
		case Fail:
			rep.Failed++
			if r.Requirement == Must {
				rep.FailedMust++
				failedMust[r.Level] = true
			} else {
				rep.FailedShould++
			}
		}
	}
	var cert *Level
	for _, l := range levels {
		if levelIndex(l) > levelIndex(s.opts.MaxLevel) {
			break
		}
		if failedMust[l] {
			rep.LevelNotes = append(rep.LevelNotes, fmt.Sprintf("%s not certified: a MUST check at %s failed", l, l))
			break
		}
		if why := s.profileGap(l); why != "" {
			rep.LevelNotes = append(rep.LevelNotes, fmt.Sprintf("%s not certified: %s", l, why))
			break
		}
		l := l
		cert = &l
	}
	rep.DeclarationHonest = true
	rep.CertifiedLevel = cert
	if rep.DeclaredLevel != nil {
		d := *rep.DeclaredLevel
		switch {
		case levelIndex(d) < 0:
			rep.DeclarationHonest = false
			rep.LevelNotes = append(rep.LevelNotes, fmt.Sprintf("declared level %q is not one of L0, L1, L2", d))
		case levelIndex(d) > levelIndex(s.opts.MaxLevel):
			rep.LevelNotes = append(rep.LevelNotes, fmt.Sprintf("declared %s not verified: run limited to %s", d, s.opts.MaxLevel))
		case cert == nil || levelIndex(d) > levelIndex(*cert):
			rep.DeclarationHonest = false
		}
	}
}

// profileGap says what a server lacks to be at level l at all (§14.1–§14.3).
func (s *suite) profileGap(l Level) string {
	switch l {
	case L0:
		if s.initRes == nil {
			return "initialize did not succeed"
		}
		for _, k := range []string{"embed", "rerank", "retrieve", "graph"} {
			if s.has(k) {
				return ""
			}
		}
		return "no retrieval capability advertised (§14.1)"
	case L1:
		if !s.has("retrieve") {
			return "retrieve is not advertised (§14.2)"
		}
	case L2:
		for _, k := range []string{"rerank", "multiVector", "sparseEmbed", "transform", "graph",
			"streaming", "pagination", "log", "retrieve.deterministic", "retrieve.snapshots"} {
			if s.has(k) {
				return ""
			}
		}
		return "none of the §14.3 features is advertised"
	}
	return ""
}

// ---------------------------------------------------------------- helpers

// canonNumber renders a JSON number exactly (no float rounding).
func canonNumber(s string) (string, bool) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", false
	}
	return r.RatString(), true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
