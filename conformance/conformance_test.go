package conformance

import (
	"context"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testToken = "s3cret-token"

func testOptions() Options {
	return Options{QuietWait: 60 * time.Millisecond, CallTimeout: time.Second, StartTimeout: 2 * time.Second, Timeout: 45 * time.Second}
}

func pipeTarget(srv *tserver) Target { return Target{pipe: srv.servePipe} }

func httpTarget(t *testing.T, srv *tserver) Target {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return Target{URL: ts.URL + "/rcp", Token: srv.cfg.token}
}

func runSuite(t *testing.T, target Target, opts Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), target, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func TestBaseline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target func(t *testing.T) Target
	}{
		{"stdio", func(t *testing.T) Target { return pipeTarget(newTServer(tsConfig{})) }},
		{"http", func(t *testing.T) Target { return httpTarget(t, newTServer(tsConfig{token: testToken})) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := runSuite(t, tc.target(t), testOptions())
			for _, r := range rep.Checks {
				if r.Status == Fail {
					t.Errorf("%s (%s) failed against the conformant server: %s", r.ID, r.Section, r.Detail)
				}
			}
			if rep.CertifiedLevel == nil || *rep.CertifiedLevel != L2 {
				t.Errorf("certified %v, want L2; notes %v", rep.CertifiedLevel, rep.LevelNotes)
			}
			if !rep.DeclarationHonest || !rep.OK() {
				t.Errorf("honest=%v ok=%v", rep.DeclarationHonest, rep.OK())
			}
			if len(rep.Checks) != len(Checks()) {
				t.Errorf("%d results for %d checks", len(rep.Checks), len(Checks()))
			}
		})
	}
}

// variants adjust the baseline server so the check under test applies.
var variants = map[string]func(caps map[string]any){
	"gating.capability-missing-valid-params": func(c map[string]any) { delete(c, "transform") },
	"gating.mode-unsupported":                modesDenseHybrid,
	"gating.option-data":                     modesDenseHybrid,
	"gating.strict-false":                    modesDenseHybrid,
	"gating.encoding-unsupported": func(c map[string]any) {
		c["embed"] = map[string]any{"dimension": 8, "identity": "ts-hash-8"}
	},
	"catalog.list":    func(c map[string]any) { c["catalog"] = map[string]any{"engines": 0} },
	"index.read-only": func(c map[string]any) { c["index"] = map[string]any{"writable": false} },
	// retrieve.units absent means chunk and passage (§6.1): neither may be
	// taken for an un-advertised unit.
	"retrieve.unit-unsupported": func(c map[string]any) {
		r := maps.Clone(c["retrieve"].(map[string]any))
		delete(r, "units")
		delete(r, "levels")
		c["retrieve"] = r
	},
}

func modesDenseHybrid(c map[string]any) {
	r := maps.Clone(c["retrieve"].(map[string]any))
	r["modes"] = []any{"dense", "hybrid"}
	c["retrieve"] = r
}

// companions are checks run alongside a check so it has traffic to judge.
var companions = map[string][]string{
	"global.error-codes":             {"jsonrpc.unknown-method"},
	"global.answered-once":           {"jsonrpc.id-int", "global.capabilities-stable"},
	"global.no-unsolicited-progress": {"init.info-stable"},
	"global.jsonrpc-version":         {"init.info-stable"},
	"global.schema":                  {"init.info-stable"},
	"global.result-schema":           {"preinit.ping"},
}

// TestEveryCheckCatchesItsMutation runs each check against a server broken
// in exactly the way that check exists to catch.
func TestEveryCheckCatchesItsMutation(t *testing.T) {
	for _, c := range Checks() {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			caps := baselineCaps()
			if v := variants[c.ID]; v != nil {
				v(caps)
			}
			cfg := tsConfig{caps: caps, bad: map[string]bool{c.ID: true}}
			var target Target
			if c.Transport == "http" {
				cfg.token = testToken
				target = httpTarget(t, newTServer(cfg))
			} else {
				target = pipeTarget(newTServer(cfg))
			}
			opts := testOptions()
			opts.Only = append([]string{c.ID}, companions[c.ID]...)
			rep := runSuite(t, target, opts)
			var got *Result
			for i := range rep.Checks {
				if rep.Checks[i].ID == c.ID {
					got = &rep.Checks[i]
				}
			}
			if got == nil {
				t.Fatalf("check %s did not run", c.ID)
			}
			if got.Status != Fail {
				t.Errorf("mutation %q not caught: status %s (%s)", c.ID, got.Status, got.Detail)
			}
			if c.Requirement == Must && rep.OK() {
				t.Errorf("a failed MUST must make the report not OK")
			}
		})
	}
}

func TestVariantsStillConformant(t *testing.T) {
	for id, v := range variants {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			caps := baselineCaps()
			v(caps)
			rep := runSuite(t, pipeTarget(newTServer(tsConfig{caps: caps})), testOptions())
			for _, r := range rep.Checks {
				if r.Status == Fail && r.Requirement == Must {
					t.Errorf("%s failed against the unmutated variant: %s", r.ID, r.Detail)
				}
				if r.ID == id && r.Status != Pass {
					t.Errorf("%s does not apply to its own variant: %s %s", id, r.Status, r.Detail)
				}
			}
		})
	}
}

func TestCertification(t *testing.T) {
	lv := func(l Level) *Level { return &l }
	for _, tc := range []struct {
		name     string
		caps     func(map[string]any)
		bad      string
		declared string
		want     *Level
		honest   bool
	}{
		{name: "full server certifies L2", want: lv(L2), honest: true},
		{name: "L1 MUST failure caps at L0 and L2 claim is an overclaim", bad: "retrieve.k-negative", want: lv(L0), honest: false},
		{name: "L0 MUST failure certifies nothing", bad: "jsonrpc.unknown-method", want: nil, honest: false},
		{name: "SHOULD failure does not block", bad: "retrieve.usage-reported", want: lv(L2), honest: true},
		{name: "no retrieve caps at L0", caps: func(c map[string]any) {
			for _, k := range []string{"retrieve", "filter", "pagination", "citations"} {
				delete(c, k)
			}
		}, want: lv(L0), honest: false},
		{name: "no L2 feature caps at L1", caps: func(c map[string]any) {
			for _, k := range []string{"rerank", "multiVector", "sparseEmbed", "transform", "graph", "streaming", "pagination", "log"} {
				delete(c, k)
			}
			r := maps.Clone(c["retrieve"].(map[string]any))
			delete(r, "deterministic")
			delete(r, "snapshots")
			c["retrieve"] = r
		}, want: lv(L1), honest: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			caps := baselineCaps()
			if tc.caps != nil {
				tc.caps(caps)
			}
			bad := map[string]bool{}
			if tc.bad != "" {
				bad[tc.bad] = true
			}
			rep := runSuite(t, pipeTarget(newTServer(tsConfig{caps: caps, bad: bad})), testOptions())
			for _, r := range rep.Checks {
				if r.Status == Fail && r.ID != tc.bad {
					t.Logf("also failed: %s: %s", r.ID, r.Detail)
				}
			}
			if (rep.CertifiedLevel == nil) != (tc.want == nil) || (tc.want != nil && *rep.CertifiedLevel != *tc.want) {
				t.Errorf("certified %v, want %v (notes %v)", deref(rep.CertifiedLevel), deref(tc.want), rep.LevelNotes)
			}
			if rep.DeclarationHonest != tc.honest {
				t.Errorf("declarationHonest=%v, want %v", rep.DeclarationHonest, tc.honest)
			}
		})
	}
}

func deref(l *Level) string {
	if l == nil {
		return "none"
	}
	return string(*l)
}

// A process-global HTTP session must cost init.ok, not the whole report.
func TestHTTPGlobalSessionFallsBackToInfo(t *testing.T) {
	rep := runSuite(t, httpTarget(t, newTServer(tsConfig{token: testToken, bad: map[string]bool{"init.ok": true}})), testOptions())
	failed := map[string]bool{}
	for _, r := range rep.Checks {
		if r.Status == Fail {
			failed[r.ID] = true
		}
	}
	if !failed["init.ok"] || len(failed) > 4 || rep.Passed < 100 {
		t.Errorf("failed %v, passed %d", failed, rep.Passed)
	}
}

func TestMaxLevelLimitsRun(t *testing.T) {
	opts := testOptions()
	opts.MaxLevel = L0
	rep := runSuite(t, pipeTarget(newTServer(tsConfig{})), opts)
	for _, r := range rep.Checks {
		if r.Level != L0 && r.Status != Skip {
			t.Errorf("%s (%s) ran with MaxLevel L0", r.ID, r.Level)
		}
	}
	if deref(rep.CertifiedLevel) != "L0" || !rep.DeclarationHonest {
		t.Errorf("certified %s honest %v; a declared L2 above --level is unverified, not an overclaim", deref(rep.CertifiedLevel), rep.DeclarationHonest)
	}
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	perLevel := map[Level]int{}
	for _, c := range Checks() {
		if seen[c.ID] {
			t.Errorf("duplicate check id %s", c.ID)
		}
		seen[c.ID] = true
		perLevel[c.Level]++
		if c.Name == "" || !strings.HasPrefix(c.Section, "§") || levelIndex(c.Level) < 0 || (c.Requirement != Must && c.Requirement != Should) || c.run == nil {
			t.Errorf("check %s is incomplete: %+v", c.ID, c)
		}
	}
	if len(seen) < 80 {
		t.Errorf("%d checks, want at least 80", len(seen))
	}
	t.Logf("%d checks: %v", len(seen), perLevel)
}

// Issue 30: the suite carries its own schema, so a run with nothing beside
// it validates every frame and certifies; --schema FILE adds a schema that
// every message must satisfy too.
func TestRunWithEmbeddedSchema(t *testing.T) {
	t.Chdir(t.TempDir())
	opts := testOptions()
	opts.Only = []string{"preinit.ping", "init.ok", "init.schema", "retrieve.basic", "global.schema"}
	rep, err := Run(context.Background(), httpTarget(t, newTServer(tsConfig{})), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Checks {
		if r.Status != Pass {
			t.Errorf("%s: %s %s", r.ID, r.Status, r.Detail)
		}
	}
	if rep.CertifiedLevel == nil || !rep.OK() {
		t.Errorf("certified %v, notes %q", rep.CertifiedLevel, rep.LevelNotes)
	}
	// An explicitly named schema that does not exist is an error.
	opts.SchemaPath = "missing.json"
	if _, err := Run(context.Background(), httpTarget(t, newTServer(tsConfig{})), opts); err == nil {
		t.Error("--schema missing.json: want an error")
	}
	// An added schema is applied on top of ours: one that rejects every
	// frame fails the schema checks, naming the file.
	strict := filepath.Join(t.TempDir(), "strict.json")
	if err := os.WriteFile(strict, []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"Message":false,"ResultFor":false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.SchemaPath = strict
	rep, err = Run(context.Background(), httpTarget(t, newTServer(tsConfig{})), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Checks {
		if (r.ID == "init.schema" || r.ID == "global.schema") && (r.Status != Fail || !strings.Contains(r.Detail, "strict.json")) {
			t.Errorf("with strict.json added, %s: %s %s", r.ID, r.Status, r.Detail)
		}
	}
}

// Certifying the same server twice must not fail feedback.advisory: the
// server keeps the first run's reports, and a hit reported by two sessions
// is rightly quarantined, so every run reports as the same session.
func TestFeedbackAdvisoryRepeatable(t *testing.T) {
	srv := newTServer(tsConfig{})
	opts := testOptions()
	opts.Only = []string{"feedback.advisory"}
	for run := 1; run <= 2; run++ {
		rep := runSuite(t, pipeTarget(srv), opts)
		if len(rep.Checks) != 1 {
			t.Fatalf("run %d: %d results, want 1", run, len(rep.Checks))
		}
		if r := rep.Checks[0]; r.Status != Pass {
			t.Errorf("run %d: %s %s: %s", run, r.ID, r.Status, r.Detail)
		}
	}
}
