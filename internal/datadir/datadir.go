// Package datadir names rcpd's default data directory, which rcpd serve
// and rcpd mcp share: an MCP client configured with plain `rcpd mcp` serves
// the index `rcp index add` fills through a spawned `rcpd serve --stdio`.
package datadir

import (
	"os"
	"path/filepath"
)

// Default is $RCPD_DATA, else $XDG_DATA_HOME/rcpd, else
// ~/.local/share/rcpd (rcpd-data in the working directory without a home).
func Default() string {
	if d := os.Getenv("RCPD_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "rcpd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "rcpd")
	}
	return "rcpd-data"
}
