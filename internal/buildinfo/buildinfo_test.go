package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	rev := "0123456789abcdef0123"
	for _, tc := range []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		want     string
	}{
		{"no build info", nil, "", "(devel)"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "(devel)"},
		{"tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("vcs.revision", rev)}, "", "v1.2.3"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201100000-0123456789ab+dirty"}, Settings: vcs("vcs.revision", rev, "vcs.modified", "true")}, "", "v0.0.0-20261201100000-0123456789ab+dirty"},
		{"devel with a revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", rev, "vcs.modified", "true")}, "", "(devel)+0123456789ab.dirty"},
		{"link-time override", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v9.9.9", "v9.9.9"},
	} {
		if got := fromBuild(tc.bi, tc.override).Version; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if Version() != Read().Version || Read().Go != runtime.Version() {
		t.Fatalf("Version %q, Read %+v", Version(), Read())
	}
}

func TestString(t *testing.T) {
	s := Info{Version: "v1.2.3", Revision: "0123456789abcdef", Time: "2026-12-01T10:00:00Z", Modified: true, Go: "go1.26"}.String()
	if s != "v1.2.3 (rev 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.26" {
		t.Fatal(s)
	}
	if s := (Info{Version: "(devel)+0123456789ab.dirty", Revision: "0123456789abcdef", Modified: true, Go: "go1.26"}).String(); s != "(devel)+0123456789ab.dirty go1.26" {
		t.Fatal(s)
	}
	if s := (Info{Version: "(devel)", Go: "go1.26"}).String(); !strings.HasPrefix(s, "(devel) go1.26") {
		t.Fatal(s)
	}
}
