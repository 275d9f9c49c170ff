package repocheck

import (
	"strings"
	"testing"
	"time"
)

// plotting are the modules that draw charts (gonum/plot and what it pulls
// in: LaTeX, PDF, fonts, rasterising).
var plotting = []string{
	"gonum.org/v1/plot", "codeberg.org/go-latex/latex", "codeberg.org/go-pdf/fpdf", "codeberg.org/go-fonts/liberation",
	"git.sr.ht/~sbinet/gg", "github.com/ajstarks/svgo", "github.com/golang/freetype", "golang.org/x/image",
}

// modulesOf returns the modules providing the packages a command links.
func modulesOf(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out := goCmd(t, repoRoot(t), time.Minute, nil, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", pkg)
	mods := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		mods[m] = true
	}
	return mods
}

// TestChartsOnlyInTheCLI: rcpd links no plotting library — the web console
// draws eval charts in the page — while rcp, which writes chart files, does.
func TestChartsOnlyInTheCLI(t *testing.T) {
	rcpd := modulesOf(t, "github.com/rcpgo/rcpgo/cmd/rcpd")
	for _, m := range plotting {
		if rcpd[m] {
			t.Errorf("rcpd links %s", m)
		}
	}
	if rcp := modulesOf(t, "github.com/rcpgo/rcpgo/cmd/rcp"); !rcp["gonum.org/v1/plot"] {
		t.Error("rcp does not link gonum.org/v1/plot: the list of plotting modules no longer says what draws charts")
	}
}
