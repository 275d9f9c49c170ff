// Package buildinfo is the one version of rcpgo's binaries. rcpd serve's
// initialize (server.version), its gateway and MCP faces, the web console's
// header, `rcpd version` and `rcp version` all report Version(): the
// module version the Go toolchain embeds (a tag such as v1.2.3, or a
// pseudo-version naming the commit, "+dirty" when built from a modified
// checkout), or "(devel)" when the build has no version (go run, go test,
// -buildvcs=false) — with "+<revision>" when the VCS revision is known.
// Release builds may set it: go build -ldflags "-X
// github.com/rcpgo/rcpgo/internal/buildinfo.version=v1.2.3".
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version, when set at link time (-ldflags -X), wins over the module's.
var version string

// Info is what a version command prints.
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"` // commit time of Revision
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Version returns the version every face reports.
func Version() string { return Read().Version }

// Read returns the running binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version)
}

// fromBuild computes Info from the embedded build information and the
// link-time override.
func fromBuild(bi *debug.BuildInfo, override string) Info {
	info := Info{Version: "(devel)", Go: runtime.Version()}
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case override != "":
		info.Version = override
	case info.Version == "(devel)" && info.Revision != "":
		// A pseudo-version names its commit; (devel) does not, so say which.
		info.Version += "+" + short(info.Revision)
		if info.Modified {
			info.Version += ".dirty"
		}
	}
	return info
}

func short(rev string) string { return rev[:min(12, len(rev))] }

// String renders info on one line, the version first and alone before the
// first space: "v1.2.3 (rev 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.26".
func (i Info) String() string {
	var extra []string
	if i.Revision != "" && !strings.Contains(i.Version, short(i.Revision)) {
		extra = append(extra, "rev "+short(i.Revision))
	}
	if i.Time != "" {
		extra = append(extra, i.Time)
	}
	if i.Modified && !strings.Contains(i.Version, "dirty") {
		extra = append(extra, "modified")
	}
	s := i.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return fmt.Sprintf("%s %s", s, i.Go)
}
