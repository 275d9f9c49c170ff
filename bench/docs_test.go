package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/shared"
)

// Issue 16 finding 11: every figure in the README's benchmark table and in
// docs/benchmarks.md comes with the command that produced it. In the
// README each row carries a footnote mark (¹, ², …) whose numbered item
// quotes a command; in docs/benchmarks.md every section (##) holding a
// table of figures holds a ```sh block.
func TestBenchmarkFiguresHaveCommands(t *testing.T) {
	root := shared.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range readmeFiguresWithoutCommand(string(readme)) {
		t.Errorf("README.md, Benchmarks: %s", p)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sectionsWithoutCommand(string(doc)) {
		t.Errorf("docs/benchmarks.md: section %q has figures but no ```sh command", p)
	}
}

var (
	separatorRow = regexp.MustCompile(`^\|[-:| ]+\|$`)
	digit        = regexp.MustCompile(`[0-9]`)
	footnoteMark = map[string]string{"¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8", "⁹": "9"}
)

// figureRows returns the body rows of the Markdown tables in text that hold
// a digit.
func figureRows(text string) []string {
	var rows []string
	header := true
	for _, l := range strings.Split(text, "\n") {
		switch {
		case !strings.HasPrefix(l, "|"):
			header = true
		case separatorRow.MatchString(l):
			header = false
		case !header && digit.MatchString(l):
			rows = append(rows, l)
		}
	}
	return rows
}

// readmeFiguresWithoutCommand checks the README's "## Benchmarks" section.
func readmeFiguresWithoutCommand(readme string) []string {
	sec := section(readme, "## Benchmarks")
	if sec == "" {
		return []string{"no Benchmarks section"}
	}
	var problems []string
	for _, row := range figureRows(sec) {
		cell := strings.TrimSpace(strings.TrimPrefix(row, "|"))
		mark := ""
		for m, n := range footnoteMark {
			if strings.HasPrefix(cell, m) {
				mark = n
			}
		}
		if mark == "" {
			problems = append(problems, "row without a footnote to its command: "+row)
			continue
		}
		item := regexp.MustCompile(`(?m)^` + mark + "\\. .*`[^`]+`")
		if !item.MatchString(sec) {
			problems = append(problems, "footnote "+mark+" quotes no command")
		}
	}
	return problems
}

// sectionsWithoutCommand names the ## sections of doc with figures and no
// sh block.
func sectionsWithoutCommand(doc string) []string {
	var out []string
	for _, sec := range strings.Split(doc, "\n## ")[1:] {
		title, _, _ := strings.Cut(sec, "\n")
		if len(figureRows(sec)) > 0 && !strings.Contains(sec, "```sh") {
			out = append(out, title)
		}
	}
	return out
}

// section returns the text from the heading to the next heading of its
// level.
func section(text, heading string) string {
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := text[i+1+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
