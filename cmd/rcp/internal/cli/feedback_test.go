package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rcp feedback quarantine list|lift against rcpd with scoped tokens: three
// callers (tokens) quarantine a unit, an admin token lists and lifts it,
// a token without admin is refused.
func TestFeedbackQuarantineCommands(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("r1 read,write s1\nr2 read,write s2\nr3 read,write s3\nops read,admin s-ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RCP_TOKEN", "s-ops") // for the start-up ping; each call below names its token
	url := httpRcpd(t, filepath.Join(dir, "data"), "--token-file", tokens)
	notes := filepath.Join(dir, "doc1.txt")
	if err := os.WriteFile(notes, []byte("an ordinary passage about volcanoes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := rcpRun("index", "add", "--http", url, "--token", "s1", notes); code != 0 {
		t.Fatalf("index add: %s", errs)
	}
	code, out, errs := rcpRun("query", "--http", url, "--token", "s1", "--json", "volcanoes")
	if code != 0 {
		t.Fatalf("query: %s", errs)
	}
	i := strings.Index(out, `"id": "`)
	if i < 0 {
		t.Fatalf("no hit: %s", out)
	}
	id := out[i+len(`"id": "`):]
	id = id[:strings.IndexByte(id, '"')]
	for _, tok := range []string{"s1", "s2", "s3"} {
		if code, _, errs := rcpRun("feedback", "--http", url, "--token", tok, "--signal", id+":injection"); code != 0 {
			t.Fatalf("feedback as %s: %s", tok, errs)
		}
	}
	if code, out, errs := rcpRun("feedback", "quarantine", "list", "--http", url, "--token", "s-ops"); code != 0 ||
		!strings.Contains(out, id) || !strings.Contains(out, "token:r1") || !strings.Contains(out, "injection") {
		t.Fatalf("quarantine list: %d %s %s", code, out, errs)
	}
	if code, _, errs := rcpRun("feedback", "quarantine", "list", "--http", url, "--token", "s1"); code != 1 || !strings.Contains(errs, "admin scope") {
		t.Fatalf("quarantine list without admin: %d %s", code, errs)
	}
	if code, out, errs := rcpRun("feedback", "quarantine", "lift", "--http", url, "--token", "s-ops", id, "nope"); code != 0 ||
		!strings.Contains(out, id+"\tlifted") || !strings.Contains(out, "nope\twas not quarantined") {
		t.Fatalf("quarantine lift: %d %s %s", code, out, errs)
	}
	if code, out, _ := rcpRun("feedback", "quarantine", "list", "--http", url, "--token", "s-ops"); code != 0 || !strings.Contains(out, "no unit is quarantined") {
		t.Fatalf("after the lift: %s", out)
	}
	if code, _, _ := rcpRun("feedback", "quarantine", "nope"); code != 2 {
		t.Fatalf("unknown subcommand: exit %d", code)
	}
}
