package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestArchitectureDocIsTrue: docs/architecture.md names only what exists —
// every folder of its Rooms map (which lists every package of a part of the
// tree whose rooms it lists), every repository path, package member
// (`pkg.Name`, `pkg.Type.Member`), Go identifier or wire name (a json tag)
// and test it puts in backquotes, every repository path it names in prose —
// and every reference to one of its headings, from any Go or Markdown file
// (`docs/architecture.md, "Heading"`, or `see "Heading"` inside it), names
// a heading it has. Go code that cites a section of another page of docs/
// (`docs/rcpd.md, "Title"`) must name a heading or an emphasised run-in
// title that page has; a cited title may be the start of one.
func TestArchitectureDocIsTrue(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	code := readCode(t, root)
	rooms := roomPaths(doc)
	for _, p := range rooms {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || !fi.IsDir() {
			t.Errorf("Rooms names %s/, which is not a folder of the repository", p)
		}
	}
	for _, p := range code.unlisted(rooms) {
		t.Errorf("Rooms leaves out package %s/, though it lists others beside it", p)
	}
	prose := withoutFences(doc)
	for _, m := range backquoted.FindAllStringSubmatch(prose, -1) {
		if why := code.check(root, m[1]); why != "" {
			t.Errorf("docs/architecture.md names `%s`: %s", m[1], why)
		}
	}
	for _, m := range prosePath.FindAllStringSubmatch(backquoted.ReplaceAllString(prose, ""), -1) {
		if !exists(root, m[1]) {
			t.Errorf("docs/architecture.md names %s, which is not in the repository", m[1])
		}
	}
	headings := map[string][]string{}
	headingsOf := func(page string) []string {
		if h, ok := headings[page]; ok {
			return h
		}
		b, err := os.ReadFile(filepath.Join(root, "docs", page+".md"))
		if err == nil {
			headings[page] = docHeadings(string(b), page != "architecture")
		} else {
			headings[page] = nil
		}
		return headings[page]
	}
	for _, m := range seeHeading.FindAllStringSubmatch(strings.Join(strings.Fields(prose), " "), -1) {
		if !hasHeading(headingsOf("architecture"), m[1]) {
			t.Errorf("docs/architecture.md says see %q, a heading it does not have", m[1])
		}
	}
	err = walkSources(root, func(rel, text string) {
		if rel == "bench/docs_test.go" || rel == "internal/repocheck/architecture_test.go" {
			return // the checks' own examples
		}
		isGo := strings.HasSuffix(rel, ".go")
		flat := strings.Join(strings.Fields(commentMark.ReplaceAllString(text, "")), " ")
		for _, m := range headingRef.FindAllStringSubmatch(flat, -1) {
			page, title := m[1], m[2]
			if page != "architecture" && !isGo {
				continue // Markdown's references to other pages: their own tests
			}
			if !hasHeading(headingsOf(page), title) {
				t.Errorf("%s cites docs/%s.md, %q, a heading it does not have", rel, page, title)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	backquoted = regexp.MustCompile("`([^`\n]+)`")
	// prosePath is a repository path outside backquotes.
	prosePath  = regexp.MustCompile(`(?:^|[\s(])((?:engine|internal|cmd|mcpbridge|federation|conformance|eval|console|bench|examples|docs)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`)
	seeHeading = regexp.MustCompile(`\bsee "([^"]+)"`)
	headingRef = regexp.MustCompile("docs/([a-z0-9_-]+)\\.md`?(?:,\\s*|\\s*\\(\\s*|\\s+)\"([^\"]+)\"")
	pathLike   = regexp.MustCompile(`^[A-Za-z0-9_.*-]+(/[A-Za-z0-9_.*-]+)*/?$`)
	member     = regexp.MustCompile(`^([a-z][a-z0-9]*|[A-Z]\w*)\.([A-Z]\w*|[a-z]\w*)(?:\.(\w+))?(?:\(\))?$`)
	testName   = regexp.MustCompile(`^(?:Test|Fuzz|Benchmark)\w*\*?$`)
	camelIdent = regexp.MustCompile(`^(?:[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]?\w*)$`)
)

// commentMark is the mark of a Go line comment, dropped so that a cited
// title may wrap.
var commentMark = regexp.MustCompile(`(?m)^\s*//\s?`)

// emphasis is an emphasised span, the run-in title of a paragraph
// (**What is checked when.** …).
var emphasis = regexp.MustCompile(`\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*`)

// docHeadings are the headings of a Markdown page, whitespace collapsed;
// with runIn, its emphasised run-in titles too (what rcpd.md cites).
func docHeadings(doc string, runIn bool) []string {
	var out []string
	for _, l := range strings.Split(withoutFences(doc), "\n") {
		if strings.HasPrefix(l, "#") {
			out = append(out, strings.Join(strings.Fields(strings.TrimLeft(l, "#")), " "))
		} else if runIn {
			for _, m := range emphasis.FindAllStringSubmatch(l, -1) {
				out = append(out, strings.Join(strings.Fields(m[1]+m[2]), " "))
			}
		}
	}
	return out
}

func hasHeading(headings []string, title string) bool {
	for _, h := range headings {
		if strings.HasPrefix(h, title) {
			return true
		}
	}
	return false
}

// roomPaths are the folders the Rooms map names: a name at column 0 is a
// path from the root, one indented by 2 (or 4) spaces is below the
// nearest name above it with less indentation; deeper lines continue a
// description.
func roomPaths(doc string) []string {
	_, rest, _ := strings.Cut(doc, "\n## Rooms\n")
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, _ := strings.Cut(rest, "```")
	var out []string
	parents := make([]string, 3)
	for _, l := range strings.Split(block, "\n") {
		name := strings.TrimLeft(l, " ")
		indent := len(l) - len(name)
		if name == "" || indent%2 != 0 || indent > 4 {
			continue
		}
		name = strings.TrimSuffix(strings.Fields(name)[0], "/")
		p := name
		if level := indent / 2; level > 0 {
			p = parents[level-1] + "/" + name
		}
		parents[indent/2] = p
		out = append(out, p)
	}
	return out
}

// unlisted are the package folders the Rooms map leaves out where it
// lists the rooms of their part of the tree: a package must be listed when
// the nearest listed folder above it lists some of the folders below it
// (engine/ lists its packages, so all of them; engine/embed/ lists none,
// its providers are in its description).
func (c *codeIndex) unlisted(rooms []string) []string {
	listed := map[string]bool{}
	for _, r := range rooms {
		listed[r] = true
	}
	parentOfListed := map[string]bool{}
	for _, r := range rooms {
		for d := filepath.ToSlash(filepath.Dir(r)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if listed[d] {
				parentOfListed[d] = true
				break
			}
		}
	}
	var out []string
	for dir := range c.decls {
		if listed[dir] {
			continue
		}
		for d := filepath.ToSlash(filepath.Dir(dir)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if listed[d] {
				if parentOfListed[d] {
					out = append(out, dir)
				}
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// withoutFences is doc without its fenced blocks.
func withoutFences(doc string) string {
	var b strings.Builder
	fence := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// exists reports whether the repository has path (a glob).
func exists(root, path string) bool {
	m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(path, "/"))))
	return len(m) > 0
}

// codeIndex is what the repository's Go code declares.
type codeIndex struct {
	pkgDirs map[string][]string            // package name → folders
	decls   map[string]map[string]bool     // folder → top-level names
	members map[string]map[string][]string // folder → type → methods and fields
	idents  map[string]bool                // every declared name and member
	wire    map[string]bool                // json tag names
	tests   []string                       // Test, Fuzz and Benchmark functions
}

func readCode(t *testing.T, root string) *codeIndex {
	t.Helper()
	c := &codeIndex{pkgDirs: map[string][]string{}, decls: map[string]map[string]bool{},
		members: map[string]map[string][]string{}, idents: map[string]bool{}, wire: map[string]bool{}}
	fset := token.NewFileSet()
	err := walkSources(root, func(rel, text string) {
		if !strings.HasSuffix(rel, ".go") {
			return
		}
		f, err := parser.ParseFile(fset, rel, text, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if strings.HasSuffix(rel, "_test.go") {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && testName.MatchString(fd.Name.Name) {
					c.tests = append(c.tests, fd.Name.Name)
				}
			}
			return
		}
		if !contains(c.pkgDirs[f.Name.Name], dir) {
			c.pkgDirs[f.Name.Name] = append(c.pkgDirs[f.Name.Name], dir)
		}
		c.declare(dir, f)
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// declare indexes the declarations of file f of folder dir.
func (c *codeIndex) declare(dir string, f *ast.File) {
	if c.decls[dir] == nil {
		c.decls[dir], c.members[dir] = map[string]bool{}, map[string][]string{}
	}
	top := func(name string) { c.decls[dir][name], c.idents[name] = true, true }
	add := func(typ, name string) {
		c.members[dir][typ] = append(c.members[dir][typ], name)
		c.idents[name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				top(d.Name.Name)
				continue
			}
			typ := d.Recv.List[0].Type
			for {
				switch x := typ.(type) {
				case *ast.StarExpr:
					typ = x.X
					continue
				case *ast.IndexExpr:
					typ = x.X
					continue
				case *ast.IndexListExpr:
					typ = x.X
					continue
				}
				break
			}
			if id, ok := typ.(*ast.Ident); ok {
				add(id.Name, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					top(s.Name.Name)
					c.typeMembers(s.Name.Name, s.Type, add)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top(n.Name)
					}
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool { // wire names, in any struct
		if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
			tag, _ := strconv.Unquote(fld.Tag.Value)
			if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ","); name != "" && name != "-" {
				c.wire[name] = true
			}
		}
		return true
	})
}

// typeMembers declares the fields of a struct type and the methods of an
// interface type.
func (c *codeIndex) typeMembers(typ string, expr ast.Expr, add func(typ, name string)) {
	var fields *ast.FieldList
	switch x := expr.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, fld := range fields.List {
		for _, n := range fld.Names {
			add(typ, n.Name)
		}
		if len(fld.Names) == 0 { // embedded
			e := fld.Type
			if s, ok := e.(*ast.StarExpr); ok {
				e = s.X
			}
			switch e := e.(type) {
			case *ast.Ident:
				add(typ, e.Name)
			case *ast.SelectorExpr:
				add(typ, e.Sel.Name)
			}
		}
		if st, ok := fld.Type.(*ast.StructType); ok { // a nested struct's fields
			c.typeMembers(typ, st, add)
		}
	}
}

// check returns why the backquoted text s names nothing in the repository
// ("" when it does, or when s is not a name: a command, a value, a file
// rcpd writes).
func (c *codeIndex) check(root, s string) string {
	switch {
	case strings.Contains(s, "/") && pathLike.MatchString(s):
		first, _, _ := strings.Cut(s, "/")
		if _, err := os.Stat(filepath.Join(root, first)); err != nil {
			return "" // not a repository path (x-rcpgo/get, DIR/dense/…)
		}
		if !exists(root, s) {
			return "no such file or folder"
		}
	case testName.MatchString(s):
		prefix, wild := strings.CutSuffix(s, "*")
		for _, name := range c.tests {
			if name == s || wild && strings.HasPrefix(name, prefix) {
				return ""
			}
		}
		return "no such test"
	case member.MatchString(s):
		m := member.FindStringSubmatch(s)
		if dirs, ok := c.pkgDirs[m[1]]; ok && m[2][0] >= 'A' && m[2][0] <= 'Z' {
			for _, dir := range dirs {
				if !c.decls[dir][m[2]] {
					continue
				}
				if m[3] == "" || contains(c.members[dir][m[2]], m[3]) {
					return ""
				}
			}
			return "no such declaration in package " + m[1]
		}
		if m[1][0] >= 'A' && m[1][0] <= 'Z' && m[3] == "" { // Type.member
			for dir := range c.decls {
				if c.decls[dir][m[1]] && contains(c.members[dir][m[1]], m[2]) {
					return ""
				}
			}
			return "no type with that member"
		}
	case camelIdent.MatchString(s):
		if !c.idents[s] && !c.wire[s] {
			return "no Go declaration or wire name"
		}
	}
	return ""
}

// walkSources calls fn with every Go and Markdown file of the repository
// (its path from root and its text), leaving out dot folders and testdata.
func walkSources(root string, fn func(rel, text string)) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(filepath.ToSlash(rel), string(b))
		return nil
	})
}
