package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestReadAndString(t *testing.T) {
	i := Read("")
	if i.Version == "" || i.Go != runtime.Version() {
		t.Fatalf("%+v", i)
	}
	if got := Read("v9.9.9").Version; got != "v9.9.9" {
		t.Fatalf("override: %s", got)
	}
	s := Info{Version: "v1.2.3", Revision: "0123456789abcdef", Time: "2026-12-01T10:00:00Z", Modified: true, Go: "go1.26"}.String()
	if s != "v1.2.3 (rev 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.26" {
		t.Fatal(s)
	}
	if s := (Info{Version: "(devel)", Go: "go1.26"}).String(); !strings.HasPrefix(s, "(devel) go1.26") {
		t.Fatal(s)
	}
}
