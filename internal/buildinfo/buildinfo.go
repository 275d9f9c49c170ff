// Package buildinfo describes the running binary from the build
// information the Go toolchain embeds (module version, VCS revision), for
// the `rcp version` and `rcpd version` commands.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a version command prints.
type Info struct {
	Version  string `json:"version"` // vX.Y.Z when installed from a tag, "(devel)" from a checkout
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"` // commit time of Revision
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Read returns the running binary's Info; override, when not empty, is a
// version set at link time (-ldflags -X) and wins over the module's.
func Read(override string) Info {
	info := Info{Version: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
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
	if override != "" {
		info.Version = override
	}
	return info
}

// String renders info on one line: "v1.2.3 (rev 0123456789ab, 2026-12-01T10:00:00Z, modified) go1.26".
func (i Info) String() string {
	var extra []string
	if i.Revision != "" {
		extra = append(extra, "rev "+i.Revision[:min(12, len(i.Revision))])
	}
	if i.Time != "" {
		extra = append(extra, i.Time)
	}
	if i.Modified {
		extra = append(extra, "modified")
	}
	s := i.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return fmt.Sprintf("%s %s", s, i.Go)
}
