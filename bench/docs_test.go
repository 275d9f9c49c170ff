package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/internal/testutil/shared"
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

// TestBenchmarkReferencesResolve: every place in the repository that cites
// a section of docs/benchmarks.md — `docs/benchmarks.md, "Title"`,
// `docs/benchmarks.md ("Title"`, `docs/benchmarks.md "Title"` or
// `docs/benchmarks.md#anchor`, in Markdown or in Go comments — names a
// heading the document has (the title may be the start of the heading), and
// the document stays a report of at most 600 lines (its history is in git).
func TestBenchmarkReferencesResolve(t *testing.T) {
	root := shared.Root(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc), "\n"); n > 600 {
		t.Errorf("docs/benchmarks.md has %d lines; it is a report of current figures (≤ 600), the lab notes are in git", n)
	}
	headings, anchors := benchmarkHeadings(string(doc))
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); (ext != ".go" && ext != ".md") || strings.HasSuffix(path, filepath.Join("bench", "docs_test.go")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, p := range unresolvedBenchmarkRefs(string(b), headings, anchors) {
			t.Errorf("%s: %s", rel, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	benchTitleRef  = regexp.MustCompile("benchmarks\\.md`?(?:,\\s*|\\s*\\(\\s*|\\s+)\"([^\"]+)\"")
	benchAnchorRef = regexp.MustCompile(`benchmarks\.md#([A-Za-z0-9_-]+)`)
	commentMark    = regexp.MustCompile(`(?m)^\s*//\s?`)
	anchorDrop     = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// benchmarkHeadings returns the headings of doc (whitespace collapsed) and
// their GitHub anchors.
func benchmarkHeadings(doc string) (headings []string, anchors map[string]bool) {
	anchors = map[string]bool{}
	fence := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.Join(strings.Fields(strings.TrimLeft(l, "#")), " ")
		headings = append(headings, h)
		anchors[strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
	}
	return headings, anchors
}

// unresolvedBenchmarkRefs lists the references in text that name no
// heading: comment markers are dropped and lines joined, so a title may
// wrap.
func unresolvedBenchmarkRefs(text string, headings []string, anchors map[string]bool) []string {
	flat := strings.Join(strings.Fields(commentMark.ReplaceAllString(text, "")), " ")
	var out []string
	for _, m := range benchTitleRef.FindAllStringSubmatch(flat, -1) {
		found := false
		for _, h := range headings {
			found = found || strings.HasPrefix(h, m[1])
		}
		if !found {
			out = append(out, "cites docs/benchmarks.md, \""+m[1]+"\", which has no such heading")
		}
	}
	for _, m := range benchAnchorRef.FindAllStringSubmatch(flat, -1) {
		if !anchors[m[1]] {
			out = append(out, "links docs/benchmarks.md#"+m[1]+", which has no such heading")
		}
	}
	return out
}
